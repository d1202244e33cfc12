package wasmhost

import "strconv"

// codeUse is how a module's own bytes refer to its functions, for the
// permission set inference (inspect.go): which function imports the code
// calls directly, which it can reach only through a table or an export,
// and whether it calls through a table at all.
type codeUse struct {
	// called and indirect are indexed by function import: only imports
	// matter to the inference, and a slice keeps the scan of a 3 MB body
	// free of map writes.
	called   []bool // call and return_call targets
	indirect []bool // in an element segment, behind ref.func, or exported
	// callsIndirect: the code has call_indirect or return_call_indirect,
	// so what a table holds may be called with no name in the code.
	callsIndirect bool
	// unreadable says where the scan met an instruction it does not know;
	// "" when it read every body to its end.
	unreadable string
}

// Immediate kinds of the one-byte opcodes; opUnknown ends the scan.
const (
	opUnknown  = iota
	opNone     // no immediate
	opLEB      // one LEB128 number (an index, a depth, a signed constant)
	opLEB2     // two
	opBlock    // a block type
	opMemarg   // alignment, optional memory index, offset
	opBrTable  // a vector of depths and a default
	opSelectT  // a vector of value types
	opBytes4   // f32.const
	opBytes8   // f64.const
	opCall     // call, return_call: a function index
	opRefFunc  // ref.func: a function index
	opIndirect // call_indirect, return_call_indirect: type and table
	opByte     // ref.null: a reference type
	opPrefixFC // saturating truncation, bulk memory and tables
	opPrefixFD // vectors
)

// opKinds covers WebAssembly 2.0 with tail calls: what Go, TinyGo and
// Rust emit. Exceptions, threads and typed function references are not
// read; a body that uses them leaves the inference unsure, never wrong.
var opKinds = func() (t [256]uint8) {
	set := func(kind uint8, ops ...int) {
		for _, op := range ops {
			t[op] = kind
		}
	}
	set(opNone, 0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b, 0xd1)
	set(opBlock, 0x02, 0x03, 0x04)
	set(opLEB, 0x0c, 0x0d, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x3f, 0x40, 0x41, 0x42)
	set(opBrTable, 0x0e)
	set(opCall, 0x10, 0x12)
	set(opIndirect, 0x11, 0x13)
	set(opSelectT, 0x1c)
	for op := 0x28; op <= 0x3e; op++ {
		t[op] = opMemarg
	}
	set(opBytes4, 0x43)
	set(opBytes8, 0x44)
	for op := 0x45; op <= 0xc4; op++ { // numeric and sign extension
		t[op] = opNone
	}
	set(opByte, 0xd0)
	set(opRefFunc, 0xd2)
	set(opPrefixFC, 0xfc)
	set(opPrefixFD, 0xfd)
	return t
}()

// scanUse reads the export, element and code sections of a module that
// validate accepted and records how its functions are referenced.
func scanUse(module []byte, funcImports int) codeUse {
	u := codeUse{called: make([]bool, funcImports), indirect: make([]bool, funcImports)}
	r := &reader{b: module, pos: 8}
	for r.pos < len(r.b) && r.err == nil {
		id := r.byte()
		payload := r.take(r.u32())
		s := &reader{b: payload}
		switch id {
		case 6:
			for range s.count("globals", maxGlobals) {
				s.valType()
				s.byte()
				u.constRefs(s)
			}
		case 7:
			for range s.count("exports", maxExports) {
				s.name(true)
				kind := s.byte()
				idx := s.u32()
				if kind == importFunc {
					u.mark(u.indirect, idx)
				}
			}
		case 9:
			u.elements(s)
		case 10:
			u.code(s)
		}
		if s.err != nil && u.unreadable == "" {
			u.unreadable = "section " + strconv.Itoa(int(id))
		}
	}
	return u
}

// mark notes a reference to function idx when it is an import.
func (u *codeUse) mark(to []bool, idx uint32) {
	if uint64(idx) < uint64(len(to)) {
		to[idx] = true
	}
}

