package wasmhost

import (
	"context"
	"testing"

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
