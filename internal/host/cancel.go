package host

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentgate/nmhost/mediator"
)

// A page of the extension that started a run can go away (the popup
// closes) while the run goes on, and with it any prompt the run waits on:
// a person could still answer it for a run nobody watches. cancel-request
// ends such a request: the extension sends it when the page that asked is
// gone, and the run ends as a cancelled one, its prompts withdrawn
// (prompt-cancel).

// cancellable are the request types cancel-request can end: those that
// run an agent's code or wait on a person.
var cancellable = map[string]bool{
	"run-agent":     true,
	"run-workflow":  true,
	"network-fetch": true,
	"agent-call":    true,
}

// errRequestCancelled is the cause a cancelled request's context carries:
// a run reports it as its end (timeout, "cancelled"), a prompt is withdrawn.
var errRequestCancelled = mediator.Errorf(mediator.CodeTimeout, "the run was cancelled: the page that started it went away")

// inflight are the cancellable requests in progress, by their id's JSON.
type inflight struct {
	mu sync.Mutex
	m  map[string]*inflightEntry
}

type inflightEntry struct{ cancel context.CancelCauseFunc }

// track makes ctx cancellable by cancel-request for req's id; done
// forgets it when the request is answered.
func (f *inflight) track(ctx context.Context, req *request) (context.Context, func()) {
	if req == nil || !cancellable[req.Type] {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	e := &inflightEntry{cancel: cancel}
	key := string(req.ID)
	f.mu.Lock()
	if f.m == nil {
		f.m = map[string]*inflightEntry{}
	}
	f.m[key] = e
	f.mu.Unlock()
	return ctx, func() {
		f.mu.Lock()
		if f.m[key] == e {
			delete(f.m, key)
		}
		f.mu.Unlock()
		cancel(nil)
	}
}

// handleCancelRequest ends the request in progress whose id is requestId
// (the same JSON value the request carried). Nothing in progress with
// that id is no error: it may have been answered meanwhile.
func handleCancelRequest(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if len(p.RequestID) == 0 {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "cancel-request needs requestId")
	}
	s.inflight.mu.Lock()
	e := s.inflight.m[string(p.RequestID)]
	s.inflight.mu.Unlock()
	if e != nil {
		e.cancel(errRequestCancelled)
	}
	return map[string]any{"cancelled": e != nil}, nil
}
