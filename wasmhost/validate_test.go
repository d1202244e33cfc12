package wasmhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

var header = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// mod is a module header followed by raw sections.
func mod(sections ...[]byte) []byte {
	return append(append([]byte{}, header...), bytes.Join(sections, nil)...)
}

// TestValidateMalformed: bytes that are not a module are invalid_module,
// never a panic and never a limit.
func TestValidateMalformed(t *testing.T) {
	void := []byte{0x60, 0x00, 0x00}
	body := func(b ...byte) []byte { return append(uleb(uint32(len(b))), b...) }
	cases := []struct {
		name   string
		module []byte
	}{
		{"empty", nil},
		{"not wasm", []byte("#!/bin/sh\nrm -rf /\n")},
		{"version 2", []byte{0x00, 'a', 's', 'm', 0x02, 0x00, 0x00, 0x00}},
		{"section past the end", mod([]byte{0x01, 0x10, 0x00})},
		{"number over 5 bytes", mod([]byte{0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})},
		{"number over 32 bits", mod([]byte{0x01, 0xff, 0xff, 0xff, 0xff, 0x1f})},
		{"unknown section", mod([]byte{13, 0x00})},
		{"section out of order", mod(section(3, nil), section(1, nil))},
		{"repeated section", mod(section(1, nil), section(1, nil))},
		{"bytes left over in a section", mod([]byte{0x01, 0x02, 0x00, 0x00})},
		{"more items than bytes", mod([]byte{0x01, 0x03, 0xe8, 0x07, 0x60})},
		{"functions without bodies", mod(section(1, [][]byte{void}), section(3, [][]byte{{0x00}}))},
		{"body without end", mod(section(1, [][]byte{void}), section(3, [][]byte{{0x00}}), section(10, [][]byte{body(0x00, 0x01)}))},
		{"function of a missing type", mod(section(1, [][]byte{void}), section(3, [][]byte{{0x05}}), section(10, [][]byte{body(0x00, 0x0b)}))},
		{"unknown value type", mod(section(1, [][]byte{{0x60, 0x01, 0x40, 0x00}}))},
		{"two-instruction constant", mod(section(6, [][]byte{{0x7f, 0x00, 0x41, 0x00, 0x41, 0x00, 0x0b}}))},
		{"global mutability 2", mod(section(6, [][]byte{{0x7f, 0x02, 0x41, 0x00, 0x0b}}))},
		{"data count mismatch", mod(section(5, [][]byte{limits(1, 0)}), []byte{12, 0x01, 0x02}, section(11, [][]byte{dataSeg(1)}))},
		{"data segment kind 3", mod(section(11, [][]byte{{0x03}}))},
		{"element segment kind 8", mod(section(9, [][]byte{{0x08}}))},
		{"table maximum below initial", mod(section(4, [][]byte{{0x70, 0x01, 0x05, 0x02}}))},
		{"table of i32", mod(section(4, [][]byte{{0x7f, 0x00, 0x01}}))},
		{"shared memory", mod(section(5, [][]byte{{0x03, 0x01, 0x01}}))},
		{"64-bit memory", mod(section(5, [][]byte{{0x04, 0x01}}))},
		{"unknown import kind", mod(section(2, [][]byte{append(append(name("env"), name("x")...), 0x04)}))},
		{"import of a missing type", mod(section(1, [][]byte{void}), section(2, [][]byte{append(append(name("env"), name("x")...), 0x00, 0x05)}))},
		{"name not UTF-8", mod(section(7, [][]byte{{0x01, 0xff, 0x00, 0x00}}))},
		{"custom section name past its end", mod([]byte{0x00, 0x02, 0x05, 'a'})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := validate(c.module)
			if code := mediator.CodeOf(err); code != mediator.CodeInvalidModule {
				t.Fatalf("code %q (%v); want invalid_module", code, err)
			}
		})
	}
}

