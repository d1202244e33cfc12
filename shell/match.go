package shell

import (
	"context"
	"io"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"

	"github.com/agentgate/nmhost/mediator"
)

// Go's regexp takes time linear in the input, but the factor is the
// program's size: `[[:alpha:]]{1000}b` over one 1 MiB line is a billion
// steps, and a match cannot be interrupted. So a pattern's program is
// bounded, and a long line is matched through a reader that checks the
// deadline every stepsPerCheck steps; a line too short for that to matter
// is matched at full speed.
const (
	// MaxPatternInsts bounds a grep pattern's compiled program: about 20
	// times `[[:alpha:]]{1000}`, far past any pattern a person writes.
	MaxPatternInsts = 20_000
	// stepsPerCheck is the work (runes times instructions) between two
	// looks at the deadline: a few milliseconds.
	stepsPerCheck = 1 << 22
)

// matcher is a compiled grep pattern that honours a deadline inside a line.
type matcher struct {
	re    *regexp.Regexp
	insts int
}

func compileMatcher(pattern string) (*matcher, error) {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "grep: %v", err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "grep: %v", err)
	}
	if len(prog.Inst) > MaxPatternInsts {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "grep: the pattern compiles to %d instructions, past the bound of %d", len(prog.Inst), MaxPatternInsts)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "grep: %v", err)
	}
	return &matcher{re: re, insts: max(1, len(prog.Inst))}, nil
}

// match reports whether line matches; on a long line it stops early when
// ctx is done, and the caller, seeing ctx.Err, drops the answer.
func (m *matcher) match(ctx context.Context, line []byte) bool {
	if len(line)*m.insts <= stepsPerCheck {
		return m.re.Match(line)
	}
	r := &ctxReader{ctx: ctx, b: line, every: max(1, stepsPerCheck/m.insts)}
	r.left = r.every
	return m.re.MatchReader(r)
}

// ctxReader reads the runes of b as regexp.Match would decode them (an
// invalid byte is one utf8.RuneError), and ends the input when ctx is
// done, which ends the match.
type ctxReader struct {
	ctx         context.Context
	b           []byte
	every, left int
}

func (r *ctxReader) ReadRune() (rune, int, error) {
	if len(r.b) == 0 {
		return 0, 0, io.EOF
	}
	if r.left--; r.left <= 0 {
		r.left = r.every
		if r.ctx.Err() != nil {
			r.b = nil
			return 0, 0, io.EOF
		}
	}
	c, size := utf8.DecodeRune(r.b)
	r.b = r.b[size:]
	return c, size, nil
}

var _ io.RuneReader = (*ctxReader)(nil)

// cancelled is the timeout error of a shell filter.
func cancelled(ctx context.Context, name string) error {
	if ctx.Err() != nil {
		return mediator.Errorf(mediator.CodeTimeout, "%s was cancelled", name)
	}
	return nil
}
