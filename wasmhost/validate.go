package wasmhost

import "github.com/agentgate/nmhost/mediator"

// What a module may declare. validate checks these on the raw bytes before
// wazero decodes or compiles anything, because wazero allocates and works
// in proportion to what a module declares, not to its size: a 41-byte body
// declaring 100,000,000 locals cost gigabytes and seconds to compile, and
// wazero's optimizing compiler takes time quadratic in a function's nesting
// and in its blocks times its locals (a 128 KiB body of nested loops: 8 s).
// Each limit is well above what Go agents need (the example agents: 3.3
// MB, about 2,150 functions, at most 20 locals per function and 8,800 in
// all, bodies up to 29 KB, one table of 6,200 entries, 37,000 data
// segments holding 0.8 MB; an 11 MB Go program with net/http and crypto:
// bodies up to 51 KB, 6,300 functions, 100,000 data segments, which is
// where Go's linker stops) and low enough that no single function takes
// more than seconds to compile. docs/abi.md lists them; RATIONALE.md says
// why they are what they are.
const (
	maxModuleBytes     = 32 << 20 // what install accepts (docs/protocol.md)
	maxTypes           = 10_000
	maxTypeArity       = 1_000 // parameters, and results, of one function type
	maxImports         = 1_000
	maxFunctions       = 60_000 // imported and defined
	maxTables          = 4
	maxTableEntries    = 65_536 // initial and maximum size of one table
	maxGlobals         = 10_000
	maxExports         = 1_000
	maxNameBytes       = 1_024
	maxElemSegments    = 10_000
	maxElemItems       = 4 * maxTableEntries // over all element segments
	maxDataSegments    = 100_000
	maxDataBytes       = 16 << 20 // over all data segments
	maxBodyBytes       = 128 << 10
	maxFuncLocals      = 10_000   // locals one function declares
	maxLocalsTimesBody = 16 << 20 // a function's locals times its body bytes
	maxLocals          = 500_000  // locals all functions declare together
)

// Import kinds, as the binary format numbers them.
const (
	importFunc   byte = 0
	importTable  byte = 1
	importMemory byte = 2
	importGlobal byte = 3
)

// moduleImport is one import as validate read it.
type moduleImport struct {
	module, name    string
	kind            byte
	params, results []byte // a function's signature (value types)
}

// moduleInfo is what validate learnt about a module.
type moduleInfo struct {
	imports []moduleImport
	// importsRead is true once the import section (or its absence) is
	// certain, so the grants can be checked even when a later section is
	// refused: a missing grant is the more useful answer.
	importsRead bool
	// uncapped are tables that declare no maximum; capTables gives them one.
	uncapped []tablePatch
	// tableSec is where the table section starts (its id byte), where its
	// contents start, and where it ends.
	tableSec [3]int
	// maxBody is the size of the largest function body and codeBytes the
	// code section's: they choose the engine that compiles the module
	// (engines.go).
	maxBody   uint32
	codeBytes int
}

// tablePatch locates one table's limits: the flag byte and the end of the
// initial size that follows it.
type tablePatch struct{ flag, minEnd int }

// sectionOrder ranks the known sections in the order the format requires;
// the data count section (12) comes between element (9) and code (10).
var sectionOrder = [13]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 12: 10, 10: 11, 11: 12}

// validator holds the counts that span sections.
type validator struct {
	info                       *moduleInfo
	types                      [][2][]byte // params and results of each type
	funcs, tables, mems, globs int         // imported and defined
	defined                    int         // function section entries
	bodies                     int         // code section entries
	dataCount                  int         // -1: no data count section
	dataSegs                   int
}

