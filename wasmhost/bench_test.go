package wasmhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
)

// BenchmarkCompile compares a cold compile of the probe (a 2.6 MB Go
// module) with loading it from the disk cache in a fresh Runtime, which is
// what each new host process does.
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	info := probeInfo(b)
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			r, _ := New(ctx, Config{})
			e, _ := r.engine(ctx, 256)
			if _, err := e.compile(ctx, "probe", probeWasm, info); err != nil {
				b.Fatal(err)
			}
			r.Close(ctx)
		}
	})
	b.Run("from disk cache", func(b *testing.B) {
		dir := b.TempDir()
		warm, _ := New(ctx, Config{CacheDir: dir})
		e, _ := warm.engine(ctx, 256)
		e.compile(ctx, "probe", probeWasm, info)
		warm.Close(ctx)
		for b.Loop() {
			r, _ := New(ctx, Config{CacheDir: dir})
			e, _ := r.engine(ctx, 256)
			if _, err := e.compile(ctx, "probe", probeWasm, info); err != nil {
				b.Fatal(err)
			}
			r.Close(ctx)
		}
	})
}

// probeInfo is what validate reads from the probe, which compile needs.
func probeInfo(b *testing.B) *moduleInfo {
	info, err := validate(probeWasm)
	if err != nil {
		b.Fatal(err)
	}
	return info
}

// BenchmarkRun times whole runs of a compiled module: instantiate, run,
// close. "go-probe" starts a Go runtime; "tiny" is a hand-made module.
func BenchmarkRun(b *testing.B) {
	f := newFixture(b)
	rec := f.install(b, "bench", probePerms, mediator.Capabilities{DOMAccess: mediator.DOMFull})
	rt := sharedRuntime()
	tiny := wmodule{start: []byte{0x01}}.bytes() // nop
	for _, c := range []struct {
		name, input string
		module      []byte
	}{
		{"tiny", "", tiny},
		{"go-probe print", "print x", probeWasm},
		{"go-probe 100 page reads", "", probeWasm},
	} {
		input := c.input
		if c.name == "go-probe 100 page reads" {
			for range 100 {
				input += "select h1\n"
			}
		}
		spec := f.spec(rec, c.module, input)
		spec.Events = nil
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := rt.Run(context.Background(), spec)
				if err != nil || res.Status != "ok" {
					b.Fatal(err, res.Error)
				}
			}
		})
	}
}

// rawEngine is wazero as an embedder with nothing between it and the
// guest would set it up, with the same RuntimeConfig as engine: the
// compilation cache, close on context done and the memory limit of the
// default maxMemory. hostModule, when not "", is a host module whose
// function "f" (i32, i32) -> i32 does nothing.
func rawEngine(b *testing.B, hostModule string) wazero.Runtime {
	ctx := context.Background()
	rc := wazero.NewRuntimeConfig().
		WithCompilationCache(wazero.NewCompilationCache()).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(uint32((mediator.DefaultMaxMemory + pageSize - 1) / pageSize))
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	b.Cleanup(func() { rt.Close(ctx) })
	if hostModule != "" {
		_, err := rt.NewHostModuleBuilder(hostModule).NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				stack[0] = 0
			}), []api.ValueType{i32, i32}, []api.ValueType{i32}).
			Export("f").Instantiate(ctx)
		if err != nil {
			b.Fatal(err)
		}
	}
	return rt
}

// rawRun instantiates compiled as Run does (anonymous, _start run,
// captured output) under an execution timeout, and closes it.
func rawRun(b *testing.B, rt wazero.Runtime, compiled wazero.CompiledModule) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mc := wazero.NewModuleConfig().WithName("").WithArgs("bench").
		WithStdin(bytes.NewReader(nil)).WithStdout(io.Discard).WithStderr(io.Discard).
		WithRandSource(rand.Reader)
	mod, err := rt.InstantiateModule(ctx, compiled, mc)
	if err != nil {
		b.Fatal(err)
	}
	mod.Close(ctx)
}

