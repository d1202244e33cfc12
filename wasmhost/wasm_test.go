package wasmhost

// A minimal WebAssembly binary encoder for hand-made hostile modules: each
// fixture is a few bytes whose every part the test spells out.

type wimport struct {
	module, name  string
	params        []byte // value types: 0x7f i32, 0x7e i64
	results       []byte
	memory        bool // import a memory instead of a function
	memMin, memMx uint32
}

type wmodule struct {
	imports []wimport
	memMin  uint32 // pages of the module's own memory (0: none)
	memMax  uint32 // 0: no maximum
	start   []byte // body of the exported "_start" (without locals and end)
	noStart bool   // export nothing: no entry point
}

func uleb(v uint32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

func sleb(v int32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func name(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func section(id byte, items [][]byte) []byte {
	body := uleb(uint32(len(items)))
	for _, it := range items {
		body = append(body, it...)
	}
	return append(append([]byte{id}, uleb(uint32(len(body)))...), body...)
}

func limits(min, max uint32) []byte {
	if max == 0 {
		return append([]byte{0x00}, uleb(min)...)
	}
	return append(append([]byte{0x01}, uleb(min)...), uleb(max)...)
}

// i32const and call are the instructions the fixtures use.
func i32const(v int32) []byte { return append([]byte{0x41}, sleb(v)...) }
func call(f uint32) []byte    { return append([]byte{0x10}, uleb(f)...) }

func (m wmodule) bytes() []byte {
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	var types, imports [][]byte
	nfuncs := uint32(0)
	for _, im := range m.imports {
		if im.memory {
			imports = append(imports, append(append(name(im.module), name(im.name)...), append([]byte{0x02}, limits(im.memMin, im.memMx)...)...))
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
	out = append(out, section(1, types)...)
	if len(imports) > 0 {
		out = append(out, section(2, imports)...)
	}
	out = append(out, section(3, [][]byte{uleb(uint32(len(types) - 1))})...)
	if m.memMin > 0 {
		out = append(out, section(5, [][]byte{limits(m.memMin, m.memMax)})...)
	}
	if !m.noStart {
		out = append(out, section(7, [][]byte{append(name("_start"), append([]byte{0x00}, uleb(nfuncs)...)...)})...)
	}
	body := append([]byte{0x00}, m.start...) // no locals
	body = append(body, 0x0b)
	out = append(out, section(10, [][]byte{append(uleb(uint32(len(body))), body...)})...)
	return out
}
