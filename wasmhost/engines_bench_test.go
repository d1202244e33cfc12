//go:build unix

package wasmhost

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// BenchmarkCompileLargeBody compiles a module with one 48 KiB function of
// flat loops, just over compilerBodyLimit: with raw wazero's optimizing
// compiler (what every module got before engines.go), with raw wazero's
// interpreter (the same configuration nmhost now uses for it), and through
// nmhost (validate, the engine choice, the compile goroutine).
func BenchmarkCompileLargeBody(b *testing.B) {
	ctx := context.Background()
	module := wmodule{funcs: 1, funcLocals: 1, funcBody: flatLoops(48<<10, 0), start: []byte{0x01}}.bytes()
	raw := func(interp bool) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				rt := wazero.NewRuntimeWithConfig(ctx, runtimeConfig(engineKey{pages: 256, interp: interp}))
				if _, err := rt.CompileModule(experimental.WithCompilationWorkers(ctx, compileWorkers), module); err != nil {
					b.Fatal(err)
				}
				rt.Close(ctx)
			}
		}
	}
	b.Run("raw wazero compiler", raw(false))
	b.Run("raw wazero interpreter", raw(true))
	b.Run("nmhost", func(b *testing.B) {
		for b.Loop() {
			r, _ := New(ctx, Config{})
			info, err := validate(module)
			if err != nil {
				b.Fatal(err)
			}
			interp, err := useInterpreter(info)
			if err != nil || !interp {
				b.Fatal(interp, err)
			}
			e, _ := r.engineOf(ctx, engineKey{pages: 256, interp: interp})
			if _, err := e.compile(ctx, "large", module, info); err != nil {
				b.Fatal(err)
			}
			r.Close(ctx)
		}
	})
}
