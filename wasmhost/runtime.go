package wasmhost

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
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
}

const (
	defaultMaxCalls  = 10_000
	defaultMaxOutput = 1 << 20
	pageSize         = 65536
)

// Runtime compiles and runs agent modules. One per host process; runs are
// isolated instances and may proceed concurrently.
type Runtime struct {
	cfg   Config
	cache wazero.CompilationCache

	mu      sync.Mutex
	engines map[uint32]*engine // by memory limit in pages
	closed  bool
}

// engine is one wazero runtime with the host modules instantiated. The
// memory limit is a runtime setting in wazero, so each distinct limit has
// its own engine; they share the compilation cache.
type engine struct {
	rt       wazero.Runtime
	mu       sync.Mutex
	compiled map[string]wazero.CompiledModule // by module sha256
}

// New returns a Runtime.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.MaxCallsPerRun <= 0 {
		cfg.MaxCallsPerRun = defaultMaxCalls
	}
	if cfg.MaxOutputBytes <= 0 {
		cfg.MaxOutputBytes = defaultMaxOutput
	}
	r := &Runtime{cfg: cfg, engines: map[uint32]*engine{}}
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
	var errs []error
	for _, e := range r.engines {
		errs = append(errs, e.rt.Close(ctx))
	}
	r.engines = nil
	errs = append(errs, r.cache.Close(ctx))
	return errors.Join(errs...)
}

func (r *Runtime) engine(ctx context.Context, pages uint32) (*engine, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("wasmhost: runtime closed")
	}
	if e, ok := r.engines[pages]; ok {
		return e, nil
	}
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(r.cache).
		WithCloseOnContextDone(true). // the execution timeout interrupts loops
		WithMemoryLimitPages(pages)
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
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
	e := &engine{rt: rt, compiled: map[string]wazero.CompiledModule{}}
	r.engines[pages] = e
	return e, nil
}

// compile returns the compiled module for sha, compiling it (or loading it
// from the cache) once per engine.
func (e *engine) compile(ctx context.Context, sha string, module []byte) (wazero.CompiledModule, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := e.compiled[sha]; ok {
		return m, nil
	}
	m, err := e.rt.CompileModule(ctx, module)
	if err != nil {
		return nil, err
	}
	e.compiled[sha] = m
	return m, nil
}