// validate walks a module's sections and checks what it declares against
// the limits above, before wazero sees the bytes. It reads counts, sizes
// and declarations, never instructions: function bodies are skipped by
// their sizes, so it takes under a millisecond on a 3 MB Go agent whose
// compile takes a second.
// Refusals are *mediator.Error with module_limits (a limit, named) or
// invalid_module (bytes that are not a module). Anything it accepts is
// still compiled and validated in full by wazero.
func validate(module []byte) (*moduleInfo, error) {
	info := &moduleInfo{}
	if len(module) > maxModuleBytes {
		return info, mediator.Errorf(mediator.CodeModuleLimits, "the module is %d bytes; the limit is %d", len(module), maxModuleBytes)
	}
	if len(module) < 8 || string(module[:4]) != "\x00asm" {
		return info, mediator.Errorf(mediator.CodeInvalidModule, "not a WebAssembly module")
	}
	if string(module[4:8]) != "\x01\x00\x00\x00" {
		return info, mediator.Errorf(mediator.CodeInvalidModule, "WebAssembly binary version %x is not 1", module[4:8])
	}
	v := &validator{info: info, dataCount: -1}
	r := &reader{b: module, pos: 8}
	last := 0
	for r.pos < len(r.b) {
		start := r.pos
		id := r.byte()
		payload := r.take(r.u32())
		if r.err != nil {
			return info, r.err
		}
		s := &reader{b: payload, off: r.pos - len(payload)}
		if id == 0 {
			s.name(false) // custom sections are skipped; only their name must fit
			if s.err != nil {
				return info, s.err
			}
			continue
		}
		rank := 0
		if int(id) < len(sectionOrder) {
			rank = sectionOrder[id]
		}
		switch {
		case rank == 0:
			r.pos = start
			r.malformed("unknown section %d", id)
		case rank <= last:
			r.pos = start
			r.malformed("section %d is repeated or out of order", id)
		}
		if r.err != nil {
			return info, r.err
		}
		if last < sectionOrder[2] && rank > sectionOrder[2] {
			info.importsRead = true // no import section
		}
		last = rank
		v.section(id, s, start)
		if s.err == nil && s.pos != len(s.b) {
			s.malformed("section %d has %d bytes left over", id, len(s.b)-s.pos)
		}
		if s.err != nil {
			return info, s.err
		}
	}
	info.importsRead = true
	switch {
	case v.defined != v.bodies:
		return info, mediator.Errorf(mediator.CodeInvalidModule, "the module declares %d functions and %d function bodies", v.defined, v.bodies)
	case v.dataCount >= 0 && v.dataCount != v.dataSegs:
		return info, mediator.Errorf(mediator.CodeInvalidModule, "the data count section says %d segments; the data section has %d", v.dataCount, v.dataSegs)
	}
	return info, nil
}

func (v *validator) section(id byte, s *reader, start int) {
	switch id {
	case 1:
		v.typeSection(s)
	case 2:
		v.importSection(s)
		v.info.importsRead = s.err == nil
	case 3:
		n := s.count("functions (imported and defined)", maxFunctions-v.funcs)
		for range n {
			if t := s.u32(); int(t) >= len(v.types) && s.err == nil {
				s.malformed("function type %d does not exist", t)
			}
		}
		v.funcs += n
		v.defined = n
	case 4:
		v.info.tableSec = [3]int{start, s.off, s.off + len(s.b)}
		n := s.count("tables", maxTables-v.tables)
		for range n {
			v.table(s, true)
		}
	case 5:
		n := s.count("memories", 1-v.mems)
		for range n {
			v.memory(s)
		}
	case 6:
		n := s.count("globals", maxGlobals-v.globs)
		for range n {
			s.valType()
			v.mutability(s)
			s.constExpr()
		}
		v.globs += n
	case 7:
		n := s.count("exports", maxExports)
		for range n {
			s.name(true)
			if k := s.byte(); k > importGlobal && s.err == nil {
				s.malformed("unknown export kind %d", k)
			}
			s.u32()
		}
	case 8:
		s.u32() // the start function; wazero checks that it exists
	case 9:
		v.elementSection(s)
	case 12:
		v.dataCount = int(s.u32())
	case 10:
		v.codeSection(s)
	case 11:
		v.dataSection(s)
	}
}

