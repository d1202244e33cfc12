package wasmhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentgate/nmhost/shell"
	"github.com/agentgate/nmhost/workspace"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// Browser performs the calls only the extension can: page, clipboard and
// notifications. call is the operation name; params and the result have
// the shapes of docs/protocol.md, "browser-call".
type Browser interface {
	Call(ctx context.Context, call string, params any) (json.RawMessage, error)
}

// RunSpec is one run of one agent.
type RunSpec struct {
	Agent  mediator.AgentRecord // profile and grants, as the store holds them
	Module []byte
	Input  []byte
	// SessionLevel is the level of the session the run belongs to.
	SessionLevel string
	// SessionID is the session the run belongs to: memory_write and
	// memory_search reach its memory and no other.
	SessionID string
	// Memory holds the sessions' memory; nil (or no SessionID) answers
	// memory calls the policy allowed with unknown_session.
	Memory Memory
	// Tools reaches the person's MCP servers for mcp_call; nil answers
	// such a call with tool_not_allowed.
	Tools Tools
	// PageOrigin is the origin of the tab the run acts on, when there is one;
	// remembered answers for page writes are keyed by it.
	PageOrigin string
	// Authorizer decides every restricted API call except fetch. Required.
	Authorizer mediator.Authorizer
	// Browser performs page, clipboard and notification calls; nil answers
	// them with no_browser.
	Browser Browser
	// Fetch performs a mediated fetch (grant, ACL, policy, denial log: the
	// network-fetch path); nil answers fetches with no_browser's sibling,
	// network_disabled.
	Fetch func(ctx context.Context, req netproxy.Request) (*netproxy.Response, error)
	// Workspace is the run's session workspace, mounted at /workspace
	// when the agent's workspace grants give access and its permission
	// set allows it (read-only with workspace.read alone, or under
	// readonly); nil mounts nothing. Every change a guest makes to it is
	// decided and recorded as workspace.write.
	Workspace *workspace.Workspace
	// Programs runs, in a high session's shell, a command that is not
	// built in as a program in the sandbox (runs.Programs); nil: none.
	Programs *shell.Programs
	// LogDenial records denials the runtime decides itself (link time).
	LogDenial func(ctx context.Context, d mediator.Denial)
	// Events receives output and denials as they happen; may be nil. It is
	// called on the run's goroutine: it must not block for long.
	Events func(Event)
}

// Event is progress of a run.
type Event struct {
	Kind   string           `json:"kind"` // "output" or "denial"
	Text   string           `json:"text,omitempty"`
	Denial *mediator.Denial `json:"denial,omitempty"`
}

// Result is how a run ended. Code is empty when it succeeded.
type Result struct {
	Status string `json:"status"` // "ok" or the code
	// Compile says where the run's compiled module came from: this
	// process ("memory"), the on-disk compilation cache ("disk"), or a
	// compile now ("fresh": no cached compilation was found, as when the
	// cache was removed; an installed agent is compiled at install).
	Compile  string            `json:"compile,omitempty"`
	Code     mediator.Code     `json:"code,omitempty"`
	Error    string            `json:"error,omitempty"`
	ExitCode uint32            `json:"exitCode"`
	Output   string            `json:"output"`
	Denials  []mediator.Denial `json:"denials"`
	Calls    int               `json:"calls"`
	Duration time.Duration     `json:"-"`
	Millis   int64             `json:"durationMs"`
}

// Reasons a run is cut short from inside a host function.
var (
	errCallLimit   = mediator.Errorf(mediator.CodeCallLimit, "the run made more restricted API calls than allowed")
	errOutputLimit = mediator.Errorf(mediator.CodeTooLarge, "the run's output passed its limit")
)

// run is the state of one run; host functions find it in their context.
type run struct {
	rt      *Runtime
	spec    RunSpec
	ctx     context.Context
	cancel  context.CancelCauseFunc
	pending []byte // the last call's result or error, until result() copies it
	calls   int
	out     bytes.Buffer
	denials []mediator.Denial
	set     runSet // chosen once the imports are read; its zero value links nothing but input and result
	compile string // Result.Compile
	// wasiCall is the WASI call in progress that names files, as its
	// resolution would refuse it (wasipath.go).
	wasiCall *wasiPathCall
}

type runKey struct{}

