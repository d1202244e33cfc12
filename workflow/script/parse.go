package script

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
	"github.com/evanw/esbuild/pkg/api"
	"github.com/go-sourcemap/sourcemap"

	"github.com/agentgate/nmhost/mediator"
)

// Limits on a script, checked before it is parsed.
const (
	MaxScriptBytes = 256 << 10
	// maxBrackets bounds how deep brackets nest in the text, so that no
	// script can take the parser (which recurses) arbitrarily deep.
	maxBrackets = 256
	// maxPrefixRun bounds a run of prefix operators (!!!!x, - - x,
	// typeof typeof x): a million of them took the parser past ten
	// minutes, each nesting a level.
	maxPrefixRun = 64
	// maxArrows bounds the arrows of a script: the parser reads an arrow
	// chain (a => a => ...) in time that grows with the cube of its depth
	// (2,000: 62 ms; 8,000: 3.3 s).
	maxArrows = 2000
	// maxTernaries bounds the conditional operators (10,000 nested: under
	// 0.2 s).
	maxTernaries = 10_000
)

// The script is parsed as the body of an async function, as Node runs
// it in the equivalence tests: top-level await and return are the
// script's, and the wrapper adds one line before it.
const (
	wrapStart = "(async function () {\n"
	wrapEnd   = "\n})"
)

// Error is a refusal of a script: a reason code, where, and why.
type Error struct {
	Line, Column int
	Err          *mediator.Error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: line %d, column %d: %s", e.Err.Code, e.Line, e.Column, e.Err.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// source is a parsed script: its program (the wrapper's function) and how
// to find an offset of the parsed text in the file as written.
type source struct {
	js   string // the text parsed: the wrapper around the script's JavaScript
	body *ast.FunctionLiteral
	pos  func(offset int) (line, col int)
}

// parse reads a script: TypeScript (name ending in .ts, .mts, .cts) has its
// types stripped by esbuild, keeping every import so that one is refused,
// not silently dropped; positions are those of the file as written.
func parse(name string, src []byte) (*source, error) {
	if len(src) > MaxScriptBytes {
		return nil, &Error{Line: 1, Column: 1, Err: mediator.Errorf(mediator.CodeTooLarge, "the script is %d bytes; the limit is %d", len(src), MaxScriptBytes)}
	}
	if line, col, what, ok := tooDeep(string(src)); ok {
		return nil, &Error{Line: line, Column: col, Err: mediator.Errorf(mediator.CodeTooLarge, "%s", what)}
	}
	js := string(src)
	mapBack := func(line, col int) (int, int) { return line, col }
	if isTS(name) {
		r := api.Transform(js, api.TransformOptions{
			Loader: api.LoaderTS, Target: api.ESNext, Sourcemap: api.SourceMapExternal, Sourcefile: "script.ts",
			TsconfigRaw: `{"compilerOptions": {"verbatimModuleSyntax": true}}`,
		})
		if len(r.Errors) > 0 {
			e := r.Errors[0]
			line, col := 1, 1
			if e.Location != nil {
				line, col = e.Location.Line, e.Location.Column+1
			}
			return nil, &Error{Line: line, Column: col, Err: mediator.Errorf(mediator.CodeInvalidWorkflow, "the script does not parse as TypeScript: %s", mediator.Truncate(e.Text, 200))}
		}
		sm, err := sourcemap.Parse("script.js.map", r.Map)
		if err != nil {
			return nil, fmt.Errorf("reading esbuild's source map: %w", err)
		}
		js = string(r.Code)
		mapBack = func(line, col int) (int, int) {
			// The map's columns count from 0, ours from 1.
			if _, _, l, c, ok := sm.Source(line, col-1); ok {
				return l, c + 1
			}
			return line, col
		}
	}
	wrapped := wrapStart + js + wrapEnd
	lines := lineStarts(wrapped)
	pos := func(offset int) (int, int) {
		l, c := lineCol(lines, wrapped, offset)
		return mapBack(l-1, c)
	}
	prog, err := parser.ParseFile(nil, "script", wrapped, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, parseError(err, wrapped, lines, mapBack)
	}
	fn := wrapper(prog, len(wrapped))
	if fn == nil {
		return nil, &Error{Line: 1, Column: 1, Err: mediator.Errorf(mediator.CodeInvalidWorkflow, "the script is not one program: it closes the function it runs in")}
	}
	return &source{js: wrapped, body: fn, pos: pos}, nil
}

// wrapper returns the wrapper's function when the program is exactly it.
func wrapper(prog *ast.Program, n int) *ast.FunctionLiteral {
	if len(prog.Body) != 1 {
		return nil
	}
	st, ok := prog.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return nil
	}
	fn, ok := st.Expression.(*ast.FunctionLiteral)
	if !ok || !fn.Async || int(fn.Idx0()) != 2 || int(fn.Body.Idx1()) != n {
		return nil
	}
	return fn
}

