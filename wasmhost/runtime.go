package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// Config configures a Runtime. The zero value is safe.
type Config struct {
	// CacheDir keeps compiled modules across processes (the host's data
	// dir holds it as wasm-cache/). "" keeps them in memory only. A host
	// process is started per browser connection, so without the disk cache
	// every process would compile every module again.
	CacheDir string
	// MaxCallsPerRun bounds restricted API calls in one run. Default 10,000:
	// far above what a page helper needs, low enough that a loop of calls
	// ends long before it floods the audit trail.
	MaxCallsPerRun int
	// MaxOutputBytes bounds what one run may print (stdout, stderr, log).
	// Default 1 MiB: it must fit one native-messaging reply.
	MaxOutputBytes int
	// CompileTimeout bounds compiling one module, apart from any run's
	// executionTimeout: compiling is not running, and a first compile on
	// a busy machine may take far longer than the run will. Default
	// DefaultCompileTimeout; past it the run ends with compile_timeout.
	CompileTimeout time.Duration
	// MaxGuestMemory bounds the sum of the maxMemory of concurrent runs
	// (budget.go). Default DefaultMaxGuestMemory.
	MaxGuestMemory int64
}

// DefaultCompileTimeout is Config.CompileTimeout's default: a Go agent
// compiles in one or two seconds on an idle laptop and in tens of seconds
// on a loaded one under the race detector; two minutes leaves room for
// that and still ends a module that will not compile in any sensible time
// (the body limits bound what it costs per function).
const DefaultCompileTimeout = 2 * time.Minute

const (
	defaultMaxCalls  = 10_000
	defaultMaxOutput = 1 << 20
	pageSize         = 65536
)

// Runtime compiles and runs agent modules. One per host process; runs are
// isolated instances and may proceed concurrently.
type Runtime struct {
	cfg    Config
	cache  wazero.CompilationCache
	budget memBudget // guest memory reserved by runs in progress

	mu      sync.Mutex
	engines map[engineKey]*engine // by memory limit in pages and kind
	closed  bool

	// Compiles run on their own goroutines (see engine.compile). Close
	// ends them at their next function through closing and waits for
	// them, so none touches an engine after it is closed.
	closing  context.Context
	stop     context.CancelFunc
	compiles sync.WaitGroup

	// compileHook, when set (by tests, before the first run), is called
	// just before a module is compiled, on the compile's goroutine: it lets
	// a test hold one compile still and watch other runs go on.
	compileHook func(sha string)
}

// engine is one wazero runtime with the host modules instantiated. The
// memory limit is a runtime setting in wazero, so each distinct limit has
// its own engine; they share the compilation cache.
type engine struct {
	key      engineKey
	rt       wazero.Runtime
	hook     func(sha string)
	closing  context.Context
	compiles *sync.WaitGroup
	// mu guards the maps and closed only; nobody compiles while holding
	// it, so a slow compile of one module never holds up runs of others.
	mu        sync.Mutex
	compiled  map[string]wazero.CompiledModule // by module sha256
	compiling map[string]*compileCall          // in progress, by module sha256
	closed    bool
}

// compileCall is one compile in progress; runs of the same module wait for
// it instead of compiling it again.
type compileCall struct {
	done chan struct{}
	m    wazero.CompiledModule
	err  error
	// expired: the compiling run's deadline ended it, not the module.
	expired bool
}

// compileWorkers is how many goroutines compile one module. wazero checks
// the context between functions only when it compiles with more than one,
// and that check is what ends a compile at the run's deadline.
const compileWorkers = 2

// New returns a Runtime.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.MaxCallsPerRun <= 0 {
		cfg.MaxCallsPerRun = defaultMaxCalls
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = defaultMaxOutput
	}
	if cfg.CompileTimeout <= 0 {
		cfg.CompileTimeout = DefaultCompileTimeout
	}
	r := &Runtime{cfg: cfg, engines: map[engineKey]*engine{}}
	r.closing, r.stop = context.WithCancel(context.WithoutCancel(ctx))
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasmhost: compilation cache %s: %w", cfg.CacheDir, err)
		}
		r.cache = c
	} else {
		r.cache = wazero.NewCompilationCache()
	}
	return r, nil
}

// Close releases every engine and the cache.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.stop()
	for _, e := range r.engines {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
	}
	r.compiles.Wait()
	var errs []error
	for _, e := range r.engines {
		errs = append(errs, e.rt.Close(ctx))
	}
	r.engines = nil
	errs = append(errs, r.cache.Close(ctx))
	return errors.Join(errs...)
}

