package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/frame"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
	"github.com/agentgate/nmhost/workflow"
)

// DefaultMaxInFlightBytes is Options.MaxInFlightBytes's default.
const DefaultMaxInFlightBytes = 32 << 20

// MemoryLimit is the soft memory limit host mode gives the Go runtime
// (debug.SetMemoryLimit): what the request and response budgets hold at
// most, with what decoding and encoding them costs, plus the runtime, the
// store and wazero. docs/protocol.md ("Limits") states the bound it keeps.
const MemoryLimit = 192 << 20

// ProtocolVersion is reported by "hello"; it changes only when a reply's
// shape changes incompatibly. 3: a prompt's answer must carry the digest
// of the prompt its window showed ("shown"; RATIONALE.md).
const ProtocolVersion = 3

// Options configures Serve. App is required (Authorizer has a default,
// the core's policy); the rest have safe zero values.
type Options struct {
	// App is the application core: the store, the fetcher, the admin
	// rules and the operations whose rules every front end shares.
	App *app.App
	// Authorizer decides every agent operation after its grant and ACL
	// checks. Default: the core's mediator.Policy, asking the user through
	// the extension's prompt (safety classes, remembered answers, audit).
	Authorizer mediator.Authorizer
	// Runtime runs agent modules for run-agent; nil refuses run-agent.
	Runtime *wasmhost.Runtime
	// Caller is who launched the host.
	Caller Caller
	// OriginAllowed admits the caller. False (the default) answers every
	// request with origin_not_allowed and does nothing else.
	OriginAllowed bool
	// Log receives diagnostics; nil discards them. Never stdout.
	Log *slog.Logger
	// MaxInFlightBytes bounds the bytes of the requests being handled at
	// once; reading pauses past it (one frame of up to frame.MaxInbound may
	// wait beside them). Default 32 MiB: with fetch bodies bounded by the
	// fetcher's own budget, the host's peak memory stays bounded whatever
	// mix of requests arrives (see docs/protocol.md, "Limits").
	MaxInFlightBytes int64
	// MaxInFlight bounds concurrent requests; reading pauses past it (a
	// long request beyond the places it may take waits in a queue of this
	// size first: see dispatch.go).
	// Default 64: enough to keep fetches overlapping, small enough that a
	// flood of frames cannot grow memory without bound.
	MaxInFlight int
	// Version is reported by "hello".
	Version string
	// Workflow is the data dir's workflow settings; nil: all on.
	Workflow *workflow.Settings
}

type handlerFunc func(ctx context.Context, s *server, req *request) (any, error)

// handlers routes each request type to one function. The names are the
// protocol's (docs/protocol.md), which the extension relies on.
var handlers = map[string]handlerFunc{
	"hello":           handleHello,
	"install-agent":   handleInstallAgent,
	"getAgentInfo":    handleGetAgentInfo,
	"list-agents":     handleListAgents,
	"uninstall-agent": handleUninstallAgent,
	"grant":           handleGrant,
	"revoke":          handleRevoke,
	"network-fetch":   handleNetworkFetch,
	"list-denials":    handleListDenials,
	"log-denial":      handleLogDenial,

	"list-preferences":  handleListPreferences,
	"revoke-preference": handleRevokePreference,
	"preference-digest": handlePreferenceDigest,
	"check-agent":       handleCheckAgent,
	"list-audit":        handleListAudit,
	"run-agent":         handleRunAgent,
	"run-workflow":      handleRunWorkflow,
	"audit-checkpoint":  handleAuditCheckpoint,
	"audit-consistency": handleAuditConsistency,
	"python-run":        handlePythonRun,
	"agent-call":        handleAgentCall,
	"python-run-end":    handlePythonRunEnd,
	"cancel-request":    handleCancelRequest,
	"list-sessions":     handleListSessions,
	"set-session":       handleSetSession,
	"managed-policy":    handleManagedPolicy,
}