func (v *validator) typeSection(s *reader) {
	n := s.count("function types", maxTypes)
	v.types = make([][2][]byte, 0, n)
	for range n {
		if form := s.byte(); form != 0x60 && s.err == nil {
			s.malformed("type form 0x%02x is not a function type", form)
		}
		var sig [2][]byte
		for i := range sig {
			k := s.count("parameters or results of one function type", maxTypeArity)
			start := s.pos
			for range k {
				s.valType()
			}
			sig[i] = s.b[start:s.pos]
		}
		if s.err != nil {
			return
		}
		v.types = append(v.types, sig)
	}
}

func (v *validator) importSection(s *reader) {
	n := s.count("imports", maxImports)
	v.info.imports = make([]moduleImport, 0, n)
	for range n {
		mod, name := s.name(true), s.name(true)
		im := moduleImport{module: string(mod), name: string(name), kind: s.byte()}
		switch im.kind {
		case importFunc:
			t := s.u32()
			if int(t) >= len(v.types) {
				s.malformed("import %s.%s has type %d, which does not exist", mod, name, t)
				break
			}
			im.params, im.results = v.types[t][0], v.types[t][1]
			v.funcs++
		case importTable:
			v.table(s, false)
		case importMemory:
			v.memory(s)
		case importGlobal:
			s.valType()
			v.mutability(s)
			v.globs++
		default:
			s.malformed("unknown import kind %d", im.kind)
		}
		if s.err != nil {
			return
		}
		if v.funcs > maxFunctions || v.tables > maxTables || v.mems > 1 || v.globs > maxGlobals {
			s.limit("the module imports more functions, tables, memories or globals than the limits allow (%d, %d, 1, %d)", maxFunctions, maxTables, maxGlobals)
			return
		}
		v.info.imports = append(v.info.imports, im)
	}
}

// table reads a table type and checks its sizes. A table without a maximum
// is noted so that capTables can give it one (see there).
func (v *validator) table(s *reader, defined bool) {
	s.refType()
	flagPos := s.pos
	flag := s.byte()
	lo := s.u32()
	minEnd := s.pos
	var hi uint32
	switch flag {
	case 0x00:
		if defined && s.err == nil {
			v.info.uncapped = append(v.info.uncapped, tablePatch{flag: s.off + flagPos, minEnd: s.off + minEnd})
		}
	case 0x01:
		if hi = s.u32(); hi < lo && s.err == nil {
			s.malformed("a table's maximum %d is below its initial size %d", hi, lo)
		}
	default:
		if s.err == nil {
			s.malformed("table limits flag 0x%02x is not 0 or 1", flag)
		}
	}
	if (lo > maxTableEntries || hi > maxTableEntries) && s.err == nil {
		s.limit("a table of %d entries, growing to %d, is over the limit of %d entries per table", lo, max(lo, hi), maxTableEntries)
	}
	v.tables++
}

// memory reads a memory type. Its size is wazero's to check against the
// agent's maxMemory; only the shape is checked here.
func (v *validator) memory(s *reader) {
	switch flag := s.byte(); flag {
	case 0x00:
		s.u32()
	case 0x01:
		s.u32()
		s.u32()
	default:
		if s.err == nil {
			s.malformed("memory limits flag 0x%02x is not 0 or 1 (no shared or 64-bit memories)", flag)
		}
	}
	v.mems++
}

func (v *validator) mutability(s *reader) {
	if m := s.byte(); m > 1 && s.err == nil {
		s.malformed("global mutability %d is not 0 or 1", m)
	}
}

func (v *validator) elementSection(s *reader) {
	items := 0
	for range s.count("element segments", maxElemSegments) {
		flags := s.u32()
		if flags > 7 && s.err == nil {
			s.malformed("element segment kind %d is unknown", flags)
		}
		if flags&3 == 2 { // active, with an explicit table
			s.u32()
		}
		if flags&1 == 0 { // active: an offset
			s.constExpr()
		}
		if flags&3 != 0 { // an element kind or reference type
			if flags&4 == 0 {
				if k := s.byte(); k != 0x00 && s.err == nil {
					s.malformed("element kind 0x%02x is not funcref", k)
				}
			} else {
				s.refType()
			}
		}
		n := s.count("table elements in element segments", maxElemItems-items)
		items += n
		for range n {
			if flags&4 == 0 {
				s.u32() // a function index
			} else {
				s.constExpr()
			}
		}
		if s.err != nil {
			return
		}
	}
}

