package host

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/agentgate/nmhost/internal/app/runs"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

type runParams struct {
	AgentID string `json:"agentId"`
	// SessionID is the session the run works in: its level (lowered by
	// SessionLevel, never raised) and its workspace. "" starts a fresh
	// session at medium, named in the result.
	SessionID    string          `json:"sessionId"`
	Input        string          `json:"input"`
	SessionLevel string          `json:"sessionLevel"`
	Origin       string          `json:"origin"`  // the origin of the document the run is bound to
	Context      json.RawMessage `json:"context"` // echoed in every browser-call of the run, with origin set
}

// bindContext returns the context every browser-call of a run carries: the
// extension's object (the tab and the id of the document it bound the run
// to) with "origin" set to the run's origin, the one prompts show and
// remembered answers are keyed to. The page refuses a call whose origin is
// not its own, so what the user approved and what gets touched are one
// origin whatever the extension put in its context. Without an origin any
// "origin" the context had is dropped: only the host sets it.
func bindContext(raw json.RawMessage, origin string) (json.RawMessage, error) {
	if len(raw) == 0 && origin == "" {
		return nil, nil
	}
	fields := map[string]json.RawMessage{}
	if len(raw) > 0 {
		if err := mediator.DecodeExact(raw, &fields); err != nil {
			return nil, &mediator.Error{Code: mediator.CodeBadRequest, Msg: "context must be a JSON object of at most 4 KiB", Err: err}
		}
	}
	delete(fields, "origin")
	if origin != "" {
		fields["origin"], _ = json.Marshal(origin)
	}
	return json.Marshal(fields)
}

// validOrigin accepts "" (a run bound to no page) or a serialized origin,
// scheme://host[:port] and nothing more. "null", the opaque origin, is
// refused: remembered answers keyed to it would hold for every sandboxed
// or data: page at once.
func validOrigin(origin string) error {
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || u.Scheme+"://"+u.Host != origin {
		return mediator.Errorf(mediator.CodeBadRequest, "origin must be a page origin such as https://example.com, not %q", clip(origin))
	}
	return nil
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
	p, bound, err := decodeRun(req)
	if err != nil {
		return nil, err
	}
	out, err := s.runDeps().Run(ctx, runs.Request{
		AgentID: p.AgentID, Input: p.Input, SessionID: p.SessionID, Level: p.SessionLevel, PageOrigin: p.Origin,
		Browser: &Browser{peer: &s.peer, agentID: p.AgentID, context: bound, timeout: DefaultBrowserTimeout},
		Events: func(e wasmhost.Event) {
			var data any = map[string]string{"text": e.Text}
			if e.Kind == "denial" {
				data = e.Denial
			}
			_ = s.write(req.ID, event{ID: req.ID, Event: e.Kind, Data: data})
		},
	})
	if err != nil {
		return nil, err
	}
	return runResult(out), nil
}

// runDeps is what every run this host starts shares: a module's run and
// a Python agent's run are built from the same.
func (s *server) runDeps() runs.Deps {
	return s.app.Runs(runs.Deps{Runtime: s.opts.Runtime, Authorizer: s.opts.Authorizer, Fetch: s.fetch, LogDenial: s.recordDenial})
}

// runResult is run-agent's reply: the run's result and its session.
type runResult = runs.Outcome

// decodeRun reads a run's parameters, exactly, and checks what both
// run-agent and python-run take: the context (an object of at most 4 KiB),
// the origin, the level. It returns the context the run's browser-calls
// carry, bound to the origin.
func decodeRun(req *request) (runParams, json.RawMessage, error) {
	var p runParams
	if err := req.decode(&p); err != nil {
		return p, nil, err
	}
	if len(p.Context) > 0 && (p.Context[0] != '{' || len(p.Context) > 4096) {
		return p, nil, mediator.Errorf(mediator.CodeBadRequest, "context must be a JSON object of at most 4 KiB")
	}
	if err := validOrigin(p.Origin); err != nil {
		return p, nil, err
	}
	bound, err := bindContext(p.Context, p.Origin)
	if err != nil {
		return p, nil, err
	}
	if _, err := mediator.ParseLevel(p.SessionLevel); err != nil {
		return p, nil, err
	}
	return p, bound, nil
}
