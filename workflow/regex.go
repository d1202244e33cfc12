package workflow

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// maxMatchWork bounds one matches call: RE2 is linear in the string, but
// the factor is the pattern's program, and one call cannot be interrupted
// (`s.matches('[a-z]{1000}b')` over 1 MiB is a billion steps, about 13 s;
// CEL charges it 350,000 of its 1,000,000). 2^26 steps is about a second
// at worst; a 1 MiB string with a pattern of 60 instructions fits.
const maxMatchWork = 1 << 26

// guardedMatch is matches (global or member) with the pattern compiled
// here, so its program's size is known before the match runs. It keeps the
// call's identity for the cost tracker, as guardedCmp does.
type guardedMatch struct{ interpreter.InterpretableCall }

func (g guardedMatch) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	args := g.Args()
	s := args[0].Exec(frame)
	if types.IsUnknownOrError(s) {
		return s
	}
	p := args[1].Exec(frame)
	if types.IsUnknownOrError(p) {
		return p
	}
	str, ok1 := s.(types.String)
	pat, ok2 := p.(types.String)
	if !ok1 || !ok2 {
		return types.NewErr("no such overload: matches(%s, %s)", s.Type(), p.Type())
	}
	parsed, err := syntax.Parse(string(pat), syntax.Perl)
	if err != nil {
		return types.WrapErr(err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return types.WrapErr(err)
	}
	if work := (len(str) + 1) * len(prog.Inst); work > maxMatchWork {
		return types.WrapErr(fmt.Errorf("%w: matches would take %d steps (a %d-byte string, a pattern of %d instructions), past the bound of %d", errTooLarge, work, len(str), len(prog.Inst), maxMatchWork))
	}
	re, err := regexp.Compile(string(pat))
	if err != nil {
		return types.WrapErr(err)
	}
	return types.Bool(re.MatchString(string(str)))
}

func (g guardedMatch) Eval(act interpreter.Activation) ref.Val {
	return g.Exec(interpreter.AsFrame(act))
}