func (v *validator) codeSection(s *reader) {
	v.info.codeBytes = len(s.b)
	v.bodies = s.count("function bodies", maxFunctions)
	total := uint64(0)
	for i := range v.bodies {
		fn := v.funcs - v.defined + i // its index among all functions
		size := s.u32()
		v.info.maxBody = max(v.info.maxBody, size)
		if size > maxBodyBytes && s.err == nil {
			s.limit("function %d's body is %d bytes; the limit is %d", fn, size, maxBodyBytes)
		}
		b := &reader{b: s.take(size), off: s.off + s.pos - int(size)}
		if s.err != nil {
			return
		}
		// The sum is kept in 64 bits and checked after every declaration,
		// so no count of uint32 declarations can wrap it past the limit.
		locals := uint64(0)
		for range b.count("local declarations", maxFuncLocals) {
			locals += uint64(b.u32())
			b.valType()
			if locals > maxFuncLocals && b.err == nil {
				b.limit("function %d declares more than %d locals, the limit for one function", fn, maxFuncLocals)
			}
		}
		if locals*uint64(size) > maxLocalsTimesBody && b.err == nil {
			b.limit("function %d declares %d locals in a body of %d bytes; the limit of locals times body bytes is %d", fn, locals, size, maxLocalsTimesBody)
		}
		if total += locals; total > maxLocals && b.err == nil {
			b.limit("the functions declare more than %d locals in all, the limit for a module", maxLocals)
		}
		if b.err == nil && (b.pos == len(b.b) || b.b[len(b.b)-1] != 0x0b) {
			b.malformed("function %d's body does not end with end", fn)
		}
		if b.err != nil {
			s.err = b.err
			return
		}
	}
}

func (v *validator) dataSection(s *reader) {
	v.dataSegs = s.count("data segments", maxDataSegments)
	total := uint64(0)
	for range v.dataSegs {
		switch flags := s.u32(); flags {
		case 0:
			s.constExpr()
		case 1:
		case 2:
			s.u32()
			s.constExpr()
		default:
			if s.err == nil {
				s.malformed("data segment kind %d is unknown", flags)
			}
		}
		n := s.u32()
		if total += uint64(n); total > maxDataBytes && s.err == nil {
			s.limit("the data segments hold more than %d bytes, the limit for a module", maxDataBytes)
		}
		s.take(n)
		if s.err != nil {
			return
		}
	}
}

// capTables returns the module with every defined table that declares no
// maximum given its initial size as its maximum, so table.grow cannot take
// it past that (it returns -1, as for any table at its maximum). Go's
// linker declares its one table without a maximum, so refusing such tables
// would refuse every Go agent; capping changes nothing for them, since Go
// never grows its table. The module is copied only when a table needs it.
func (info *moduleInfo) capTables(module []byte) []byte {
	if len(info.uncapped) == 0 {
		return module
	}
	start, body, end := info.tableSec[0], info.tableSec[1], info.tableSec[2]
	payload := make([]byte, 0, end-body+5*len(info.uncapped))
	prev := body
	for _, p := range info.uncapped {
		initial := module[p.flag+1 : p.minEnd]
		payload = append(payload, module[prev:p.flag]...)
		payload = append(payload, 0x01)
		payload = append(payload, initial...)
		payload = append(payload, initial...)
		prev = p.minEnd
	}
	payload = append(payload, module[prev:end]...)
	out := make([]byte, 0, len(module)+len(payload)-(end-body)+5)
	out = append(out, module[:start]...)
	out = append(out, 4)
	out = appendU32(out, uint32(len(payload)))
	out = append(out, payload...)
	return append(out, module[end:]...)
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
