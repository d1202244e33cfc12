package wasmhost

import (
	"context"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// Hand-made modules that attack the host rather than the API: declarations
// that cost memory or compile time out of proportion to their size, limits
// passed just before a clean exit, instances left open.

// runHostile runs module once as an agent granted probePerms.
func runHostile(t *testing.T, rt *Runtime, module []byte, caps mediator.Capabilities) (Result, *fixture) {
	t.Helper()
	f := newFixture(t)
	rec := f.install(t, "hostile", probePerms, caps)
	res, err := rt.Run(context.Background(), f.spec(rec, module, ""))
	if err != nil {
		t.Fatal(err)
	}
	return res, f
}

func nops(n int) []byte { return make([]byte, n) } // 0x00 is unreachable; only sizes matter here

// TestModuleLimits: each module declares one thing past a limit and is
// refused with module_limits, a sentence naming the limit, before wazero
// sees it.
func TestModuleLimits(t *testing.T) {
	i32 := []byte{0x7f}
	manyImports := make([]wimport, maxImports+1)
	for i := range manyImports {
		manyImports[i] = wimport{module: wasiModule, name: "sched_yield", results: i32}
	}
	manyElems := make([][]byte, maxElemSegments+1)
	for i := range manyElems {
		manyElems[i] = elemSeg(0, 0)
	}
	manyData := make([][]byte, maxDataSegments+1)
	for i := range manyData {
		manyData[i] = dataSeg(0)
	}
	table := []wtable{{min: 1, max: 1}}
	cases := []struct {
		name   string
		module wmodule
		want   string // in the error
	}{
		{"100,000,000 locals", wmodule{locals: []uint32{100_000_000}}, "locals"},
		{"locals that wrap 32 bits", wmodule{locals: []uint32{1, 0xffff_ffff, 0xffff_ffff}}, "locals"},
		{"locals times body", wmodule{funcs: 1, funcLocals: 1_000, funcBody: nops(20 << 10)}, "locals times body"},
		{"locals of all functions", wmodule{funcs: 60, funcLocals: 9_000}, "in all"},
		{"body over the limit", wmodule{start: nops(maxBodyBytes)}, "body"},
		{"functions", wmodule{funcs: maxFunctions}, "functions"},
		{"table maximum", wmodule{tables: []wtable{{min: 1, max: 10_000_000}}}, "table"},
		{"table initial size", wmodule{tables: []wtable{{min: maxTableEntries + 1}}}, "table"},
		{"tables", wmodule{tables: []wtable{{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}}, "tables"},
		{"types", wmodule{types: maxTypes}, "types"},
		{"imports", wmodule{imports: manyImports}, "imports"},
		{"globals", wmodule{globals: maxGlobals + 1}, "globals"},
		{"exports", wmodule{exports: maxExports}, "exports"},
		{"element segments", wmodule{tables: table, elems: manyElems}, "element segments"},
		{"table elements", wmodule{tables: table, elems: [][]byte{elemSeg(0, maxElemItems+1)}}, "table elements"},
		{"data segments", wmodule{memMin: 1, data: manyData}, "data segments"},
		{"data bytes", wmodule{memMin: 1, data: [][]byte{dataSeg(maxDataBytes + 1)}}, "data segments hold"},
		{"module size", wmodule{custom: maxModuleBytes}, "bytes; the limit"},
		{"a long name", wmodule{imports: []wimport{{module: strings.Repeat("m", maxNameBytes+1), name: "f"}}}, "name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			res, _ := runHostile(t, sharedRuntime(), c.module.bytes(), mediator.Capabilities{})
			if res.Code != mediator.CodeModuleLimits || !strings.Contains(res.Error, c.want) || !strings.Contains(res.Error, "limit") {
				t.Fatalf("result %s %q; want module_limits naming %q", res.Code, res.Error, c.want)
			}
			t.Logf("refused in %v: %s", time.Since(start), res.Error)
		})
	}
}

// TestImportsCheckedFirst: a module that may not link is refused as such,
// and logged, even when it also breaks a limit or would not compile, and
// without being compiled.
func TestImportsCheckedFirst(t *testing.T) {
	system := []wimport{{module: "env", name: "system", params: []byte{0x7f}, results: []byte{0x7f}}}
	cases := []struct {
		name   string
		locals []uint32
	}{
		{"and 100,000,000 locals", []uint32{100_000_000}},
		{"and locals past 32 bits", []uint32{1, 0xffff_ffff, 0xffff_ffff}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, f := runHostile(t, sharedRuntime(), wmodule{imports: system, locals: c.locals}.bytes(), mediator.Capabilities{})
			if res.Code != mediator.CodeImportNotGranted || !strings.Contains(res.Error, "env.system") {
				t.Fatalf("result %s %q; want import_not_granted naming env.system", res.Code, res.Error)
			}
			page, _ := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "hostile"})
			if len(page.Denials) != 1 || page.Denials[0].Context.Details["import"] != "env.system" {
				t.Fatalf("denial log %+v", page.Denials)
			}
		})
	}
}

// growTable is _start's body: table.grow(ref.func 0, delta), then trap
// unless the result is want.
func growTable(delta, want int32) []byte {
	b := []byte{0xd2, 0x00} // ref.func 0 (_start)
	b = append(append(b, i32const(delta)...), 0xfc, 0x0f, 0x00)
	return append(append(b, i32const(want)...), 0x47 /* i32.ne */, 0x04, 0x40, 0x00 /* if unreachable */, 0x0b)
}

