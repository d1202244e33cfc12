package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentgate/nmhost/internal/testwasm"
)

// A tiny agent, assembled here instead of compiled: its _start calls
// restricted_api functions in order, each with string arguments passed as
// (pointer, length) pairs into its one page of memory, and drops each
// result. It links and runs in microseconds, needs no toolchain for
// wasip1, and imports exactly the functions it calls, so a script can aim
// at one permission at a time. The examples built with Go (run_test.go,
// the demo) cover real agents.
type wasmCall struct {
	fn   string   // a restricted_api function: log, fetch, page_get_text, ...
	args []string // its string arguments
}

// tinyAgents are written into every script's $WORK/agents.
var tinyAgents = map[string][]wasmCall{
	// hello: console.log only.
	"hello.wasm": {{"log", []string{"hello from a tiny agent"}}},
	// fetch: logs, then fetches a host no profile allows.
	"fetch.wasm": {{"log", []string{"fetching"}}, {"fetch", []string{`{"url":"http://blocked.test/"}`}}},
	// page: reads the page's text, then writes its heading.
	"page.wasm": {{"page_get_text", nil}, {"page_set_element_text", []string{"h1", "changed"}}},
}

func writeTinyAgents(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, calls := range tinyAgents {
		if err := os.WriteFile(filepath.Join(dir, name), assemble(calls), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// assemble encodes a module (WebAssembly core spec, binary format).
func assemble(calls []wasmCall) []byte {
	var imports []string // function names, in import order
	arity := map[string]int{}
	for _, c := range calls {
		if !slices.Contains(imports, c.fn) {
			imports = append(imports, c.fn)
			arity[c.fn] = 2 * len(c.args)
		}
	}
	// Types: one per parameter count (all i32, returning i32), then () -> ().
	var counts []int
	for _, f := range imports {
		if !slices.Contains(counts, arity[f]) {
			counts = append(counts, arity[f])
		}
	}
	var types [][]byte
	for _, n := range counts {
		t := []byte{0x60}
		t = append(t, uleb(uint32(n))...)
		t = append(t, bytes.Repeat([]byte{0x7f}, n)...)
		types = append(types, append(t, 1, 0x7f))
	}
	types = append(types, []byte{0x60, 0, 0})
	startType := len(types) - 1

	var imps [][]byte
	for _, f := range imports {
		e := name("restricted_api")
		e = append(e, name(f)...)
		e = append(e, 0x00)
		imps = append(imps, append(e, uleb(uint32(slices.Index(counts, arity[f])))...))
	}

	var data []byte
	var code []byte
	for _, c := range calls {
		for _, a := range c.args {
			code = append(code, 0x41)
			code = append(code, sleb(int32(len(data)))...)
			code = append(code, 0x41)
			code = append(code, sleb(int32(len(a)))...)
			data = append(data, a...)
		}
		code = append(code, 0x10)
		code = append(code, uleb(uint32(slices.Index(imports, c.fn)))...)
		code = append(code, 0x1a) // drop
	}
	body := append([]byte{0}, code...) // no locals
	body = append(body, 0x0b)

	start := uint32(len(imports))
	exports := [][]byte{
		append(append(name("_start"), 0x00), uleb(start)...),
		append(name("memory"), 0x02, 0x00),
	}
	seg := []byte{0x00, 0x41, 0x00, 0x0b} // active, memory 0, at offset 0
	seg = append(seg, uleb(uint32(len(data)))...)
	seg = append(seg, data...)

	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, vec(types))...)
	out = append(out, section(2, vec(imps))...)
	out = append(out, section(3, vec([][]byte{uleb(uint32(startType))}))...)
	out = append(out, section(5, vec([][]byte{{0x00, 0x01}}))...) // one page, no maximum
	out = append(out, section(7, vec(exports))...)
	out = append(out, section(10, vec([][]byte{append(uleb(uint32(len(body))), body...)}))...)
	out = append(out, section(11, vec([][]byte{seg}))...)
	return out
}

// The binary format's pieces, from the one encoder the tests share.
var (
	section = testwasm.Section
	vec     = testwasm.Vec
	name    = testwasm.Name
	uleb    = testwasm.ULEB128
	sleb    = testwasm.SLEB128
)