// Run compiles (or reuses) the module, checks its imports against the
// grants, and runs it within the profile's memory and time limits. A
// guest's failure is a Result with a code, never an error; errors are
// the host's own failures.
func (r *Runtime) Run(ctx context.Context, spec RunSpec) (Result, error) {
	if spec.Authorizer == nil {
		return Result{}, errors.New("wasmhost: RunSpec needs an Authorizer")
	}
	start := time.Now()
	ru := &run{rt: r, spec: spec}
	res := ru.execute(ctx)
	if res.Compile == "" {
		res.Compile = ru.compile
	}
	if mediator.IsRefusal(res.Code) && !slices.ContainsFunc(ru.denials, func(d mediator.Denial) bool { return d.Code == res.Code }) {
		// A run the runtime refused as a whole (a module wazero will not
		// compile, one past a limit, an output past its budget) is a
		// refusal like any other: on the record, once.
		ru.deny(context.WithoutCancel(ctx), mediator.Denial{AgentID: spec.Agent.Profile.AgentID, Code: res.Code,
			Context: mediator.DenialContext{Reason: mediator.Truncate(res.Error, mediator.MaxDenialReasonBytes), Layer: "run",
				Details: map[string]string{"operation": "run", "decidedBy": "run"}}})
	}
	res.Output, res.Calls, res.Denials = ru.out.String(), ru.calls, ru.denials
	if res.Denials == nil {
		res.Denials = []mediator.Denial{}
	}
	res.Duration = time.Since(start)
	res.Millis = res.Duration.Milliseconds()
	if res.Code == "" {
		res.Status = "ok"
	} else {
		res.Status = string(res.Code)
	}
	return res, nil
}

func fail(code mediator.Code, format string, args ...any) Result {
	return Result{Code: code, Error: fmt.Sprintf(format, args...)}
}

func (ru *run) execute(ctx context.Context) Result {
	p := ru.spec.Agent.Profile
	maxMem := p.Capabilities.MaxMemory
	if maxMem <= 0 {
		maxMem = mediator.DefaultMaxMemory
	}
	// Waiting for room in the host's guest-memory budget counts against
	// the executionTimeout; compiling has its own budget
	// (Config.CompileTimeout), since compiling is not running; the
	// executionTimeout then counts the run itself, from a compiled module.
	wait, cancelWait := context.WithTimeout(ctx, p.Capabilities.Timeout())
	release, res, ok := ru.reserveMemory(wait, maxMem)
	cancelWait()
	if !ok {
		return res
	}
	defer release()

	compileCtx, cancelCompile := context.WithTimeout(ctx, ru.rt.cfg.CompileTimeout)
	eng, compiled, res, ok := ru.compiled(ctx, compileCtx, pagesFor(maxMem), maxMem)
	cancelCompile()
	if !ok {
		return res
	}
	ru.compile = res.Compile

	// The run's clock stands still while a prompt of it waits for the
	// person (mediator.RunClock): the executionTimeout is the agent's time.
	runCtx, clock := mediator.WithRunClock(ctx, p.Capabilities.Timeout())
	defer clock.Stop()
	runCtx, ru.cancel = context.WithCancelCause(runCtx)
	defer ru.cancel(nil)
	ru.ctx = runCtx

	if res, denied := ru.link(ctx, compiledImports(compiled)); denied {
		return res
	}
	if t := ru.set.timeout(p.Capabilities); t != p.Capabilities.ExecutionTimeout {
		// Pure work that kept the default timeout gets the shorter one,
		// counted from here (compiling counted against the profile's).
		p.Capabilities.ExecutionTimeout = t
		ru.spec.Agent.Profile.Capabilities.ExecutionTimeout = t
		var cancelPure context.CancelFunc
		runCtx, cancelPure = context.WithTimeout(runCtx, p.Capabilities.Timeout())
		defer cancelPure()
		ru.ctx = runCtx
	}

	// The guest's memory is mapped outside the Go heap and unmapped when
	// the run ends (guestmem.go), before its share of the budget is
	// returned (the release deferred above runs after this).
	mem := &runMemory{}
	defer mem.freeAll()
	callCtx := experimental.WithMemoryAllocator(context.WithValue(runCtx, runKey{}, ru), mem)
	out := &outputWriter{ru: ru}
	mc := wazero.NewModuleConfig().
		WithName(""). // anonymous: runs of one module may overlap
		WithArgs(p.AgentID).
		WithStdin(bytes.NewReader(nil)).
		WithStdout(out).WithStderr(out).
		WithRandSource(rand.Reader)
	for _, kv := range ru.set.env(p.AgentID, ru.spec.SessionLevel) {
		mc = mc.WithEnv(kv[0], kv[1])
	}
	if fsc, ok := ru.workspaceFS(); ok {
		mc = mc.WithFSConfig(fsc)
	}
	exports := compiled.ExportedFunctions()
	_, hasStart := exports["_start"]
	_, hasRun := exports["run"]
	var mod api.Module
	var err error
	switch {
	case hasStart:
		mod, err = eng.rt.InstantiateModule(callCtx, compiled, mc)
	case hasRun:
		starts := []string{}
		if _, ok := exports["_initialize"]; ok {
			starts = append(starts, "_initialize")
		}
		if mod, err = eng.rt.InstantiateModule(callCtx, compiled, mc.WithStartFunctions(starts...)); err == nil {
			_, err = mod.ExportedFunction("run").Call(callCtx)
		}
	default:
		return fail(mediator.CodeInvalidModule, "the module exports neither _start nor run")
	}
	// Every instance is closed, however the run ended: one left open stays
	// in the engine's store (about 70 KB each) until the process exits.
	// Closing one that proc_exit or a failed start already closed is a no-op.
	if mod != nil {
		mod.Close(context.WithoutCancel(ctx))
	}
	return ru.ending(err)
}

