package wasmhost

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentgate/nmhost/mediator"
)

// reader walks a part of a module for validate (validate.go), reading its
// numbers exactly as wazero reads them. Errors are sticky: after the first,
// every read returns zero and the walk ends at the next check.
type reader struct {
	b   []byte
	off int // where b starts in the module, for messages
	pos int
	err error
}

func (r *reader) fail(code mediator.Code, format string, args ...any) {
	if r.err == nil {
		msg := fmt.Sprintf(format, args...)
		if code == mediator.CodeInvalidModule {
			msg = fmt.Sprintf("the module is malformed at byte %d: %s", r.off+r.pos, msg)
		}
		r.err = mediator.Errorf(code, "%s", msg)
	}
	r.pos = len(r.b)
}

func (r *reader) malformed(format string, args ...any) {
	r.fail(mediator.CodeInvalidModule, format, args...)
}

func (r *reader) limit(format string, args ...any) {
	r.fail(mediator.CodeModuleLimits, format, args...)
}

// byte is small enough to be inlined: validate reads most of a module's
// declarations a byte at a time.
func (r *reader) byte() byte {
	if uint(r.pos) < uint(len(r.b)) {
		c := r.b[r.pos]
		r.pos++
		return c
	}
	if r.err == nil {
		r.err = errCutShort
	}
	return 0
}

// errCutShort is byte's one error, kept ready so that byte stays small.
var errCutShort = mediator.Errorf(mediator.CodeInvalidModule, "the module is malformed: a section ends inside a declaration")

// u32 reads an unsigned LEB128 number of at most 5 bytes whose unused high
// bits are zero, exactly as wazero does: the numbers checked here must be
// the numbers wazero then reads.
func (r *reader) u32() uint32 {
	if uint(r.pos) < uint(len(r.b)) && r.b[r.pos] < 0x80 {
		c := r.b[r.pos]
		r.pos++
		return uint32(c)
	}
	return r.u32long()
}

func (r *reader) u32long() uint32 {
	var v uint32
	for i := range 5 {
		if r.pos >= len(r.b) {
			r.malformed("unexpected end inside a number")
			return 0
		}
		c := r.b[r.pos]
		r.pos++
		if i == 4 && c&0xf0 != 0 {
			r.malformed("a number does not fit in 32 bits")
			return 0
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	return 0 // not reached: the fifth byte either ends the number or fails
}

// skipSigned skips a signed LEB128 number of at most n bytes.
func (r *reader) skipSigned(n int) {
	last := min(r.pos+n, len(r.b))
	for i := r.pos; i < last; i++ {
		if r.b[i] < 0x80 {
			r.pos = i + 1
			return
		}
	}
	if last-r.pos < n {
		r.pos = last
		r.malformed("unexpected end inside a number")
		return
	}
	r.pos = last
	r.malformed("a number is longer than %d bytes", n)
}

func (r *reader) take(n uint32) []byte {
	if uint64(n) > uint64(len(r.b)-r.pos) {
		r.malformed("%d bytes announced, %d left", n, len(r.b)-r.pos)
		return nil
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s
}

// count reads a vector's length: over room is over a limit; over the bytes
// left is malformed (every item takes at least one byte), which also keeps
// every loop over items as short as the input.
func (r *reader) count(what string, room int) int {
	n := r.u32()
	switch {
	case r.err != nil:
		return 0
	case uint64(n) > uint64(max(room, 0)):
		r.limit("the module declares too many %s: the limit is %d", what, room)
		return 0
	case int(n) > len(r.b)-r.pos:
		r.malformed("%d %s announced in %d bytes", n, what, len(r.b)-r.pos)
		return 0
	}
	return int(n)
}

func (r *reader) name(utf bool) []byte {
	n := r.u32()
	if n > maxNameBytes && r.err == nil {
		r.limit("a name of %d bytes is over the %d-byte limit", n, maxNameBytes)
	}
	s := r.take(n)
	if utf && r.err == nil && !utf8.Valid(s) {
		r.malformed("a name is not UTF-8")
	}
	return s
}

func (r *reader) valType() byte {
	t := r.byte()
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // i32 i64 f32 f64 v128 funcref externref
	default:
		if r.err == nil {
			r.malformed("unknown value type 0x%02x", t)
		}
	}
	return t
}

func (r *reader) refType() {
	if t := r.byte(); t != 0x70 && t != 0x6f && r.err == nil {
		r.malformed("unknown reference type 0x%02x", t)
	}
}

// constExpr skips a WebAssembly 2.0 constant expression: one instruction
// and end. wazero accepts no longer ones with the features the host enables.
func (r *reader) constExpr() {
	switch op := r.byte(); op {
	case 0x41: // i32.const
		r.skipSigned(5)
	case 0x42: // i64.const
		r.skipSigned(10)
	case 0x43: // f32.const
		r.take(4)
	case 0x44: // f64.const
		r.take(8)
	case 0x23, 0xd2: // global.get, ref.func
		r.u32()
	case 0xd0: // ref.null
		r.refType()
	case 0xfd: // v128.const
		if r.u32() != 12 && r.err == nil {
			r.malformed("unsupported vector instruction in a constant expression")
		}
		r.take(16)
	default:
		if r.err == nil {
			r.malformed("unsupported instruction 0x%02x in a constant expression", op)
		}
	}
	if r.byte() != 0x0b && r.err == nil {
		r.malformed("a constant expression does not end after one instruction")
	}
}
