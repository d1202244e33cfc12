package host

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

type runParams struct {
	AgentID      string          `json:"agentId"`
	Input        string          `json:"input"`
	SessionLevel string          `json:"sessionLevel"`
	Origin       string          `json:"origin"`  // the tab's origin, for remembered page-write answers
	Context      json.RawMessage `json:"context"` // echoed in every browser-call of the run
}

// event is a progress frame: the request's id and an event name.
type event struct {
	ID    json.RawMessage `json:"id"`
	Event string          `json:"event"`
	Data  any             `json:"data"`
}

func handleRunAgent(ctx context.Context, s *server, req *request) (any, error) {
	if s.opts.Runtime == nil {
		return nil, mediator.Errorf(mediator.CodeInternal, "this host has no WebAssembly runtime")
	}
	var p runParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if len(p.Context) > 0 && (p.Context[0] != '{' || len(p.Context) > 4096) {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "context must be a JSON object of at most 4 KiB")
	}
	if _, err := mediator.ParseLevel(p.SessionLevel); err != nil {
		return nil, err
	}
	rec, module, err := s.opts.Store.AgentModule(ctx, p.AgentID)
	if err != nil {
		return nil, fmt.Errorf("agent[%s] run: %w", p.AgentID, err)
	}
	res, err := s.opts.Runtime.Run(ctx, wasmhost.RunSpec{
		Agent: rec, Module: module, Input: []byte(p.Input), SessionLevel: p.SessionLevel, PageOrigin: p.Origin,
		Authorizer: s.opts.Authorizer,
		Browser:    &Browser{peer: &s.peer, agentID: p.AgentID, context: p.Context, timeout: DefaultBrowserTimeout},
		Fetch: func(ctx context.Context, r netproxy.Request) (*netproxy.Response, error) {
			return s.fetch.Fetch(ctx, agentfetch.Request{AgentID: p.AgentID, SessionLevel: p.SessionLevel, Request: r})
		},
		LogDenial: s.recordDenial,
		Events: func(e wasmhost.Event) {
			var data any = map[string]string{"text": e.Text}
			if e.Kind == "denial" {
				data = e.Denial
			}
			_ = s.write(req.ID, event{ID: req.ID, Event: e.Kind, Data: data})
		},
	})
	if err != nil {
		return nil, fmt.Errorf("agent[%s] run: %w", p.AgentID, err)
	}
	return res, nil
}
