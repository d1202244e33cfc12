package host

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/runs"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/pyagent"
	"github.com/agentgate/nmhost/shell"
)

// A Python agent runs in the extension's sandbox, but nothing there
// decides anything: python-run opens a run here (the agent, the document
// it is bound to, its session level, a deadline), each restricted_api call
// comes back as one agent-call that this host decides with the same
// Authorizer, prompts, audit records and denial log as a module's import,
// and python-run-end closes it. The run id is the only handle, 128 random
// bits the sandbox never sees.

// pythonRunSlack is how long past executionTimeout a run's calls are still
// taken: the extension's own timer ends the worker at executionTimeout,
// and its last call may be in flight.
const pythonRunSlack = 5 * time.Second

// maxPythonRuns bounds the runs open at once in one host; each run is a
// sandbox the user started, so this is far more than a browser makes.
const maxPythonRuns = 64

// pythonRun is one open run of a Python agent.
type pythonRun struct {
	owner   *server // the host process the run was opened in
	agentID string
	session string // the session the run belongs to (store.RunSession): its workspace and memory
	// ephemeral: the run named no session, so session is the run's own,
	// removed when the run ends or expires (store.DeleteEphemeralSession).
	ephemeral bool
	level     string // the run's level: its session's, or lower
	origin    string
	context   json.RawMessage // echoed in the run's browser-calls
	deadline  time.Time
	calls     int
	// ctx is done when the run ends (python-run-end, expiry): every call
	// of the run in progress is cancelled with it, a prompt it waits on
	// withdrawn (prompt-cancel), so no answer given later acts for it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	expiry *time.Timer // ends the run at its deadline when nobody ends it (the page that ran it closed)
	// paused counts the run's calls waiting for a person now, since
	// pausedAt: its deadline stands still meanwhile (pyrun_pause.go).
	// Under pythonRuns' lock.
	paused   int
	pausedAt time.Time
	// bar holds the run's records as a module run's barrier does
	// (runs.Deps.Barrier), and auth decides the run's calls under it:
	// its log calls are one aggregate record, its local-only reads
	// may trail their call, and the run's end waits for all of them.
	bar  *mediator.AuditBarrier
	auth mediator.Authorizer
	// active counts the run's calls in progress; taken only while the
	// run is open (under pythonRuns' lock), so end, which closes it
	// first, waits for every call that could still add to bar.
	active sync.WaitGroup
}

// errRunEnded is why a call of an ended run is cancelled.
var errRunEnded = mediator.Errorf(mediator.CodePromptCancelled, "the run ended before the call was decided")

// pythonRuns holds the open runs of every host in this process, keyed by
// run id; a run answers only its own host.
var pythonRuns = struct {
	sync.Mutex
	m map[string]*pythonRun
}{m: map[string]*pythonRun{}}

// maxPythonCalls bounds one run's calls, like the module runtime's limit.
const maxPythonCalls = 10000