// BenchmarkRunTiny is one whole run of a module that does nothing: Run
// ("nmhost": hash, validate, link check, instantiate, close, result)
// beside wazero instantiating and closing the same compiled module under
// the same config and a timeout ("baseline").
func BenchmarkRunTiny(b *testing.B) {
	tiny := wmodule{start: []byte{0x01}}.bytes()
	var base float64
	b.Run("baseline", func(b *testing.B) {
		rt := rawEngine(b, "")
		compiled, err := rt.CompileModule(context.Background(), tiny)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			rawRun(b, rt, compiled)
		}
		base = testkit.NsPerOp(b)
	})
	b.Run("nmhost", func(b *testing.B) {
		f := newFixture(b)
		rec := f.install(b, "bench", nil, mediator.Capabilities{})
		rec.ModuleSHA256 = shaOf(tiny) // as the store records it
		spec := f.spec(rec, tiny, "")
		spec.Events = nil
		rt := sharedRuntime()
		b.ReportAllocs()
		for b.Loop() {
			res, err := rt.Run(context.Background(), spec)
			if err != nil || res.Status != "ok" {
				b.Fatal(err, res.Error)
			}
		}
		if base > 0 {
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		}
	})
}

// logCalls is how many host calls one run of logLoop makes.
const logCalls = 1000

// logLoop is a module whose _start calls module.name(0, 1) logCalls
// times in a loop, dropping each result: one byte of memory logged each
// time.
func logLoop(module, name string) []byte {
	body := slices.Concat(
		i32const(logCalls), []byte{0x21, 0x00}, // local.set 0
		[]byte{0x03, 0x40},                              // loop
		i32const(0), i32const(1), call(0), []byte{0x1a}, // call; drop
		[]byte{0x20, 0x00}, i32const(1), []byte{0x6b, 0x22, 0x00}, // local.get 0; i32.sub; local.tee 0
		[]byte{0x0d, 0x00}, // br_if 0
		[]byte{0x0b},       // end loop
	)
	return wmodule{
		imports: []wimport{{module: module, name: name, params: []byte{0x7f, 0x7f}, results: []byte{0x7f}}},
		memMin:  1, locals: []uint32{1}, start: body,
	}.bytes()
}

// BenchmarkLogCall is the restricted API's log, called from wasm through
// dispatch and the real policy over a real store ("nmhost"), beside a
// host function that does nothing, called the same way from raw wazero
// ("baseline"). Each run makes logCalls calls; ns/call is the time per
// call with the run's own cost spread over them.
func BenchmarkLogCall(b *testing.B) {
	var base float64
	b.Run("baseline", func(b *testing.B) {
		rt := rawEngine(b, "env")
		compiled, err := rt.CompileModule(context.Background(), logLoop("env", "f"))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			rawRun(b, rt, compiled)
		}
		base = testkit.NsPerOp(b) / logCalls
		b.ReportMetric(base, "ns/call")
	})
	b.Run("nmhost", func(b *testing.B) {
		f := newFixture(b)
		rec := f.install(b, "bench", []mediator.Permission{mediator.PermConsoleLog}, mediator.Capabilities{})
		module := logLoop(HostModule, "log")
		rec.ModuleSHA256 = shaOf(module)
		spec := f.spec(rec, module, "")
		spec.Events = nil
		rt := sharedRuntime()
		for b.Loop() {
			// As run-agent runs it: log records may trail the calls, and
			// the run waits for all of them before it reports.
			ctx, barrier := context.Background(), mediator.NewAuditBarrier()
			spec.Authorizer = f.policy.WithBarrier(barrier)
			res, err := rt.Run(ctx, spec)
			if err != nil || res.Status != "ok" || res.Calls != logCalls {
				b.Fatal(err, res.Error, res.Calls)
			}
			if err := barrier.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
		perCall := testkit.NsPerOp(b) / logCalls
		b.ReportMetric(perCall, "ns/call")
		if base > 0 {
			b.ReportMetric(perCall/base, "x-baseline")
		}
	})
}