type server struct {
	opts  Options
	app   *app.App
	out   *frame.Writer
	log   *slog.Logger
	fetch *agentfetch.Service
	peer  peer
	// broken is closed when stdout fails: the browser is gone.
	broken     chan struct{}
	brokenOnce sync.Once
	// hello is hello's reply data, encoded by the first hello.
	helloOnce sync.Once
	hello     encoded
	// inputEnded is closed when stdin ends: nothing can answer a
	// host-initiated request any more, so waiting for one is pointless.
	inputEnded chan struct{}
	// inflight are the requests cancel-request may end (cancel.go).
	inflight inflight
}

type request struct {
	ID   json.RawMessage
	Type string
	Raw  []byte
}

type reply struct {
	ID      json.RawMessage `json:"id"`
	Success bool            `json:"success"`
	Data    any             `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
	Code    mediator.Code   `json:"code,omitempty"`
}

var nullID = json.RawMessage("null")

// Serve answers framed requests from r on w until r ends or ctx ends, then
// waits for requests still running (cancelled, when ctx ended) to answer.
// When ctx ends it returns without waiting for a read of r in progress:
// the caller must not read r afterwards, and what that read brings is
// dropped.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts Options) error {
	if opts.App == nil {
		return errors.New("host: Serve needs the App")
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	if opts.MaxInFlightBytes <= 0 {
		opts.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{opts: opts, app: opts.App, out: frame.NewWriter(w), log: log, broken: make(chan struct{}), inputEnded: make(chan struct{})}
	s.peer.s = s
	if opts.Authorizer == nil {
		s.opts.Authorizer = s.app.Policy(mediator.PolicyOptions{Prompter: prompter{&s.peer}})
	}
	fetch, err := s.app.FetchService(s.opts.Authorizer, s.recordDenial)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	s.fetch = fetch
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Questions other processes have nobody to ask (the MCP gateway)
	// are asked here, in the extension's prompt window.
	go s.app.ServeRelayedPrompts(ctx, s.peer.instance(), prompter{&s.peer})
	go func() {
		select {
		case <-s.broken:
			cancel()
		case <-ctx.Done():
		}
	}()

	// Frames are read on their own goroutine and handled by a bounded
	// pool of workers (see dispatch.go), so a long fetch does not hold up
	// a quick grant; replies carry the request id.
	d := newDispatcher(s, opts.MaxInFlight, opts.MaxInFlightBytes)
	defer d.wait()
	defer close(s.inputEnded) // runs before d.wait: waiting handlers give up first
	in := &intake{r: frame.NewReader(r), s: s, dispatch: d.dispatch, done: make(chan struct{})}
	go in.loop(ctx)
	select {
	case <-in.done:
	case <-ctx.Done():
		// A read in progress cannot be interrupted (stdin is read
		// blocking: see intake). The host stops taking requests now; what
		// the reading goroutine brings after this is dropped.
		in.stop()
	}
	return nil
}

// handle answers one request whose envelope parseRequest read (req and
// err are its results).
func (s *server) handle(ctx context.Context, req *request, err error) {
	id := nullID
	if req != nil {
		id = req.ID
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("handler panic", "panic", p, "stack", string(debug.Stack()))
			s.send(reply{ID: id, Error: "the host failed while handling this request", Code: mediator.CodeInternal})
		}
	}()
	if !s.opts.OriginAllowed {
		s.refuseOrigin(ctx, req)
		return
	}
	if err != nil {
		s.recordRefusal(ctx, req, err)
		s.sendErr(id, err)
		return
	}
	if _, ok := resultTypes[req.Type]; ok {
		s.peer.deliver(req)
		return
	}
	h, ok := handlers[req.Type]
	if !ok {
		err := mediator.Errorf(mediator.CodeUnknownType, "request type %q is not known", clip(req.Type))
		s.recordRefusal(ctx, req, err)
		s.sendErr(id, err)
		return
	}
	ctx, done := s.inflight.track(ctx, req)
	defer done()
	data, err := h(ctx, s, req)
	if err != nil {
		s.log.Info("request failed", "type", req.Type, "id", string(req.ID), "code", mediator.CodeOf(err), "err", err)
		s.recordRefusal(ctx, req, err)
		s.sendErr(id, err)
		return
	}
	s.send(reply{ID: id, Success: true, Data: data})
}

func (s *server) refuseOrigin(ctx context.Context, req *request) {
	id, agent := nullID, ""
	if req != nil {
		id = req.ID
		var p struct {
			AgentID string `json:"agentId"`
		}
		// decode: only to name the refused caller's agent in the denial;
		// nothing is decided from it.
		_ = json.Unmarshal(req.Raw, &p)
		agent = p.AgentID
	}
	reason := fmt.Sprintf("caller %q is not among the origins this host was installed for", clip(s.opts.Caller.Origin))
	s.recordDenial(ctx, mediator.Denial{
		AgentID: agent, Permission: "native-messaging", Code: mediator.CodeOriginNotAllowed,
		Context: mediator.DenialContext{Reason: reason},
	})
	s.send(reply{ID: id, Error: reason, Code: mediator.CodeOriginNotAllowed})
}

// recordDenial writes d to the denial log before the caller replies. A
// failure to write is logged; the denial itself still stands.
func (s *server) recordDenial(ctx context.Context, d mediator.Denial) {
	d.Context.Origin = s.opts.Caller.Origin
	if d.Context.Layer == "" {
		d.Context.Layer = "host"
	}
	// The record must be written even when the request's context is done.
	if _, err := s.app.Denials().LogDenial(context.WithoutCancel(ctx), d); err != nil {
		s.log.Error("denial not recorded", "agent", d.AgentID, "permission", d.Permission, "code", d.Code, "err", err)
	}
}

// recordRefusal puts a request's refusal in the denial log, with its
// audit record, unless the layer that refused has already done so
// (mediator.Recorded): whatever refuses, a refusal is on the record once.
// Outcomes that are not refusals (a run that timed out, a server that
// failed, the host failing) are not denials.
func (s *server) recordRefusal(ctx context.Context, req *request, err error) {
	code := mediator.CodeOf(err)
	if !mediator.IsRefusal(code) || mediator.IsRecorded(err) {
		return
	}
	var p struct {
		AgentID    string `json:"agentId"`
		Permission string `json:"permission"`
	}
	typ := ""
	if req != nil {
		typ = clip(req.Type)
		// decode: only to name the agent and permission in the denial of a
		// request already refused; nothing is decided from it.
		_ = json.Unmarshal(req.Raw, &p)
	}
	s.recordDenial(ctx, mediator.Denial{
		AgentID: mediator.Truncate(p.AgentID, mediator.MaxAgentIDLen), Permission: mediator.Truncate(p.Permission, 64), Code: code,
		Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Method: typ,
			Details: map[string]string{"operation": typ, "decidedBy": "request:" + typ}},
	})
}

func (s *server) sendErr(id json.RawMessage, err error) {
	code := mediator.CodeOf(err)
	msg := mediator.MessageOf(err)
	if code == mediator.CodeInternal {
		// Internal details stay in the log; the browser gets a sentence.
		s.log.Error("internal error", "id", string(id), "err", err)
		msg = "the host could not complete this request"
	}
	s.send(reply{ID: id, Error: msg, Code: code})
}

// send encodes r and writes it as one frame, or as numbered chunks when it
// exceeds the browser's 1 MiB limit. Data that holds memory on loan (a
// fetch's body) is released once the reply is written.
func (s *server) send(r reply) {
	if rel, ok := r.Data.(interface{ Release() }); ok {
		defer rel.Release()
	}
	if err := s.write(r.ID, r); err != nil {
		s.log.Error("reply not encodable", "id", string(r.ID), "err", err)
		_ = s.write(r.ID, reply{ID: r.ID, Error: "the reply could not be encoded", Code: mediator.CodeInternal})
	}
}