func newRunID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// handlePythonRun opens a run: the same checks as run-agent (origin,
// context, level) and the same session rule (store.RunSession: the named
// session at its level or lower, or a fresh one, named in the reply as
// sessionId), then the agent must be a Python agent with its source.
// The reply has what the sandbox needs: the source, the restricted_api
// names present (the granted ones), the input and the limits.
func handlePythonRun(ctx context.Context, s *server, req *request) (any, error) {
	p, bound, err := decodeRun(req)
	if err != nil {
		return nil, err
	}
	rec, source, err := s.app.Agents().AgentModule(ctx, p.AgentID)
	if err != nil {
		return nil, fmt.Errorf("agent[%s] python-run: %w", p.AgentID, err)
	}
	if !rec.Profile.IsPython() {
		return nil, mediator.Errorf(mediator.CodeWrongRuntime, "agent %q is a WebAssembly agent: run it with run-agent", p.AgentID)
	}
	// The run belongs to a session as a module's run does: the named one
	// (its level, lowered by the request, never raised) or a fresh,
	// ephemeral one, removed when the run ends.
	sessionID, level, err := s.app.Sessions().RunSession(ctx, p.SessionID, p.SessionLevel)
	if err != nil {
		return nil, err
	}
	ephemeral := p.SessionID == ""
	var granted []mediator.Permission
	for _, g := range rec.Grants {
		granted = append(granted, g.Permission)
	}
	caps := rec.Profile.Capabilities
	run := &pythonRun{owner: s, agentID: p.AgentID, session: sessionID, ephemeral: ephemeral, level: level, origin: p.Origin, context: bound,
		deadline: time.Now().Add(caps.Timeout() + pythonRunSlack)}
	run.bar, run.auth = s.runDeps().Barrier(rec)
	run.ctx, run.cancel = context.WithCancelCause(context.Background())
	id := newRunID()
	// A run nobody ends (the page that ran it was closed) ends at its
	// deadline all the same, and its calls with it. Set before the run
	// is in the map, where end may read it.
	run.expiry = time.AfterFunc(time.Until(run.deadline), func() {
		pythonRuns.Lock()
		mine := pythonRuns.m[id] == run
		if mine {
			delete(pythonRuns.m, id)
		}
		pythonRuns.Unlock()
		if mine {
			if err := run.end(context.Background()); err != nil {
				s.log.Error("python run expired; its audit records were not written", "agent", run.agentID, "err", err)
			}
		}
	})
	pythonRuns.Lock()
	now := time.Now()
	var expired []*pythonRun
	for k, r := range pythonRuns.m {
		if r.expiredAt(now) {
			delete(pythonRuns.m, k)
			expired = append(expired, r)
		}
	}
	full := len(pythonRuns.m) >= maxPythonRuns
	if !full {
		pythonRuns.m[id] = run
	}
	pythonRuns.Unlock()
	for _, r := range expired {
		if err := r.end(ctx); err != nil {
			s.log.Error("python run expired; its audit records were not written", "agent", r.agentID, "err", err)
		}
	}
	if full {
		_ = run.end(ctx) // it made no call
		return nil, mediator.Errorf(mediator.CodeTooLarge, "%d Python runs are open already", maxPythonRuns)
	}
	api := pyagent.Present(granted)
	if api == nil {
		api = []string{}
	}
	// The functions left out, with the permission each needs: touching one
	// is an AttributeError, reported as import_not_granted like a module's
	// import of it.
	absent := map[string]mediator.Permission{}
	for _, f := range pyagent.Functions() {
		if !slices.Contains(api, f.Name) {
			absent[f.Name] = f.Permission
		}
	}
	return map[string]any{
		"runId": id, "agentId": p.AgentID, "sessionId": sessionID, "source": string(source), "moduleSha256": rec.ModuleSHA256,
		"api": api, "absent": absent, "input": p.Input, "executionTimeout": caps.ExecutionTimeout, "maxMemory": caps.MaxMemory,
	}, nil
}

// callParams are the arguments of every restricted_api function; each
// call reads the ones it takes (functionParams).
type callParams struct {
	Text     string          `json:"text"`
	Tags     []string        `json:"tags"`
	Query    string          `json:"query"`
	Selector string          `json:"selector"`
	Limit    int             `json:"limit"`
	Title    string          `json:"title"`
	Message  string          `json:"message"`
	URL      string          `json:"url"`
	Options  fetchOptions    `json:"options"`
	Command  string          `json:"command"`
	Server   string          `json:"server"`
	Tool     string          `json:"tool"`
	Args     json.RawMessage `json:"args"`
}

// functionParams is the parameters each restricted_api function takes
// (docs/protocol.md, "agent-call"), by their JSON names. A call carrying
// any other is bad_request, even one another function takes: "log" with
// a "url" would otherwise be read without complaint, and what the host
// ignores today a later version might act on.
var functionParams = map[string][]string{
	"log":               {"text"},
	"querySelector":     {"selector"},
	"querySelectorAll":  {"selector", "limit"},
	"getPageText":       {},
	"setElementText":    {"selector", "text"},
	"writeToClipboard":  {"text"},
	"readFromClipboard": {},
	"fetch":             {"url", "options"},
	"showNotification":  {"title", "message"},
	"memory_write":      {"text", "tags"},
	"memory_search":     {"query", "limit"},
	"shell":             {"command"},
	"mcp_call":          {"server", "tool", "args"},
}