// errRuntimeClosed is the host's own failure, not the module's.
var errRuntimeClosed = errors.New("wasmhost: runtime closed")

// engine is the optimizing compiler's engine for a memory limit.
func (r *Runtime) engine(ctx context.Context, pages uint32) (*engine, error) {
	return r.engineOf(ctx, engineKey{pages: pages})
}

func (r *Runtime) engineOf(ctx context.Context, key engineKey) (*engine, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errRuntimeClosed
	}
	if e, ok := r.engines[key]; ok {
		return e, nil
	}
	rc := runtimeConfig(key).WithCompilationCache(r.cache)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	// The WASI functions that take a name are listened to: the refusals
	// their own resolution makes are recorded (wasipath.go).
	if _, err := wasi_snapshot_preview1.Instantiate(experimental.WithFunctionListenerFactory(ctx, wasiPathListeners{}), rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasmhost: wasi: %w", err)
	}
	b := rt.NewHostModuleBuilder(HostModule)
	for _, h := range hostFuncs {
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				stack[0] = api.EncodeI32(dispatch(ctx, h, mod, stack))
			}), h.params, []api.ValueType{i32}).
			Export(h.name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("wasmhost: %s: %w", HostModule, err)
	}
	e := &engine{key: key, rt: rt, hook: r.compileHook, closing: r.closing, compiles: &r.compiles, compiled: map[string]wazero.CompiledModule{}, compiling: map[string]*compileCall{}}
	r.engines[key] = e
	return e, nil
}

// Compiled reports whether a run of rec would find its module compiled
// already (by rec.ModuleSHA256, under its memory limit): such a run needs
// no module bytes, so the caller may skip reading them from the store.
func (r *Runtime) Compiled(rec mediator.AgentRecord) bool {
	_, _, ok := r.lookupCompiled(pagesFor(rec.Profile.Capabilities.MaxMemory), rec.ModuleSHA256)
	return ok
}

// pagesFor is the memory limit in wasm pages for a maxMemory in bytes
// (0: the default).
func pagesFor(maxMem int64) uint32 {
	if maxMem <= 0 {
		maxMem = mediator.DefaultMaxMemory
	}
	return uint32((maxMem + pageSize - 1) / pageSize)
}

// lookup returns the module compiled under sha, if this engine has one.
func (e *engine) lookup(sha string) (wazero.CompiledModule, bool) {
	if sha == "" {
		return nil, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m, ok := e.compiled[sha]
	return m, ok
}

// compile returns the compiled module for sha, compiling it (or loading it
// from the cache) once per engine. ctx carries the run's deadline: the
// compile is part of the run's executionTimeout. The compile itself runs on
// its own goroutine, so the run returns at its deadline even while wazero
// finishes the function it is in (it stops at the next one; the body limits
// in validate.go bound how long one function takes). Runs of the same
// module wait for a compile in progress; if its run's deadline ended it,
// the next waiter with time left compiles again.
//
// module is compiled as info.capTables makes it; the copy that can take is
// made only when a compile is needed, not on every run.
func (e *engine) compile(ctx context.Context, sha string, module []byte, info *moduleInfo) (wazero.CompiledModule, error) {
	for {
		e.mu.Lock()
		if m, ok := e.compiled[sha]; ok {
			e.mu.Unlock()
			return m, nil
		}
		c, ok := e.compiling[sha]
		if !ok {
			if e.closed {
				e.mu.Unlock()
				return nil, errRuntimeClosed
			}
			c = &compileCall{done: make(chan struct{})}
			e.compiling[sha] = c
			e.compiles.Add(1)
			go e.compileNow(ctx, sha, module, info, c)
		}
		e.mu.Unlock()
		select {
		case <-c.done:
			if c.expired && ctx.Err() == nil {
				continue
			}
			return c.m, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// compileNow compiles for the compileCall c, under the deadline of the run
// that started it, or until the Runtime closes.
func (e *engine) compileNow(ctx context.Context, sha string, module []byte, info *moduleInfo, c *compileCall) {
	defer e.compiles.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.closing, cancel)()
	if e.hook != nil {
		e.hook(sha)
	}
	m, err := e.rt.CompileModule(experimental.WithCompilationWorkers(ctx, compileWorkers), info.capTables(module))
	e.mu.Lock()
	c.m, c.err = m, err
	if err != nil && ctx.Err() != nil {
		c.m, c.err, c.expired = nil, ctx.Err(), true
		if e.closing.Err() != nil {
			c.err = errRuntimeClosed
		}
	}
	delete(e.compiling, sha)
	if c.err == nil {
		e.compiled[sha] = c.m
	}
	e.mu.Unlock()
	close(c.done)
}