// TestValidateAcceptsGoAgent: a real Go agent passes, its imports are read,
// and its one table, declared by Go's linker without a maximum, is capped
// at its initial size in a module that still validates and compiles.
func TestValidateAcceptsGoAgent(t *testing.T) {
	info, err := validate(probeWasm)
	if err != nil {
		t.Fatal(err)
	}
	if !info.importsRead || len(info.imports) == 0 || len(info.uncapped) != 1 {
		t.Fatalf("imports read %v, %d imports, %d uncapped tables", info.importsRead, len(info.imports), len(info.uncapped))
	}
	for _, im := range info.imports {
		if (im.module != HostModule && im.module != wasiModule) || im.kind != importFunc {
			t.Fatalf("import %+v", im)
		}
	}
	capped := info.capTables(probeWasm)
	again, err := validate(capped)
	if err != nil || len(again.uncapped) != 0 || len(again.imports) != len(info.imports) {
		t.Fatalf("capped module: %v, %d uncapped tables", err, len(again.uncapped))
	}
	if got := capped[again.tableSec[1]:again.tableSec[2]]; got[2] != 0x01 || !bytes.Equal(got[3:5], got[5:7]) {
		t.Fatalf("capped table section % x; want flag 1 and maximum = initial", got)
	}
}

// fuzzRuntime compiles what FuzzValidate accepts, with the host's settings.
var fuzzRuntime = sync.OnceValue(func() wazero.Runtime {
	cfg := wazero.NewRuntimeConfig().WithMemoryLimitPages(16).WithCloseOnContextDone(true)
	return wazero.NewRuntimeWithConfig(context.Background(), cfg)
})

// FuzzValidate: validate never panics, refuses only with its two codes, and
// whatever it accepts, capped, wazero decodes, compiles and instantiates
// (when nothing is imported) without crashing.
func FuzzValidate(f *testing.F) {
	f.Add(wmodule{start: []byte{0x01}}.bytes())
	f.Add(wmodule{tables: []wtable{{min: 1}}, start: growTable(10, -1)}.bytes())
	f.Fuzz(func(t *testing.T, module []byte) {
		info, err := validate(module)
		if err != nil {
			if code := mediator.CodeOf(err); code != mediator.CodeInvalidModule && code != mediator.CodeModuleLimits {
				t.Fatalf("refused with %q: %v", code, err)
			}
			return
		}
		if !info.importsRead {
			t.Fatal("accepted without reading the imports")
		}
		capped := info.capTables(module)
		if again, err := validate(capped); err != nil || len(again.uncapped) != 0 {
			t.Fatalf("the capped module: %v, %d tables still uncapped", err, len(again.uncapped))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		rt := fuzzRuntime()
		compiled, err := rt.CompileModule(experimental.WithCompilationWorkers(ctx, compileWorkers), capped)
		if err != nil {
			return
		}
		defer compiled.Close(context.Background())
		if len(info.imports) > 0 {
			return
		}
		runCtx, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		defer stop()
		if m, err := rt.InstantiateModule(runCtx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions()); err == nil {
			m.Close(context.Background())
		}
	})
}

// fetcherWasm is examples/agents/fetcher built for wasip1, for the benchmark.
var fetcherWasm = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build(filepath.Join("..", "examples", "agents", "fetcher"))
})

// BenchmarkValidate times validate on a real Go agent (3.3 MB) beside the
// sha256 every run computes over the same bytes.
func BenchmarkValidate(b *testing.B) {
	module, err := fetcherWasm()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("validate", func(b *testing.B) {
		b.SetBytes(int64(len(module)))
		for b.Loop() {
			if _, err := validate(module); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate and cap tables", func(b *testing.B) {
		b.SetBytes(int64(len(module)))
		for b.Loop() {
			info, err := validate(module)
			if err != nil {
				b.Fatal(err)
			}
			info.capTables(module)
		}
	})
	b.Run("sha256 baseline", func(b *testing.B) {
		b.SetBytes(int64(len(module)))
		for b.Loop() {
			sha256.Sum256(module)
		}
	})
}
