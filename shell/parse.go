package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/agentgate/nmhost/mediator"
)

// MaxCommandBytes bounds a command line.
const MaxCommandBytes = 16 << 10

// node is a parsed command line: a simple command, or two joined by
// "&&", "||", "|" or ";".
type node struct {
	op          string // "", "&&", "||", "|", ";"
	left, right *node
	call        *call
}

// call is one simple command with its words unquoted and its redirects.
type call struct {
	args   []word
	out    string // > or >> target; "" for none
	append bool
	in     string // < source
}

// word is one argument; glob is set when it holds unquoted * ? or [.
type word struct {
	text string
	glob bool
}

// refuse is the one error of parsing: the construct, named.
func refuse(format string, args ...any) error {
	return mediator.Errorf(mediator.CodeShellNotAllowed, format, args...)
}

// parse reads a command line with a POSIX shell parser and keeps only
// what the session shell runs: simple commands, joined by ;, &&, || and
// pipes between its own commands, with >, >> and < redirects. Any
// expansion ($VAR, $(...), backticks, arithmetic, ~), assignment,
// background job, subshell, function or control structure is refused.
func parse(line string) (*node, error) {
	if len(line) > MaxCommandBytes {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "the command is %d bytes; the limit is %d", len(line), MaxCommandBytes)
	}
	if strings.ContainsRune(line, 0) {
		return nil, refuse("the command holds a NUL byte")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, refuse("the command does not parse: %s", mediator.Truncate(err.Error(), 200))
	}
	if len(f.Stmts) == 0 {
		return nil, refuse("the command is empty")
	}
	var root *node
	for _, st := range f.Stmts {
		n, err := stmt(st)
		if err != nil {
			return nil, err
		}
		if root == nil {
			root = n
		} else {
			root = &node{op: ";", left: root, right: n}
		}
	}
	return root, nil
}

func stmt(st *syntax.Stmt) (*node, error) {
	switch {
	case st.Background:
		return nil, refuse("background jobs (&) are not run")
	case st.Coprocess:
		return nil, refuse("coprocesses are not run")
	case st.Negated:
		return nil, refuse("negation (!) is not supported")
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		return callNode(c, st.Redirs)
	case *syntax.BinaryCmd:
		if len(st.Redirs) > 0 {
			return nil, refuse("a redirect must follow a single command")
		}
		op := map[syntax.BinCmdOperator]string{syntax.AndStmt: "&&", syntax.OrStmt: "||", syntax.Pipe: "|"}[c.Op]
		if op == "" {
			return nil, refuse("the operator %s is not supported", c.Op)
		}
		l, err := stmt(c.X)
		if err != nil {
			return nil, err
		}
		r, err := stmt(c.Y)
		if err != nil {
			return nil, err
		}
		return &node{op: op, left: l, right: r}, nil
	case nil:
		return nil, refuse("a redirect needs a command")
	}
	return nil, refuse("%s is not supported: only simple commands, joined by ;, &&, || and |", kindOf(st.Cmd))
}

func kindOf(c syntax.Command) string {
	switch c.(type) {
	case *syntax.Subshell:
		return "a subshell"
	case *syntax.Block:
		return "a { } block"
	case *syntax.FuncDecl:
		return "a function"
	case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
		return "a control structure"
	}
	return fmt.Sprintf("%T", c)
}

func callNode(c *syntax.CallExpr, redirs []*syntax.Redirect) (*node, error) {
	if len(c.Assigns) > 0 {
		return nil, refuse("variable assignments are not supported")
	}
	if len(c.Args) == 0 {
		return nil, refuse("a redirect needs a command")
	}
	cl := &call{}
	for _, w := range c.Args {
		wd, err := unquote(w)
		if err != nil {
			return nil, err
		}
		cl.args = append(cl.args, wd)
	}
	for _, r := range redirs {
		if r.N != nil {
			return nil, refuse("redirects of numbered descriptors are not supported")
		}
		target, err := unquote(r.Word)
		if err != nil {
			return nil, err
		}
		if target.glob {
			return nil, refuse("a redirect's target cannot be a pattern")
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut:
			if cl.out != "" {
				return nil, refuse("one output redirect per command")
			}
			cl.out, cl.append = target.text, r.Op == syntax.AppOut
		case syntax.RdrIn:
			if cl.in != "" {
				return nil, refuse("one input redirect per command")
			}
			cl.in = target.text
		default:
			return nil, refuse("the redirect %s is not supported (only >, >> and <)", r.Op)
		}
	}
	return &node{call: cl}, nil
}

// unquote turns a word into its text, refusing every expansion. Unquoted
// *, ? and [ make it a pattern, matched inside the workspace only.
func unquote(w *syntax.Word) (word, error) {
	var b strings.Builder
	glob := false
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return word{}, refuse("~ (a home directory) is not expanded")
			}
			glob = glob || strings.ContainsAny(unescapedSpecials(p.Value), "*?[")
			b.WriteString(unescape(p.Value, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				return word{}, refuse("$'...' strings are not supported")
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return word{}, refuse(`$"..." strings are not supported`)
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return word{}, refuse("%s inside double quotes is not expanded", partName(q))
				}
				b.WriteString(unescape(lit.Value, true))
			}
		default:
			return word{}, refuse("%s is not expanded", partName(p))
		}
	}
	return word{text: b.String(), glob: glob}, nil
}

func partName(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "a variable ($...)"
	case *syntax.CmdSubst:
		return "a command substitution ($(...) or `...`)"
	case *syntax.ArithmExp:
		return "arithmetic ($((...)))"
	case *syntax.ProcSubst:
		return "a process substitution"
	case *syntax.ExtGlob:
		return "an extended pattern"
	case *syntax.BraceExp:
		return "a brace expansion"
	}
	return fmt.Sprintf("%T", p)
}

// unescape removes the backslashes of a literal: any character after one
// outside quotes; only \ " $ and ` inside double quotes.
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!dquoted || strings.IndexByte("\\\"$`", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapedSpecials drops escaped characters, so "\*" is not a pattern.
func unescapedSpecials(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