// compiled returns the module compiled, or the Result that ends the run.
//
// A module the engine has compiled already is found by the hash the store
// recorded for it (AgentRecord.ModuleSHA256), without hashing and
// validating the bytes again: what runs is then the module that was
// hashed and validated when it was compiled, whatever bytes came with this
// run. Otherwise the bytes are hashed (and must match the recorded hash),
// validated and compiled, and kept under their hash.
//
// The engine is the one that compiled it (engines.go chooses).
func (ru *run) compiled(ctx, compileCtx context.Context, pages uint32, maxMem int64) (*engine, wazero.CompiledModule, Result, bool) {
	p := ru.spec.Agent.Profile
	sha := ru.spec.Agent.ModuleSHA256
	if eng, m, ok := ru.rt.lookupCompiled(pages, sha); ok {
		if p.ModuleSHA256 != "" && p.ModuleSHA256 != sha {
			return nil, nil, fail(mediator.CodeHashMismatch, "the module's sha256 is %s; the profile pins %s", sha, p.ModuleSHA256), false
		}
		ru.set = ru.chooseSet(sha, compiledImports(m))
		return eng, m, Result{Compile: CompileMemory}, true
	}
	sum := sha256.Sum256(ru.spec.Module)
	got := hex.EncodeToString(sum[:])
	if sha != "" && sha != got {
		return nil, nil, fail(mediator.CodeHashMismatch, "the module's sha256 is %s; the agent's record names %s", got, sha), false
	}
	sha = got
	if p.ModuleSHA256 != "" && p.ModuleSHA256 != sha {
		return nil, nil, fail(mediator.CodeHashMismatch, "the module's sha256 is %s; the profile pins %s", sha, p.ModuleSHA256), false
	}
	// Nothing reaches wazero before validate: its checks bound what
	// compiling costs. The grants are checked first, on the imports it read,
	// so a module that may not link is refused as such even when it also
	// breaks a limit, and before it costs a compile.
	info, verr := validate(ru.spec.Module)
	if info.importsRead {
		ru.set = ru.chooseSet(sha, info.imports)
		if res, denied := ru.link(ctx, info.imports); denied {
			return nil, nil, res, false
		}
	}
	if verr != nil {
		return nil, nil, fail(mediator.CodeOf(verr), "%s", mediator.MessageOf(verr)), false
	}
	interp, lerr := useInterpreter(info)
	if lerr != nil {
		return nil, nil, fail(mediator.CodeOf(lerr), "%s", mediator.MessageOf(lerr)), false
	}
	eng, err := ru.rt.engineOf(ctx, engineKey{pages: pages, interp: interp})
	if err != nil {
		return nil, nil, fail(mediator.CodeInternal, "%v", err), false
	}
	how := ru.rt.cachedOnDisk(eng, sha)
	if _, ok := eng.lookup(sha); ok {
		how = CompileMemory
	}
	compiled, err := eng.compile(compileCtx, sha, ru.spec.Module, info)
	if err != nil {
		if compileCtx.Err() != nil && ctx.Err() == nil {
			return nil, nil, fail(mediator.CodeCompileTimeout, "compiling the module took longer than the host's compile budget of %v; the run did not start", ru.rt.cfg.CompileTimeout), false
		}
		if ctx.Err() != nil {
			return nil, nil, fail(mediator.CodeTimeout, "the run was cancelled while its module compiled"), false
		}
		if errors.Is(err, errRuntimeClosed) {
			return nil, nil, fail(mediator.CodeInternal, "%v", err), false
		}
		if isMemoryLimitErr(err) {
			return nil, nil, fail(mediator.CodeMemoryLimit, "the module needs more memory than maxMemory (%d bytes): %v", maxMem, err), false
		}
		return nil, nil, fail(mediator.CodeInvalidModule, "the module does not compile: %v", err), false
	}
	ru.rt.markCompiled(eng, sha)
	return eng, compiled, Result{Compile: how}, true
}