// paramTypes is, per function, a struct of exactly the callParams fields
// it takes, built once: mediator.DecodeExact reads a call's params into
// it in one pass, refusing a member the function does not take, a case
// variant and a repeat, and the fields are then copied into callParams.
var paramTypes = sync.OnceValue(func() map[string]reflect.Type {
	all := reflect.TypeFor[callParams]()
	out := map[string]reflect.Type{}
	for name, params := range functionParams {
		fields := []reflect.StructField{}
		for _, p := range params {
			for i := range all.NumField() {
				if f := all.Field(i); f.Tag.Get("json") == p {
					fields = append(fields, f)
				}
			}
		}
		out[name] = reflect.StructOf(fields)
	}
	return out
})

// decodeCallParams reads params, the untrusted arguments of a call of fn.
func decodeCallParams(fn string, params []byte) (callParams, error) {
	var a callParams
	t, ok := paramTypes()[fn]
	if !ok {
		return a, mediator.Errorf(mediator.CodeInternal, "restricted_api function %q has no parameter list", fn)
	}
	if len(params) == 0 {
		return a, nil
	}
	v := reflect.New(t)
	if err := mediator.DecodeExact(params, v.Interface()); err != nil {
		return a, &mediator.Error{Code: mediator.CodeBadRequest,
			Msg: fmt.Sprintf("params do not fit %s, which takes %s: %s", fn, takes(functionParams[fn]), mediator.Truncate(err.Error(), 200)), Err: err}
	}
	dst := reflect.ValueOf(&a).Elem()
	for i := range t.NumField() {
		dst.FieldByName(t.Field(i).Name).Set(v.Elem().Field(i))
	}
	return a, nil
}

// takes lists a function's parameters for a message.
func takes(params []string) string {
	if len(params) == 0 {
		return "no parameters"
	}
	return "{" + strings.Join(params, ", ") + "}"
}