// parseError refuses a script that does not parse: an import or an export
// (which a script run here cannot have) as unsafe_operation, anything
// else as invalid_workflow, at its place in the file.
func parseError(err error, wrapped string, lines []int, mapBack func(int, int) (int, int)) error {
	var list parser.ErrorList
	var one *parser.Error
	p := file.Position{Line: 1, Column: 1}
	msg := err.Error()
	switch {
	case errors.As(err, &list) && len(list) > 0:
		p, msg = list[0].Position, list[0].Message
	case errors.As(err, &one):
		p, msg = one.Position, one.Message
	}
	line, col := mapBack(p.Line-1, p.Column)
	if line < 1 {
		line = 1
	}
	if off := offsetOf(lines, wrapped, p.Line, p.Column); off >= 0 {
		rest := wrapped[off:]
		for _, kw := range []string{"import", "export"} {
			if strings.HasPrefix(rest, kw) {
				return &Error{Line: line, Column: col, Err: mediator.Errorf(mediator.CodeUnsafeOperation, "%s: a script loads no other code (code:import)", kw)}
			}
		}
	}
	return &Error{Line: line, Column: col, Err: mediator.Errorf(mediator.CodeInvalidWorkflow, "the script does not parse: %s", mediator.Truncate(msg, 200))}
}

func isTS(name string) bool {
	for _, ext := range []string{".ts", ".mts", ".cts"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// tooDeep finds where the text first nests deeper than the parser may be
// taken: brackets past maxBrackets, a run of prefix operators past
// maxPrefixRun, more arrows or conditional operators than their bounds.
// It counts in strings and comments too: a script that needs that many
// is refused either way.
func tooDeep(s string) (int, int, string, bool) {
	depth, line, col, arrows, ternaries := 0, 1, 0, 0, 0
	for i, c := range s {
		col++
		switch c {
		case '\n':
			line, col = line+1, 0
			continue
		case ' ', '\t', '\r':
			continue
		case '(', '[', '{':
			if depth++; depth > maxBrackets {
				return line, col, fmt.Sprintf("brackets nest deeper than %d", maxBrackets), true
			}
		case ')', ']', '}':
			depth--
		case '>':
			if i > 0 && s[i-1] == '=' {
				if arrows++; arrows > maxArrows {
					return line, col, fmt.Sprintf("more than %d arrows", maxArrows), true
				}
			}
		case '?':
			if next := s[min(i+1, len(s)-1)]; next != '.' && next != '?' && (i == 0 || s[i-1] != '?') {
				if ternaries++; ternaries > maxTernaries {
					return line, col, fmt.Sprintf("more than %d conditional operators", maxTernaries), true
				}
			}
		}
	}
	if i, ok := prefixRun(s); ok {
		line, col := lineCol(lineStarts(s), s, i)
		return line, col, fmt.Sprintf("more than %d prefix operators in a row", maxPrefixRun), true
	}
	return 0, 0, "", false
}

// prefixRun finds where more than maxPrefixRun prefix operators follow
// one another, with only spaces between them.
func prefixRun(s string) (int, bool) {
	run := 0
	for i := 0; i < len(s); {
		n := prefix(s, i)
		if n == 0 {
			switch s[i] {
			case ' ', '\t', '\r', '\n':
			default:
				run = 0
			}
			i++
			continue
		}
		if run++; run > maxPrefixRun {
			return i, true
		}
		i += n
	}
	return 0, false
}

// prefix is the length of the operator that may be a prefix one at s[i]:
// ! ~ + - or the words typeof, void, delete, await, new; 0 if none.
func prefix(s string, i int) int {
	switch s[i] {
	case '!', '~', '+', '-':
		return 1
	}
	if i > 0 && wordByte(s[i-1]) {
		return 0
	}
	for _, w := range []string{"typeof", "void", "delete", "await", "new"} {
		if strings.HasPrefix(s[i:], w) && (i+len(w) == len(s) || !wordByte(s[i+len(w)])) {
			return len(w)
		}
	}
	return 0
}

func wordByte(b byte) bool {
	return b == '_' || b == '$' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineCol is the 1-based line and column (in characters) of a byte offset.
func lineCol(starts []int, s string, off int) (int, int) {
	lo, hi := 0, len(starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if off > len(s) {
		off = len(s)
	}
	return lo + 1, utf8.RuneCountInString(s[starts[lo]:off]) + 1
}

// offsetOf is the byte offset of a 1-based line and column, or -1.
func offsetOf(starts []int, s string, line, col int) int {
	if line < 1 || line > len(starts) {
		return -1
	}
	off := starts[line-1]
	for n := 1; n < col && off < len(s); n++ {
		if s[off] == '\n' {
			return -1
		}
		_, size := utf8.DecodeRuneInString(s[off:])
		off += size
	}
	return off
}