// link checks imports against the agent's grants. A refusal is recorded in
// the denial log, naming the import.
func (ru *run) link(ctx context.Context, imports []moduleImport) (Result, bool) {
	granted := ru.granted()
	// The set bounds the grants: a run links their intersection, and the
	// workspace the lesser of the set's column and the workspace grants.
	d := checkImports(imports, func(p mediator.Permission) bool { return granted[p] && ru.set.rule.Allows(p) }, ru.workspaceAccess())
	if d == nil {
		d = ru.shellNeedsWorkspace(imports)
	}
	if d == nil {
		return Result{}, false
	}
	// A grant the user took back is refused as what it is, with how to
	// give it back, not as a permission the agent never had.
	code, reason := mediator.CodeImportNotGranted, d.Reason
	details := map[string]string{"import": d.Import}
	switch {
	case d.Workspace != "" && !mediator.WorkspaceCovers(ru.set.rule.Workspace, d.Workspace):
		code, reason = ru.set.outsideWorkspace(d.Import, d.Workspace, details)
	case d.Workspace != "":
		// The set would allow it; the person did not grant it.
		lack, _ := mediator.WorkspaceGrantFor(d.Workspace, func(p mediator.Permission) bool { return granted[p] })
		d.Permission = lack
		reason = fmt.Sprintf("the module imports %s, which needs %s access to the session's workspace: the %s grant, which the agent was not granted", d.Import, d.Workspace, lack)
		if slices.Contains(ru.spec.Agent.Revoked, lack) {
			code = mediator.CodeRevokedByUser
			reason = fmt.Sprintf("the module imports %s, which needs %s: %s", d.Import, lack, mediator.RevokedMessage(ru.spec.Agent.Profile.AgentID, lack))
		}
	case granted[d.Permission] && !ru.set.rule.Allows(d.Permission):
		code, reason = ru.set.outside(d.Import, d.Permission, details)
	case slices.Contains(ru.spec.Agent.Revoked, d.Permission):
		code = mediator.CodeRevokedByUser
		reason = fmt.Sprintf("the module imports %s, which needs %s: %s", d.Import, d.Permission, mediator.RevokedMessage(ru.spec.Agent.Profile.AgentID, d.Permission))
	}
	ru.deny(ctx, mediator.Denial{AgentID: ru.spec.Agent.Profile.AgentID, Permission: string(d.Permission), Code: code,
		Context: mediator.DenialContext{Reason: reason, Layer: "link", Details: details}})
	return fail(code, "%s", reason), true
}

