package host

import (
	"context"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
)

// The extension's sessions: list-sessions for the popup's picker and
// set-session to start one or change its level. Both go to the store
// PUT /api/sessions/:id/settings and nmhost session use, so a session is
// the same thing wherever it was made.

func handleListSessions(ctx context.Context, s *server, req *request) (any, error) {
	var p struct{}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	list, err := s.app.Sessions().ListSessions(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"sessions": list}, nil
}

// setSessionParams: sessionId "" starts a fresh session ("run-" and 16
// hex digits); level "" keeps a session's level, or is medium for a new
// one.
type setSessionParams struct {
	SessionID string `json:"sessionId"`
	Level     string `json:"level"`
}

// sessionReply is set-session's reply: the session and its settings.
type sessionReply struct {
	SessionID string                   `json:"sessionId"`
	Settings  mediator.SessionSettings `json:"settings"`
}

// handleSetSession creates a session or changes its level. Raising a
// level is the person's decision about the session, which is why it is
// here, in a request only the extension's own pages send, and never in a
// run's parameters.
func handleSetSession(ctx context.Context, s *server, req *request) (any, error) {
	var p setSessionParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if p.SessionID == "" {
		p.SessionID = app.NewSessionID()
	}
	set, err := s.app.SetSessionLevel(ctx, p.SessionID, p.Level)
	if err != nil {
		return nil, err
	}
	s.log.Info("session set", "session", mediator.Truncate(p.SessionID, 64), "level", set.PermissionLevel)
	return sessionReply{SessionID: p.SessionID, Settings: set}, nil
}
