package host

import (
	"context"

	"github.com/agentgate/nmhost/internal/app/selfcheck"
	"github.com/agentgate/nmhost/mediator"
)

// handlePreferenceDigest: the uses of the allow-and-log answers in force,
// per agent and operation (the options page's digest).
func handlePreferenceDigest(ctx context.Context, s *server, req *request) (any, error) {
	agentID, err := optionalAgent(req)
	if err != nil {
		return nil, err
	}
	d, err := s.app.Answers().AllowAndLogDigest(ctx, agentID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"digest": d}, nil
}

// handleCheckAgent runs `nmhost check AGENT` for the options page's
// self-test: the same corpus (internal/app/selfcheck), against a throwaway
// copy of this host's store, so nothing of the person's is written and
// only the check's loopback servers are dialled.
func handleCheckAgent(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		AgentID string `json:"agentId"`
		Level   string `json:"level"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if p.Level == "" {
		p.Level = mediator.LevelMedium
	}
	if _, err := mediator.ParseLevel(p.Level); err != nil {
		return nil, err
	}
	if _, err := s.app.Agents().Agent(ctx, p.AgentID); err != nil {
		return nil, err
	}
	return selfcheck.Run(ctx, s.app.Dir(), p.AgentID, p.Level)
}