// TestTableGrowth: tables count against nothing in wazero's memory limit,
// so their size is bounded here. A table without a maximum (what Go's
// linker writes) gets its initial size as maximum: growing it by ten
// million entries, which the host once did, now fails inside the guest
// (-1) and the run goes on.
func TestTableGrowth(t *testing.T) {
	cases := []struct {
		name   string
		tables []wtable
		start  []byte
	}{
		{"no maximum: capped at the initial size", []wtable{{min: 1}}, growTable(10_000_000, -1)},
		{"no maximum: not even one more", []wtable{{min: 8}}, growTable(1, -1)},
		{"maximum: grows up to it", []wtable{{min: 1, max: 100}}, append(growTable(99, 1), growTable(1, -1)...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := wmodule{tables: c.tables, start: c.start}.bytes()
			res, _ := runHostile(t, sharedRuntime(), m, mediator.Capabilities{MaxMemory: 64 << 10, ExecutionTimeout: 1000})
			if res.Status != "ok" {
				t.Fatalf("result %s %q", res.Code, res.Error)
			}
		})
	}
}

// iovecs writes n iovec entries at address 0, each 100,000 bytes from 1024.
func iovecs(n int) []byte {
	b := make([]byte, 8*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[8*i:], 1024)
		binary.LittleEndian.PutUint32(b[8*i+4:], 100_000)
	}
	return append(append([]byte{0x00, 0x41, 0x00, 0x0b}, uleb(uint32(len(b)))...), b...)
}

// TestLimitThenCleanExit: a run that passes its output or call limit and
// then exits cleanly, by proc_exit(0) or by returning, ends with the
// limit's code, not ok.
func TestLimitThenCleanExit(t *testing.T) {
	fdWrite := wimport{module: wasiModule, name: "fd_write", params: []byte{0x7f, 0x7f, 0x7f, 0x7f}, results: []byte{0x7f}}
	procExit := wimport{module: wasiModule, name: "proc_exit", params: []byte{0x7f}}
	input := wimport{module: HostModule, name: "input", results: []byte{0x7f}}
	// fd_write(1, iovs=0, 12 iovecs of 100,000 bytes, nwritten=512): 1.2 MB
	// in one call, over the 1 MiB cap.
	flood := append(append(append(append(i32const(1), i32const(0)...), i32const(12)...), i32const(512)...), call(0)...)
	flood = append(flood, 0x1a) // drop the errno
	exit0 := append(i32const(0), call(1)...)
	// 25 input() calls, over smallRuntime's 20, then on.
	var calls []byte
	for range 25 {
		calls = append(append(calls, call(0)...), 0x1a)
	}
	cases := []struct {
		name string
		m    wmodule
		rt   *Runtime
		want mediator.Code
	}{
		{"output, then proc_exit(0)", wmodule{imports: []wimport{fdWrite, procExit}, memMin: 2, data: [][]byte{iovecs(12)}, start: append(flood, exit0...)}, nil, mediator.CodeTooLarge},
		{"output, then return", wmodule{imports: []wimport{fdWrite, procExit}, memMin: 2, data: [][]byte{iovecs(12)}, start: flood}, nil, mediator.CodeTooLarge},
		{"calls, then proc_exit(0)", wmodule{imports: []wimport{input, procExit}, start: append(calls, exit0...)}, smallRuntime(t), mediator.CodeCallLimit},
		{"calls, then return", wmodule{imports: []wimport{input}, start: calls}, smallRuntime(t), mediator.CodeCallLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := c.rt
			if rt == nil {
				rt = sharedRuntime()
			}
			res, _ := runHostile(t, rt, c.m.bytes(), mediator.Capabilities{})
			if res.Code != c.want {
				t.Fatalf("result %q (%s); want %s", res.Status, res.Error, c.want)
			}
			if c.want == mediator.CodeTooLarge && len(res.Output) != defaultMaxOutput {
				t.Fatalf("output of %d bytes; want exactly the %d-byte cap", len(res.Output), defaultMaxOutput)
			}
		})
	}
}

// TestInstancesAreClosed: 5,000 runs of a module whose _start returns
// without proc_exit leave no instance behind. Each one left open kept its
// memory and about 5 KB more (5,000 runs: over 300 MB).
func TestInstancesAreClosed(t *testing.T) {
	rt, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	f := newFixture(t)
	rec := f.install(t, "returns", probePerms, mediator.Capabilities{})
	spec := f.spec(rec, wmodule{memMin: 1, start: []byte{0x01}}.bytes(), "")
	spec.Events = nil
	run := func() {
		if res, err := rt.Run(context.Background(), spec); err != nil || res.Status != "ok" {
			t.Fatalf("%v %+v", err, res)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	run() // compiles
	before := heap()
	for range 5_000 {
		run()
	}
	after := heap()
	grown := int64(after) - int64(before)
	t.Logf("heap %d -> %d bytes after 5,000 runs", before, after)
	if grown > 64<<20 {
		t.Fatalf("the heap grew by %d MB over 5,000 runs: instances are kept", grown>>20)
	}
}