// ending maps how the guest stopped to a result.
func (ru *run) ending(err error) Result {
	if cause := context.Cause(ru.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		if errors.Is(cause, context.DeadlineExceeded) {
			return fail(mediator.CodeTimeout, "the run passed its executionTimeout of %v", ru.spec.Agent.Profile.Capabilities.Timeout())
		}
		// A limit the run passed (output, calls) decides the result even if
		// the guest then exited cleanly before wazero stopped it.
		return fail(mediator.CodeOf(cause), "%s", mediator.MessageOf(cause))
	}
	if err == nil {
		return Result{}
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch code := exit.ExitCode(); {
		case code == 0:
			return Result{}
		case code == sys.ExitCodeDeadlineExceeded:
			return fail(mediator.CodeTimeout, "the run passed its executionTimeout")
		case code == sys.ExitCodeContextCanceled:
			return fail(mediator.CodeTimeout, "the run was cancelled")
		default:
			r := fail(mediator.CodeExitNonZero, "the module exited with status %d", code)
			// A Go guest whose heap cannot grow prints this and exits 2.
			if code == 2 && strings.Contains(ru.out.String(), "out of memory") {
				r = fail(mediator.CodeMemoryLimit, "the module ran out of memory (maxMemory %d bytes)", ru.spec.Agent.Profile.Capabilities.MaxMemory)
			}
			r.ExitCode = code
			return r
		}
	}
	if isMemoryLimitErr(err) {
		return fail(mediator.CodeMemoryLimit, "the module needs more memory than maxMemory: %v", err)
	}
	if strings.Contains(err.Error(), "import") && strings.Contains(err.Error(), "not") {
		return fail(mediator.CodeImportNotGranted, "the module's imports cannot be linked: %v", err)
	}
	return fail(mediator.CodeTrap, "the module trapped: %v", err)
}

func isMemoryLimitErr(err error) bool {
	s := err.Error()
	return strings.Contains(s, "memory") && (strings.Contains(s, "limit") || strings.Contains(s, "exceed") || strings.Contains(s, "max"))
}

// deny records a denial the runtime decided and reports it as an event.
func (ru *run) deny(ctx context.Context, d mediator.Denial) {
	if ru.spec.LogDenial != nil {
		ru.spec.LogDenial(ctx, d)
	}
	ru.noteDenial(d)
}

// noteDenial keeps a denial decided elsewhere (already logged there).
func (ru *run) noteDenial(d mediator.Denial) {
	if d.Timestamp == 0 {
		d.Timestamp = time.Now().UnixMilli()
	}
	ru.denials = append(ru.denials, d)
	if ru.spec.Events != nil {
		ru.spec.Events(Event{Kind: "denial", Denial: &d})
	}
}

// outputWriter collects the guest's stdout and stderr up to the limit,
// then ends the run.
type outputWriter struct{ ru *run }

func (w *outputWriter) Write(p []byte) (int, error) {
	return w.ru.write(p)
}

func (ru *run) write(p []byte) (int, error) {
	room := max(ru.rt.cfg.MaxOutputBytes-ru.out.Len(), 0)
	var err error
	if len(p) > room {
		// The run ends with too_large however the guest goes on: ending
		// reads the cause even when the guest then exits cleanly.
		p, err = p[:room], errOutputLimit
		ru.cancel(errOutputLimit)
	}
	ru.out.Write(p)
	if ru.spec.Events != nil && len(p) > 0 {
		ru.spec.Events(Event{Kind: "output", Text: string(p)})
	}
	return len(p), err
}

// callError is the JSON a failed call leaves for result().
type callError struct {
	Code  mediator.Code `json:"code"`
	Error string        `json:"error"`
}

// dispatch runs one host function call and returns its i32 status.
func dispatch(ctx context.Context, h hostFunc, mod api.Module, stack []uint64) int32 {
	ru, _ := ctx.Value(runKey{}).(*run)
	if ru == nil {
		return -1 // called outside a run: nothing to do, nothing to reveal
	}
	switch h.name {
	case "abi_version":
		return ABIVersion
	case "result":
		ptr, capacity := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
		n := min(uint32(len(ru.pending)), capacity)
		if !mod.Memory().Write(ptr, ru.pending[:n]) {
			return -1
		}
		return int32(n)
	}
	if ru.calls++; ru.calls > ru.rt.cfg.MaxCallsPerRun {
		ru.cancel(errCallLimit)
		return ru.setError(errCallLimit)
	}
	if err := ru.ctx.Err(); err != nil {
		return ru.setError(mediator.Errorf(mediator.CodeTimeout, "the run is over"))
	}
	out, err := h.impl(ru, mod, stack)
	if err != nil {
		return ru.setError(err)
	}
	ru.pending = out
	return int32(len(out))
}

func (ru *run) setError(err error) int32 {
	b, _ := json.Marshal(callError{Code: mediator.CodeOf(err), Error: mediator.MessageOf(err)})
	ru.pending = b
	return -int32(len(b))
}