// constRefs reads one constant expression, noting a ref.func.
func (u *codeUse) constRefs(s *reader) {
	if s.pos < len(s.b) && s.b[s.pos] == 0xd2 {
		s.pos++
		u.mark(u.indirect, s.u32())
		s.byte() // end
		return
	}
	s.constExpr()
}

func (u *codeUse) elements(s *reader) {
	for range s.count("element segments", maxElemSegments) {
		flags := s.u32()
		if flags&3 == 2 {
			s.u32()
		}
		if flags&1 == 0 {
			s.constExpr()
		}
		if flags&3 != 0 {
			s.byte() // element kind or reference type
		}
		for range s.count("table elements", maxElemItems) {
			if flags&4 == 0 {
				u.mark(u.indirect, s.u32())
			} else {
				u.constRefs(s)
			}
		}
		if s.err != nil {
			return
		}
	}
}

func (u *codeUse) code(s *reader) {
	for i := range s.count("function bodies", maxFunctions) {
		body := s.take(s.u32())
		if s.err != nil {
			return
		}
		b := &reader{b: body}
		for range b.count("local declarations", maxFuncLocals) {
			b.u32()
			b.byte()
		}
		if b.err != nil {
			u.unreadable = "function body " + strconv.Itoa(i)
			return
		}
		if at := u.instructions(b.b[b.pos:]); at >= 0 && u.unreadable == "" {
			u.unreadable = "function body " + strconv.Itoa(i) + " at byte " + strconv.Itoa(b.pos+at)
		}
	}
}

// instructions walks one body's instructions; it returns -1 when it read
// them all, or the offset of the first one it could not. It indexes the
// body directly rather than through reader: a Go agent has megabytes of
// code, and this loop is most of what `nmhost inspect` costs. A number
// that runs past the body ends the walk as unreadable; it never reads
// outside the body.
func (u *codeUse) instructions(b []byte) int {
	i, n := 0, len(b)
	leb := func() uint32 {
		var v uint32
		for shift := uint(0); i < n; shift += 7 {
			c := b[i]
			i++
			if shift < 32 {
				v |= uint32(c&0x7f) << shift
			}
			if c < 0x80 {
				return v
			}
		}
		i = n + 1 // ran off the end
		return 0
	}
	memarg := func() {
		if leb()&0x40 != 0 {
			leb() // a memory index
		}
		leb()
	}
	for i < n {
		at := i
		op := b[i]
		i++
		switch opKinds[op] {
		case opNone:
		case opLEB:
			leb()
		case opLEB2:
			leb()
			leb()
		case opBlock:
			if i < n && (b[i] == 0x40 || b[i] >= 0x6f && b[i] <= 0x7f) {
				i++
			} else {
				leb() // a type index, as a signed 33-bit number
			}
		case opMemarg:
			memarg()
		case opBrTable:
			for k := leb(); k > 0 && i < n; k-- {
				leb()
			}
			leb()
		case opSelectT:
			i += int(leb())
		case opBytes4:
			i += 4
		case opBytes8:
			i += 8
		case opCall:
			u.mark(u.called, leb())
		case opRefFunc:
			u.mark(u.indirect, leb())
		case opIndirect:
			u.callsIndirect = true
			leb()
			leb()
		case opByte:
			i++
		case opPrefixFC:
			switch sub := leb(); {
			case sub <= 7:
			case sub == 9 || sub == 11 || sub == 13 || sub >= 15 && sub <= 17:
				leb()
			case sub == 8 || sub == 10 || sub == 12 || sub == 14:
				leb()
				leb()
			default:
				return at
			}
		case opPrefixFD:
			switch sub := leb(); {
			case sub <= 0x0b || sub == 0x5c || sub == 0x5d:
				memarg()
			case sub == 0x0c || sub == 0x0d:
				i += 16
			case sub >= 0x15 && sub <= 0x22:
				i++
			case sub >= 0x54 && sub <= 0x5b:
				memarg()
				i++
			case sub <= 0x113:
			default:
				return at
			}
		default:
			return at
		}
		if i > n {
			return at
		}
	}
	return -1
}
