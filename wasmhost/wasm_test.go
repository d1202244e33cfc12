package wasmhost

import (
	"fmt"

	"github.com/agentgate/nmhost/internal/testwasm"
)

// A minimal WebAssembly binary encoder for hand-made hostile modules: each
// fixture is a few bytes whose every part the test spells out.

type wimport struct {
	module, name  string
	params        []byte // value types: 0x7f i32, 0x7e i64
	results       []byte
	memory        bool // import a memory instead of a function
	memMin, memMx uint32
	table, global bool // import a funcref table or an immutable i32 global
}

// wtable is a funcref table; max 0 declares no maximum.
type wtable struct{ min, max uint32 }

type wmodule struct {
	imports []wimport
	tables  []wtable
	memMin  uint32   // pages of the module's own memory (0: none)
	memMax  uint32   // 0: no maximum
	locals  []uint32 // local declarations of "_start": each a count of i32 locals
	start   []byte   // body of the exported "_start" (without locals and end)
	noStart bool     // export nothing: no entry point
	// Padding in bulk, for the limits: more function types, functions
	// (() -> () with the body funcBody, or an empty one), immutable i32
	// globals, exports of _start under other names.
	types, funcs, globals, exports int
	funcBody                       []byte
	funcLocals                     uint32   // i32 locals of each of those functions
	elems                          [][]byte // element segments, encoded
	data                           [][]byte // data segments, encoded
	custom                         int      // bytes of a trailing custom section
}

// The binary format's pieces, from the one encoder the tests share.
var (
	uleb = testwasm.ULEB128
	sleb = testwasm.SLEB128
	name = testwasm.Name
)

// section encodes a section whose content is a vector of items.
func section(id byte, items [][]byte) []byte { return testwasm.Section(id, testwasm.Vec(items)) }

func limits(min, max uint32) []byte {
	if max == 0 {
		return append([]byte{0x00}, uleb(min)...)
	}
	return append(append([]byte{0x01}, uleb(min)...), uleb(max)...)
}

// i32const and call are the instructions the fixtures use.
func i32const(v int32) []byte { return append([]byte{0x41}, sleb(v)...) }
func call(f uint32) []byte    { return append([]byte{0x10}, uleb(f)...) }

// dataSeg is an active data segment of n zero bytes at offset 0.
func dataSeg(n int) []byte {
	return append(append([]byte{0x00, 0x41, 0x00, 0x0b}, uleb(uint32(n))...), make([]byte, n)...)
}

// elemSeg is an active element segment putting function f at table 0's
// offset 0, n times.
func elemSeg(f uint32, n int) []byte {
	out := append([]byte{0x00, 0x41, 0x00, 0x0b}, uleb(uint32(n))...)
	for range n {
		out = append(out, uleb(f)...)
	}
	return out
}

func (m wmodule) bytes() []byte {
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	var types, imports [][]byte
	nfuncs := uint32(0)
	for _, im := range m.imports {
		switch {
		case im.memory:
			imports = append(imports, append(append(name(im.module), name(im.name)...), append([]byte{0x02}, limits(im.memMin, im.memMx)...)...))
			continue
		case im.table:
			imports = append(imports, append(append(name(im.module), name(im.name)...), 0x01, 0x70, 0x00, 0x01))
			continue
		case im.global:
			imports = append(imports, append(append(name(im.module), name(im.name)...), 0x03, 0x7f, 0x00))
			continue
		}
		t := append([]byte{0x60}, uleb(uint32(len(im.params)))...)
		t = append(append(t, im.params...), uleb(uint32(len(im.results)))...)
		t = append(t, im.results...)
		types = append(types, t)
		imports = append(imports, append(append(name(im.module), name(im.name)...), append([]byte{0x00}, uleb(uint32(len(types)-1))...)...))
		nfuncs++
	}
	types = append(types, []byte{0x60, 0x00, 0x00}) // _start: () -> ()
	void := uleb(uint32(len(types) - 1))
	for range m.types {
		types = append(types, []byte{0x60, 0x00, 0x00})
	}
	out = append(out, section(1, types)...)
	if len(imports) > 0 {
		out = append(out, section(2, imports)...)
	}
	funcs := [][]byte{void}
	for range m.funcs {
		funcs = append(funcs, void)
	}
	out = append(out, section(3, funcs)...)
	if len(m.tables) > 0 {
		var tables [][]byte
		for _, t := range m.tables {
			tables = append(tables, append([]byte{0x70}, limits(t.min, t.max)...))
		}
		out = append(out, section(4, tables)...)
	}
	if m.memMin > 0 {
		out = append(out, section(5, [][]byte{limits(m.memMin, m.memMax)})...)
	}
	if m.globals > 0 {
		globals := make([][]byte, m.globals)
		for i := range globals {
			globals[i] = []byte{0x7f, 0x00, 0x41, 0x00, 0x0b}
		}
		out = append(out, section(6, globals)...)
	}
	var exports [][]byte
	if !m.noStart {
		exports = append(exports, append(name("_start"), append([]byte{0x00}, uleb(nfuncs)...)...))
	}
	for i := range m.exports {
		exports = append(exports, append(name(fmt.Sprint("e", i)), append([]byte{0x00}, uleb(nfuncs)...)...))
	}
	if len(exports) > 0 {
		out = append(out, section(7, exports)...)
	}
	if len(m.elems) > 0 {
		out = append(out, section(9, m.elems)...)
	}
	body := uleb(uint32(len(m.locals)))
	for _, n := range m.locals {
		body = append(append(body, uleb(n)...), 0x7f)
	}
	body = append(append(body, m.start...), 0x0b)
	code := [][]byte{append(uleb(uint32(len(body))), body...)}
	other := []byte{0x00}
	if m.funcLocals > 0 {
		other = append(append([]byte{0x01}, uleb(m.funcLocals)...), 0x7f)
	}
	other = append(append(other, m.funcBody...), 0x0b)
	other = append(uleb(uint32(len(other))), other...)
	for range m.funcs {
		code = append(code, other)
	}
	out = append(out, section(10, code)...)
	if len(m.data) > 0 {
		out = append(out, section(11, m.data)...)
	}
	if m.custom > 0 {
		payload := append(name("pad"), make([]byte, m.custom)...)
		out = append(append(append(out, 0x00), uleb(uint32(len(payload)))...), payload...)
	}
	return out
}