// handleAgentCall decides and performs one restricted_api call of an open
// Python run, exactly as the module runtime does for an import
// (wasmhost/calls.go): the operation, its target, the Authorizer, then
// the browser-call bound to the run's document or the mediated fetch.
func handleAgentCall(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		RunID     string          `json:"runId"`
		AgentID   string          `json:"agentId"`
		Operation string          `json:"operation"`
		Params    json.RawMessage `json:"params"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	run, err := lookupRun(ctx, s, p.RunID, p.AgentID)
	if err != nil {
		return nil, err
	}
	defer run.active.Done()
	// The call lives no longer than its run: python-run-end cancels it,
	// and a prompt it waits on, however long ago it was asked.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(run.ctx, func() { cancel(context.Cause(run.ctx)) })
	defer stop()
	// While the call waits for a person, the run's deadline stands still,
	// and the extension hears so on this call.
	ctx = mediator.WithRunPauser(ctx, callPause{run: run, tell: func(ev string) {
		_ = s.write(req.ID, event{ID: req.ID, Event: ev, Data: map[string]any{}})
	}})
	fn, ok := pyagent.Lookup(p.Operation)
	if !ok {
		return nil, mediator.Errorf(mediator.CodeUnknownOperation, "restricted_api has no function %q", clip(p.Operation))
	}
	a, err := decodeCallParams(fn.Name, p.Params)
	if err != nil {
		// A call the host cannot read is refused before any decision,
		// and recorded as every refusal is: a denial with its audit
		// record, so a probing agent is on record.
		s.recordDenial(ctx, mediator.Denial{AgentID: run.agentID, Permission: string(fn.Permission), Code: mediator.CodeOf(err),
			Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Layer: "host",
				Details: map[string]string{"operation": fn.Operation, "function": fn.Name}}})
		return nil, mediator.Recorded(err)
	}
	switch fn.Name {
	case "fetch":
		return run.fetch(ctx, s, a)
	case "shell":
		return run.shell(ctx, s, a.Command)
	case "mcp_call":
		return run.callTool(ctx, s, a)
	}
	op := mediator.Operation{Name: fn.Operation}
	var browserParams map[string]any
	switch fn.Operation {
	case mediator.OpLog:
		op.TextLength = len(a.Text)
	case mediator.OpPageQuerySelector:
		op.Selector, op.Origin = a.Selector, run.origin
		browserParams = map[string]any{"selector": a.Selector}
	case mediator.OpPageQuerySelectorAll:
		if a.Limit <= 0 || a.Limit > 1000 {
			a.Limit = 1000
		}
		op.Selector, op.Origin = a.Selector, run.origin
		browserParams = map[string]any{"selector": a.Selector, "limit": a.Limit}
	case mediator.OpPageGetPageText:
		op.Origin = run.origin
		browserParams = map[string]any{}
	case mediator.OpPageSetElementText:
		op.Selector, op.TextLength, op.Origin, op.Preview = a.Selector, len(a.Text), run.origin, mediator.PreviewOf(a.Text)
		browserParams = map[string]any{"selector": a.Selector, "text": a.Text}
	case mediator.OpClipboardRead:
		browserParams = map[string]any{}
	case mediator.OpClipboardWrite:
		op.TextLength, op.Preview = len(a.Text), mediator.PreviewOf(a.Text)
		browserParams = map[string]any{"text": a.Text}
	case mediator.OpNotificationsShow:
		op.TextLength, op.Preview = len(a.Title)+len(a.Message), mediator.PreviewOf(a.Title+": "+a.Message)
		browserParams = map[string]any{"title": a.Title, "message": a.Message}
	case mediator.OpMemoryWrite:
		op.TextLength = len(a.Text)
	case mediator.OpMemorySearch:
		op.TextLength = len(a.Query)
	}
	op.AgentID, op.SessionLevel, op.SessionID, op.Permission = run.agentID, run.level, run.session, fn.Permission
	done, err := run.auth.Authorize(ctx, op)
	if err != nil {
		return nil, err // the Authorizer recorded the denial
	}
	switch fn.Operation {
	case mediator.OpMemoryWrite:
		id, err := s.app.Memory().WriteMemory(ctx, run.session, a.Text, a.Tags)
		done(err)
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": id}, nil
	case mediator.OpMemorySearch:
		hits, err := s.app.Memory().SearchMemory(ctx, run.session, a.Query, a.Limit)
		done(err)
		if err != nil {
			return nil, err
		}
		return map[string]any{"results": hits}, nil
	}
	if browserParams == nil { // log: the text goes to the run's output in the extension
		done(nil)
		return map[string]any{}, nil
	}
	if run.ctx.Err() != nil {
		// Allowed, but the run ended meanwhile: nothing acts for it now.
		err := mediator.Errorf(mediator.CodeUnknownRun, "the run ended before %s was performed", op.Name)
		done(err)
		return nil, err
	}
	b := &Browser{peer: &s.peer, agentID: run.agentID, context: run.context, timeout: DefaultBrowserTimeout}
	out, err := b.Call(ctx, op.Name, browserParams)
	done(err)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fetch takes the network-fetch path: grant, ACL, private addresses, the
// policy and every redirect hop, with the run's session level.
func (r *pythonRun) fetch(ctx context.Context, s *server, a callParams) (any, error) {
	return s.fetchFor(ctx, r.agentID, r.level, r.session, a.URL, a.Options)
}

// shell runs a command line of the session shell in the run's session
// workspace, each command decided as a module's are (shell.Agent); every
// command after the line's first counts as one more call of the run.
// callTool calls an MCP tool through the core, decided by the run's
// Authorizer like every other call of the run.
func (r *pythonRun) callTool(ctx context.Context, s *server, a callParams) (any, error) {
	res, err := s.app.CallTool(ctx, r.auth, app.ToolCallRequest{AgentID: r.agentID, SessionID: r.session, SessionLevel: r.level,
		Server: a.Server, Tool: a.Tool, Args: a.Args})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (r *pythonRun) shell(ctx context.Context, s *server, line string) (any, error) {
	ws, err := s.app.Sessions().OpenWorkspace(r.session)
	if err != nil {
		return nil, fmt.Errorf("session[%s] workspace: %w", clip(r.session), err)
	}
	defer ws.Close()
	out, err := shell.Agent{AgentID: r.agentID, Level: r.level, Session: r.session, WS: ws, Auth: r.auth, Refused: s.recordDenial,
		Programs: runs.Programs(s.app.Dir(), s.fetch, r.agentID, r.level, r.session), More: func() error {
			pythonRuns.Lock()
			defer pythonRuns.Unlock()
			if r.calls++; r.calls > maxPythonCalls {
				return mediator.Errorf(mediator.CodeCallLimit, "the run made more than %d calls", maxPythonCalls)
			}
			return nil
		}}.Run(ctx, line)
	if err != nil {
		return nil, err
	}
	return map[string]any{"output": out}, nil
}
