package runs

import (
	"context"
	"fmt"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

// Deps are what every run of one host process, viewer or command shares.
type Deps struct {
	Store   *store.Store
	Runtime *wasmhost.Runtime
	// Authorizer decides every call; the policy. When it can take the
	// run's audit barrier (mediator.BarrierAuthorizer), a run's local-only
	// records may trail its calls and the run waits for them before it
	// reports; otherwise every record is durable before its call runs.
	Authorizer mediator.Authorizer
	// Fetch performs the run's fetches; nil answers them network_disabled.
	Fetch *agentfetch.Service
	// LogDenial records what the runtime refuses itself (link time, the
	// workspace, a run refused as a whole).
	LogDenial func(ctx context.Context, d mediator.Denial)
	// Tools reaches the person's MCP servers (the core's); nil answers a
	// module's mcp_call with tool_not_allowed.
	Tools wasmhost.Tools
}

// Request is one run: who asks, for what, and where its output goes.
type Request struct {
	AgentID string
	Input   string
	// SessionID and Level name the run's session (store.OpenRun): the
	// named one at its level or a lower one, or, with no id, a session of
	// the run's own that ends with it.
	SessionID, Level string
	// Session, when set, is a session the caller already opened and keeps
	// open (a workflow's tasks share one); SessionID and Level are unused.
	Session *store.Run
	// Module is the module's bytes when the caller has them (nmhost run
	// reads a file); otherwise the store's are read, or none when the
	// runtime has the module compiled.
	Module []byte
	// PageOrigin is the origin of the document the run is bound to.
	PageOrigin string
	// Browser performs page, clipboard and notification calls; nil
	// answers them no_browser.
	Browser wasmhost.Browser
	// Events receives output and denials as they happen.
	Events func(wasmhost.Event)
}

// Outcome is a run's result and its session.
type Outcome struct {
	wasmhost.Result
	SessionID string `json:"sessionId"`
}

// Run runs r. A run that could not start (no such agent, a Python agent,
// a session it may not have) is an error with its code; a run that ran is
// an Outcome whatever its status, reported only once every audit record
// of it is on disk.
func (d Deps) Run(ctx context.Context, r Request) (Outcome, error) {
	if d.Runtime == nil {
		return Outcome{}, mediator.Errorf(mediator.CodeInternal, "no WebAssembly runtime")
	}
	rec, module, err := d.agent(ctx, r)
	if err != nil {
		return Outcome{}, fmt.Errorf("agent[%s] run: %w", mediator.Truncate(r.AgentID, 64), err)
	}
	in := r.Session
	if in == nil {
		opened, err := d.Store.OpenRun(ctx, r.SessionID, r.Level)
		if err != nil {
			return Outcome{}, err
		}
		defer opened.Close()
		in = &opened
	}
	bar, auth := d.Barrier(rec)
	events := r.Events
	var out *outputBatcher
	if events != nil {
		out = newOutputBatcher(events)
		events = out.event
	}
	spec := wasmhost.RunSpec{
		Agent: rec, Module: module, Input: []byte(r.Input),
		SessionID: in.Session, SessionLevel: in.Level, Workspace: in.Workspace, Memory: d.Store, Tools: d.Tools,
		PageOrigin: r.PageOrigin, Browser: r.Browser,
		Authorizer: auth, LogDenial: d.LogDenial, Events: events,
	}
	if d.Fetch != nil {
		level, session := in.Level, in.Session
		spec.Fetch = func(ctx context.Context, req netproxy.Request) (*netproxy.Response, error) {
			return d.Fetch.Fetch(ctx, agentfetch.Request{AgentID: rec.Profile.AgentID, SessionLevel: level, SessionID: session, Request: req})
		}
	}
	spec.Programs = Programs(d.Store.Dir(), d.Fetch, rec.Profile.AgentID, in.Level, in.Session)
	res, err := d.Runtime.Run(ctx, spec)
	if out != nil {
		out.flush() // every output event before the reply
	}
	if berr := bar.Wait(context.WithoutCancel(ctx)); berr != nil {
		return Outcome{}, fmt.Errorf("agent[%s] run: %w", rec.Profile.AgentID, berr)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("agent[%s] run: %w", rec.Profile.AgentID, err)
	}
	return Outcome{Result: res, SessionID: in.Session}, nil
}

// Barrier is how a run of rec keeps its records: its audit barrier, and
// the Authorizer that decides the run's calls under it. The host's
// settings hold, and what the agent's profile asks on top (it can only
// ask for more). Run uses it, and so does a Python agent's run, whose
// code runs in the extension but whose calls are decided here one by one:
// the run waits on the barrier before it ends.
func (d Deps) Barrier(rec mediator.AgentRecord) (*mediator.AuditBarrier, mediator.Authorizer) {
	ra := d.Store.RunAudit()
	ra.Strict = ra.Strict || rec.Profile.Audit.Strict()
	ra.PerCall = ra.PerCall || rec.Profile.Audit.PerCall()
	bar := mediator.NewRunBarrier(ra)
	auth := d.Authorizer
	if ba, ok := auth.(mediator.BarrierAuthorizer); ok {
		auth = ba.WithBarrier(bar)
	}
	return bar, auth
}

// agent reads the agent's record and, unless the runtime has its module
// compiled already (found by the hash the record names), its module.
func (d Deps) agent(ctx context.Context, r Request) (mediator.AgentRecord, []byte, error) {
	var module []byte
	rec, err := d.Store.Agent(ctx, r.AgentID)
	if err == nil && r.Module == nil && !rec.Profile.IsPython() && !d.Runtime.Compiled(rec) {
		rec, module, err = d.Store.AgentModule(ctx, r.AgentID)
	}
	if err != nil {
		// The store's module read says why as run-agent always has (an
		// id that is not one is invalid_profile, a missing agent
		// unknown_agent).
		if _, _, merr := d.Store.AgentModule(ctx, r.AgentID); merr != nil {
			err = merr
		}
		return mediator.AgentRecord{}, nil, err
	}
	if rec.Profile.IsPython() {
		return mediator.AgentRecord{}, nil, mediator.Errorf(mediator.CodeWrongRuntime,
			"agent %q is a Python agent: it runs in the extension's sandbox (python-run), where Pyodide is", r.AgentID)
	}
	if r.Module != nil {
		module = r.Module
	}
	return rec, module, nil
}
