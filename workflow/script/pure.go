package script

import (
	"regexp/syntax"
	"slices"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"

	"github.com/agentgate/nmhost/mediator"
)

// maxDepth bounds how deep expressions and statements nest.
const maxDepth = 1000

// scope is one block's names; fn marks a function's outermost block.
type scope struct {
	parent *scope
	names  map[string]*local
	fn     bool
}

// local is a name a step declared itself: fresh when it holds a value the
// step made (a literal, a new array), which the step may then change.
type local struct{ fresh, constant bool }

func (s *scope) lookup(name string) (*local, bool) {
	for ; s != nil; s = s.parent {
		if l, ok := s.names[name]; ok {
			return l, true
		}
	}
	return nil, false
}

func (s *scope) inFn() bool {
	for ; s != nil; s = s.parent {
		if s.fn {
			return true
		}
	}
	return false
}

func child(parent *scope, fn bool) *scope {
	return &scope{parent: parent, names: map[string]*local{}, fn: fn}
}

// checker proves that code is pure: it reads the script's variables
// (recorded in used), its own names, and the globals listed in names.go,
// calls only the operations listed there, makes no function but a
// callback, and changes nothing another step holds. What it cannot
// prove it refuses, at its place.
type checker struct {
	c *conv
	// used are the script's variables read, by name (their task).
	used map[string]string
	// helpers are the script's functions called.
	helpers map[string]bool
	// assigned are the script's let variables assigned (a top-level if
	// or loop may assign them; nothing else may).
	assigned map[string]bool
	// top: the script's variables are visible (not in a helper).
	top   bool
	depth int
}

func (c *conv) newChecker(top bool) *checker {
	return &checker{c: c, used: map[string]string{}, helpers: map[string]bool{}, assigned: map[string]bool{}, top: top}
}

func (k *checker) fail(n ast.Node, code mediator.Code, format string, args ...any) error {
	return k.c.fail(n, code, format, args...)
}

func (k *checker) deeper(n ast.Node) error {
	if k.depth++; k.depth > maxDepth {
		return k.fail(n, mediator.CodeTooLarge, "the code nests deeper than %d", maxDepth)
	}
	return nil
}

// expr checks an expression.
func (k *checker) expr(e ast.Expression, sc *scope) error {
	if err := k.deeper(e); err != nil {
		return err
	}
	defer func() { k.depth-- }()
	switch e := e.(type) {
	case nil:
		return nil
	case *ast.NumberLiteral, *ast.StringLiteral, *ast.BooleanLiteral, *ast.NullLiteral:
		return nil
	case *ast.RegExpLiteral:
		return k.regexp(e, e.Pattern)
	case *ast.Identifier:
		return k.ident(e, sc, false)
	case *ast.TemplateLiteral:
		if e.Tag != nil {
			return k.fail(e.Tag, mediator.CodeNotPure, "a tagged template calls its tag")
		}
		for _, x := range e.Expressions {
			if err := k.expr(x, sc); err != nil {
				return err
			}
		}
		return nil
	case *ast.ArrayLiteral:
		for _, x := range e.Value {
			if err := k.expr(x, sc); err != nil {
				return err
			}
		}
		return nil
	case *ast.SpreadElement:
		return k.expr(e.Expression, sc)
	case *ast.ObjectLiteral:
		return k.object(e, sc)
	case *ast.DotExpression:
		return k.dot(e, sc)
	case *ast.BracketExpression:
		if k.rootedAtMCP(e, sc) {
			return k.fail(e, mediator.CodeNotPure, "a tool's name computed when the script runs: the plan must name every tool before")
		}
		if id, ok := e.Left.(*ast.Identifier); ok && k.global(id.Name.String(), sc) {
			return k.fail(e, mediator.CodeNotPure, "%s[...]: a global is read by name only", id.Name)
		}
		if s, ok := e.Member.(*ast.StringLiteral); ok && forbiddenProp(s.Value.String()) {
			return k.fail(e.Member, mediator.CodeNotPure, "%q reaches a constructor or a prototype", s.Value)
		}
		if err := k.expr(e.Left, sc); err != nil {
			return err
		}
		return k.expr(e.Member, sc)
	case *ast.OptionalChain:
		return k.expr(e.Expression, sc)
	case *ast.Optional:
		return k.expr(e.Expression, sc)
	case *ast.CallExpression:
		return k.call(e, sc)
	case *ast.BinaryExpression:
		if e.Operator == token.INSTANCEOF {
			return k.fail(e, mediator.CodeNotPure, "instanceof reads a constructor (Array.isArray says whether a value is an array)")
		}
		if err := k.expr(e.Left, sc); err != nil {
			return err
		}
		return k.expr(e.Right, sc)
	case *ast.UnaryExpression:
		switch e.Operator {
		case token.DELETE:
			return k.fail(e, mediator.CodeNotPure, "delete changes a value in place")
		case token.INCREMENT, token.DECREMENT:
			return k.target(e.Operand, sc)
		}
		return k.expr(e.Operand, sc)
	case *ast.ConditionalExpression:
		for _, x := range []ast.Expression{e.Test, e.Consequent, e.Alternate} {
			if err := k.expr(x, sc); err != nil {
				return err
			}
		}
		return nil
	case *ast.SequenceExpression:
		for _, x := range e.Sequence {
			if err := k.expr(x, sc); err != nil {
				return err
			}
		}
		return nil
	case *ast.AssignExpression:
		if err := k.target(e.Left, sc); err != nil {
			return err
		}
		return k.expr(e.Right, sc)
	case *ast.AwaitExpression:
		if _, ok := k.c.toolCallOf(e); ok {
			return k.fail(e, mediator.CodeNotPure, "a tool call inside an expression: give it its own statement, `const x = await mcp.server.tool(args)`")
		}
		// What is awaited says first why it is refused (fetch, a
		// computed tool name); a pure value awaited is still refused.
		if err := k.expr(e.Argument, sc); err != nil {
			return err
		}
		return k.fail(e, mediator.CodeNotPure, "await of something that is not a tool call")
	case *ast.NewExpression:
		if id, ok := e.Callee.(*ast.Identifier); ok && unsafeName(id.Name.String()) {
			return k.fail(e, mediator.CodeUnsafeOperation, "new %s can never be pure (code:%s)", id.Name, id.Name)
		}
		return k.fail(e, mediator.CodeNotPure, "new makes an object whose constructor runs code")
	case *ast.ArrowFunctionLiteral, *ast.FunctionLiteral:
		return k.fail(e, mediator.CodeNotPure, "a function as a value: a function is only a pure step's callback, written in the call")
	case *ast.ClassLiteral:
		return k.fail(e, mediator.CodeNotPure, "a class runs code when it is made and used")
	case *ast.ThisExpression:
		return k.fail(e, mediator.CodeNotPure, "this is not a value a step is given")
	case *ast.MetaProperty:
		if e.Meta != nil && e.Meta.Name == "import" {
			return k.fail(e, mediator.CodeUnsafeOperation, "import.meta: a script loads no other code (code:import)")
		}
		return k.fail(e, mediator.CodeNotPure, "%s.%s is not a value a step is given", e.Meta.Name, e.Property.Name)
	}
	return k.fail(e, mediator.CodeNotPure, "%s is not something the converter can prove pure", nodeKind(e))
}

// ident checks a name read as a value (callee: in a call's place).
func (k *checker) ident(id *ast.Identifier, sc *scope, callee bool) error {
	name := id.Name.String()
	if _, ok := sc.lookup(name); ok {
		return nil
	}
	if k.top {
		if v, ok := k.c.vars[name]; ok {
			k.used[name] = v
			return nil
		}
	}
	if _, ok := k.c.helpers[name]; ok {
		if !callee {
			return k.fail(id, mediator.CodeNotPure, "%s, a function, as a value: call it", name)
		}
		k.helpers[name] = true
		return nil
	}
	if !k.top {
		if _, ok := k.c.vars[name]; ok {
			return k.fail(id, mediator.CodeNotPure, "a function reads %s, a variable of the script: pass it as an argument", name)
		}
	}
	switch {
	case name == "mcp":
		return k.fail(id, mediator.CodeNotPure, "mcp used other than as `await mcp.server.tool(args)`: a tool's name must be written in the script")
	case name == "arguments":
		return k.fail(id, mediator.CodeNotPure, "arguments reaches the caller")
	case slices.Contains(values, name):
		return nil
	case conversions[name] != "":
		return nil
	case unsafeName(name):
		return k.fail(id, mediator.CodeUnsafeOperation, "%s can never be pure: it evaluates code, waits, reaches the network or writes somewhere (code:%s)", name, name)
	case statics[name] != nil || constants[name] != nil:
		return k.fail(id, mediator.CodeNotPure, "%s as a value: call its functions by name (%s.x(...))", name, name)
	}
	return k.fail(id, mediator.CodeNotPure, "%s is not a variable of the script nor a pure global", name)
}

// global reports whether name, unbound in the step and the script, is a
// global.
func (k *checker) global(name string, sc *scope) bool {
	if _, ok := sc.lookup(name); ok {
		return false
	}
	if _, ok := k.c.vars[name]; ok {
		return false
	}
	_, ok := k.c.helpers[name]
	return !ok
}

func (k *checker) dot(e *ast.DotExpression, sc *scope) error {
	name := e.Identifier.Name.String()
	if forbiddenProp(name) {
		return k.fail(&e.Identifier, mediator.CodeNotPure, ".%s reaches a constructor, a prototype or a caller", name)
	}
	if id, ok := e.Left.(*ast.Identifier); ok && k.global(id.Name.String(), sc) {
		g := id.Name.String()
		if g == "mcp" {
			return k.fail(e, mediator.CodeNotPure, "mcp.%s used other than as `await mcp.server.tool(args)`", name)
		}
		if unsafeName(g) || mediator.IsUnsafeOperation("code:"+g+"."+name) {
			return k.fail(e, mediator.CodeUnsafeOperation, "%s.%s can never be pure (code:%s.%s)", g, name, g, name)
		}
		if slices.Contains(constants[g], name) {
			return nil
		}
		if statics[g][name] != "" {
			return k.fail(e, mediator.CodeNotPure, "%s.%s as a value: call it", g, name)
		}
		return k.fail(e, mediator.CodeNotPure, "%s.%s is not a pure operation", g, name)
	}
	return k.expr(e.Left, sc)
}

func (k *checker) object(e *ast.ObjectLiteral, sc *scope) error {
	for _, p := range e.Value {
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			if p.Kind != ast.PropertyKindValue {
				return k.fail(p, mediator.CodeNotPure, "a %s runs code when the property is used", map[ast.PropertyKind]string{ast.PropertyKindGet: "getter", ast.PropertyKindSet: "setter"}[p.Kind]+methodWord(p.Kind))
			}
			if !p.Computed {
				if name, ok := keyName(p.Key); ok && forbiddenProp(name) {
					return k.fail(p.Key, mediator.CodeNotPure, "a property named %s reaches or replaces a prototype", name)
				}
			} else {
				if s, ok := p.Key.(*ast.StringLiteral); ok && forbiddenProp(s.Value.String()) {
					return k.fail(p.Key, mediator.CodeNotPure, "a property named %s reaches or replaces a prototype", s.Value)
				}
				if err := k.expr(p.Key, sc); err != nil {
					return err
				}
			}
			if err := k.expr(p.Value, sc); err != nil {
				return err
			}
		case *ast.PropertyShort:
			if forbiddenProp(p.Name.Name.String()) {
				return k.fail(p, mediator.CodeNotPure, "a property named %s reaches or replaces a prototype", p.Name.Name)
			}
			if p.Initializer != nil {
				return k.fail(p, mediator.CodeNotPure, "a default in an object literal")
			}
			if err := k.ident(&p.Name, sc, false); err != nil {
				return err
			}
		case *ast.SpreadElement:
			if err := k.expr(p.Expression, sc); err != nil {
				return err
			}
		default:
			return k.fail(p, mediator.CodeNotPure, "%s in an object literal", nodeKind(p))
		}
	}
	return nil
}

func methodWord(kind ast.PropertyKind) string {
	if kind == ast.PropertyKindMethod {
		return "method"
	}
	return ""
}

func keyName(e ast.Expression) (string, bool) {
	switch e := e.(type) {
	case *ast.Identifier:
		return e.Name.String(), true
	case *ast.StringLiteral:
		return e.Value.String(), true
	}
	return "", false
}

// call checks a call: of a listed method on a value, a listed function
// of a global object, a conversion, or one of the script's functions.
func (k *checker) call(e *ast.CallExpression, sc *scope) error {
	callee := unwrapOptional(e.Callee)
	if k.rootedAtMCP(callee, sc) {
		if d, ok := callee.(*ast.DotExpression); !ok || func() bool { _, ok := toolCallee(d); return !ok }() {
			return k.fail(e, mediator.CodeNotPure, "a tool's name computed when the script runs: the plan must name every tool before")
		}
	}
	switch f := callee.(type) {
	case *ast.DotExpression:
		name := f.Identifier.Name.String()
		if id, ok := f.Left.(*ast.Identifier); ok && k.global(id.Name.String(), sc) {
			g := id.Name.String()
			if g == "mcp" {
				return k.fail(e, mediator.CodeNotPure, "mcp.%s(...): a tool is called as `await mcp.server.tool(args)`", name)
			}
			if unsafeName(g) || mediator.IsUnsafeOperation("code:"+g+"."+name) {
				return k.fail(e, mediator.CodeUnsafeOperation, "%s.%s can never be pure (code:%s.%s)", g, name, g, name)
			}
			if statics[g][name] == "" {
				return k.fail(e, mediator.CodeNotPure, "%s.%s is not a pure operation", g, name)
			}
			if g == "Object" && name == "assign" && (len(e.ArgumentList) == 0 || !isLiteralObject(e.ArgumentList[0])) {
				return k.fail(e, mediator.CodeNotPure, "Object.assign changes its first argument: give it a new object, Object.assign({}, ...)")
			}
			return k.args(e, sc, false)
		}
		if tc, ok := toolCallee(f); ok {
			return k.fail(e, mediator.CodeNotPure, "mcp.%s.%s(...) not awaited: a tool call is `await mcp.server.tool(args)`, on its own statement", tc[0], tc[1])
		}
		if err := k.expr(f.Left, sc); err != nil {
			return err
		}
		if forbiddenProp(name) {
			return k.fail(&f.Identifier, mediator.CodeNotPure, ".%s reaches a constructor, a prototype or a caller", name)
		}
		if methods[name] == "" {
			if unsafeName(name) {
				return k.fail(e, mediator.CodeUnsafeOperation, ".%s can never be pure (code:%s)", name, name)
			}
			return k.fail(&f.Identifier, mediator.CodeNotPure, ".%s(...) is not a pure operation", name)
		}
		if slices.Contains(mutators, name) && !k.fresh(f.Left, sc) {
			return k.fail(e, mediator.CodeNotPure, ".%s changes its array in place, and this one other steps may hold: use a copy, [...x].%s(...)", name, name)
		}
		if slices.Contains(regexArg, name) && len(e.ArgumentList) > 0 {
			switch a := e.ArgumentList[0].(type) {
			case *ast.RegExpLiteral:
			case *ast.StringLiteral:
				if err := k.regexp(a, a.Value.String()); err != nil {
					return err
				}
			default:
				return k.fail(a, mediator.CodeNotPure, ".%s makes a regular expression of its argument: write it as a literal", name)
			}
		}
		reduce := (name == "reduce" || name == "reduceRight") && len(e.ArgumentList) == 2 && k.fresh(e.ArgumentList[1], sc)
		return k.args(e, sc, reduce)
	case *ast.Identifier:
		name := f.Name.String()
		if err := k.ident(f, sc, true); err != nil {
			return err
		}
		if l, ok := sc.lookup(name); ok && l != nil {
			return k.fail(e, mediator.CodeNotPure, "%s(...) calls a value; only named pure operations are called", name)
		}
		if _, ok := k.c.vars[name]; ok && k.top {
			return k.fail(e, mediator.CodeNotPure, "%s(...) calls a value; only named pure operations are called", name)
		}
		return k.args(e, sc, false)
	}
	if err := k.expr(callee, sc); err != nil {
		return err
	}
	return k.fail(e, mediator.CodeNotPure, "calls something that is not a named pure operation")
}

// args checks a call's arguments: a function written there is a callback,
// checked as a function of its own; freshAcc marks a reduce whose first
// parameter starts as a value the step made.
func (k *checker) args(e *ast.CallExpression, sc *scope, freshAcc bool) error {
	for _, a := range e.ArgumentList {
		switch f := a.(type) {
		case *ast.ArrowFunctionLiteral:
			if f.Async {
				return k.fail(f, mediator.CodeNotPure, "an async callback waits")
			}
			if err := k.function(f.ParameterList, f.Body, sc, freshAcc); err != nil {
				return err
			}
		case *ast.FunctionLiteral:
			if f.Async || f.Generator {
				return k.fail(f, mediator.CodeNotPure, "an async or generator callback")
			}
			if err := k.function(f.ParameterList, f.Body, sc, freshAcc); err != nil {
				return err
			}
		default:
			if err := k.expr(a, sc); err != nil {
				return err
			}
		}
	}
	return nil
}

// function checks a function's parameters and body in a scope of its own.
func (k *checker) function(params *ast.ParameterList, body ast.ConciseBody, sc *scope, freshFirst bool) error {
	fs := child(sc, true)
	for i, b := range params.List {
		if err := k.declare(b.Target, fs, &local{fresh: freshFirst && i == 0}); err != nil {
			return err
		}
		if err := k.expr(b.Initializer, fs); err != nil {
			return err
		}
	}
	if params.Rest != nil {
		if err := k.declare(params.Rest, fs, &local{}); err != nil {
			return err
		}
	}
	switch b := body.(type) {
	case *ast.ExpressionBody:
		return k.expr(b.Expression, fs)
	case *ast.BlockStatement:
		return k.block(b.List, fs)
	}
	return k.fail(body, mediator.CodeNotPure, "a function body of an unknown kind")
}

// declare binds a name or a destructuring pattern's names in sc.
func (k *checker) declare(t ast.Expression, sc *scope, l *local) error {
	switch t := t.(type) {
	case *ast.Identifier:
		name := t.Name.String()
		if forbiddenProp(name) || name == "mcp" || unsafeName(name) {
			return k.fail(t, mediator.CodeNotPure, "a variable named %s", name)
		}
		sc.names[name] = l
		return nil
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				if err := k.declare(&p.Name, sc, &local{}); err != nil {
					return err
				}
				if err := k.expr(p.Initializer, sc); err != nil {
					return err
				}
			case *ast.PropertyKeyed:
				if name, ok := keyName(p.Key); !p.Computed && ok && forbiddenProp(name) {
					return k.fail(p.Key, mediator.CodeNotPure, "%s reaches a constructor or a prototype", name)
				}
				if p.Computed {
					return k.fail(p.Key, mediator.CodeNotPure, "a computed name in a pattern")
				}
				v := p.Value
				if b, ok := v.(*ast.AssignExpression); ok {
					if err := k.expr(b.Right, sc); err != nil {
						return err
					}
					v = b.Left
				}
				if err := k.declare(v, sc, &local{}); err != nil {
					return err
				}
			default:
				return k.fail(p, mediator.CodeNotPure, "%s in a pattern", nodeKind(p))
			}
		}
		if t.Rest != nil {
			return k.declare(t.Rest, sc, &local{})
		}
		return nil
	case *ast.ArrayPattern:
		for _, el := range t.Elements {
			if el == nil {
				continue
			}
			if b, ok := el.(*ast.AssignExpression); ok {
				if err := k.expr(b.Right, sc); err != nil {
					return err
				}
				el = b.Left
			}
			if err := k.declare(el, sc, &local{}); err != nil {
				return err
			}
		}
		if t.Rest != nil {
			return k.declare(t.Rest, sc, &local{})
		}
		return nil
	}
	return k.fail(t, mediator.CodeNotPure, "%s as a name", nodeKind(t))
}

// target checks what an assignment changes: a name of the step's own, a
// let variable of the script from a top-level if or loop, or one
// property of a value the step made.
func (k *checker) target(t ast.Expression, sc *scope) error {
	switch t := t.(type) {
	case *ast.Identifier:
		name := t.Name.String()
		if l, ok := sc.lookup(name); ok {
			if l.constant {
				return k.fail(t, mediator.CodeNotPure, "assigns %s, a const", name)
			}
			return nil
		}
		if v, ok := k.c.vars[name]; ok && k.top {
			switch {
			case sc.inFn():
				return k.fail(t, mediator.CodeNotPure, "a function assigns %s, a variable of the script", name)
			case k.c.consts[name]:
				return k.fail(t, mediator.CodeNotPure, "assigns %s, a const", name)
			}
			k.used[name] = v
			k.assigned[name] = true
			return nil
		}
		return k.fail(t, mediator.CodeNotPure, "assigns %s, which is not a variable of the step", name)
	case *ast.DotExpression:
		if forbiddenProp(t.Identifier.Name.String()) {
			return k.fail(&t.Identifier, mediator.CodeNotPure, ".%s reaches a constructor or a prototype", t.Identifier.Name)
		}
		if id, ok := t.Left.(*ast.Identifier); ok {
			if l, ok := sc.lookup(id.Name.String()); ok && l.fresh {
				return nil
			}
		}
		if err := k.expr(t.Left, sc); err != nil {
			return err
		}
	case *ast.BracketExpression:
		if s, ok := t.Member.(*ast.StringLiteral); ok && forbiddenProp(s.Value.String()) {
			return k.fail(t.Member, mediator.CodeNotPure, "%q reaches a constructor or a prototype", s.Value)
		}
		if id, ok := t.Left.(*ast.Identifier); ok {
			if l, ok := sc.lookup(id.Name.String()); ok && l.fresh {
				return k.expr(t.Member, sc)
			}
		}
		if err := k.expr(t.Left, sc); err != nil {
			return err
		}
	}
	return k.fail(t, mediator.CodeNotPure, "changes a value other steps may hold: only a property of an object or array the step made itself may be set")
}

// fresh reports whether e is a value the step makes anew (which it may
// then change without another step seeing it).
func (k *checker) fresh(e ast.Expression, sc *scope) bool {
	switch e := e.(type) {
	case *ast.ArrayLiteral, *ast.ObjectLiteral:
		return true
	case *ast.Identifier:
		l, ok := sc.lookup(e.Name.String())
		return ok && l.fresh
	case *ast.CallExpression:
		if f, ok := unwrapOptional(e.Callee).(*ast.DotExpression); ok {
			switch f.Identifier.Name.String() {
			case "filter", "map", "slice", "concat", "flatMap", "flat", "split", "keys", "values", "entries", "from":
				return true
			}
		}
	}
	return false
}

// block checks a list of statements: its declarations are hoisted, as
// JavaScript does, before its statements are read.
func (k *checker) block(list []ast.Statement, sc *scope) error {
	for _, s := range list {
		if d, ok := s.(*ast.LexicalDeclaration); ok {
			for _, b := range d.List {
				l := &local{constant: d.Token == token.CONST, fresh: b.Initializer != nil && k.fresh(b.Initializer, sc)}
				if err := k.declare(b.Target, sc, l); err != nil {
					return err
				}
			}
		}
		if d, ok := s.(*ast.VariableStatement); ok {
			for _, b := range d.List {
				if err := k.declare(b.Target, sc, &local{fresh: b.Initializer != nil && k.fresh(b.Initializer, sc)}); err != nil {
					return err
				}
			}
		}
	}
	for _, s := range list {
		if err := k.stmt(s, sc); err != nil {
			return err
		}
	}
	return nil
}

// stmt checks a statement of a function's body or of a top-level if or
// loop.
func (k *checker) stmt(s ast.Statement, sc *scope) error {
	if err := k.deeper(s); err != nil {
		return err
	}
	defer func() { k.depth-- }()
	switch s := s.(type) {
	case *ast.EmptyStatement, *ast.BranchStatement:
		return nil
	case *ast.LexicalDeclaration:
		for _, b := range s.List {
			if err := k.expr(b.Initializer, sc); err != nil {
				return err
			}
		}
		return nil
	case *ast.VariableStatement:
		for _, b := range s.List {
			if err := k.expr(b.Initializer, sc); err != nil {
				return err
			}
		}
		return nil
	case *ast.ExpressionStatement:
		return k.expr(s.Expression, sc)
	case *ast.ReturnStatement:
		if !sc.inFn() {
			return k.fail(s, mediator.CodeNotPure, "return inside a top-level if or loop ends the script there")
		}
		return k.expr(s.Argument, sc)
	case *ast.ThrowStatement:
		if !sc.inFn() {
			return k.fail(s, mediator.CodeNotPure, "throw outside a callback ends the script there")
		}
		return k.expr(s.Argument, sc)
	case *ast.BlockStatement:
		return k.block(s.List, child(sc, false))
	case *ast.IfStatement:
		if err := k.expr(s.Test, sc); err != nil {
			return err
		}
		if err := k.stmt(s.Consequent, sc); err != nil {
			return err
		}
		if s.Alternate != nil {
			return k.stmt(s.Alternate, sc)
		}
		return nil
	case *ast.ForOfStatement:
		return k.forInto(s.Into, s.Source, s.Body, sc)
	case *ast.ForInStatement:
		return k.forInto(s.Into, s.Source, s.Body, sc)
	case *ast.ForStatement:
		ls := child(sc, false)
		switch in := s.Initializer.(type) {
		case nil:
		case *ast.ForLoopInitializerLexicalDecl:
			if err := k.block([]ast.Statement{&in.LexicalDeclaration}, ls); err != nil {
				return err
			}
		case *ast.ForLoopInitializerExpression:
			if err := k.expr(in.Expression, ls); err != nil {
				return err
			}
		default:
			return k.fail(s, mediator.CodeNotPure, "a for loop with var: use let")
		}
		for _, x := range []ast.Expression{s.Test, s.Update} {
			if err := k.expr(x, ls); err != nil {
				return err
			}
		}
		return k.stmt(s.Body, ls)
	case *ast.WhileStatement:
		if err := k.expr(s.Test, sc); err != nil {
			return err
		}
		return k.stmt(s.Body, sc)
	case *ast.DoWhileStatement:
		if err := k.expr(s.Test, sc); err != nil {
			return err
		}
		return k.stmt(s.Body, sc)
	case *ast.SwitchStatement:
		if err := k.expr(s.Discriminant, sc); err != nil {
			return err
		}
		cs := child(sc, false)
		for _, c := range s.Body {
			if err := k.expr(c.Test, cs); err != nil {
				return err
			}
			if err := k.block(c.Consequent, cs); err != nil {
				return err
			}
		}
		return nil
	case *ast.LabelledStatement:
		return k.stmt(s.Statement, sc)
	}
	return k.fail(s, mediator.CodeNotPure, "%s is not something the converter can prove pure", nodeKind(s))
}

func (k *checker) forInto(into ast.ForInto, source ast.Expression, body ast.Statement, sc *scope) error {
	if err := k.expr(source, sc); err != nil {
		return err
	}
	ls := child(sc, false)
	switch in := into.(type) {
	case *ast.ForDeclaration:
		if err := k.declare(in.Target, ls, &local{constant: in.IsConst}); err != nil {
			return err
		}
	case *ast.ForIntoExpression:
		if err := k.target(in.Expression, sc); err != nil {
			return err
		}
	default:
		return k.fail(into, mediator.CodeNotPure, "a loop with var: use const or let")
	}
	return k.stmt(body, ls)
}

// regexp refuses a regular expression that could backtrack without
// bound: only what RE2 (Go's regexp) accepts, which runs in linear time.
func (k *checker) regexp(n ast.Node, pattern string) error {
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return k.fail(n, mediator.CodeNotPure, "a regular expression outside what runs in linear time: %v", err)
	}
	return nil
}

// rootedAtMCP reports whether e reads mcp (the global, not a name of the
// script's) through properties, computed or not.
func (k *checker) rootedAtMCP(e ast.Expression, sc *scope) bool {
	for {
		switch x := unwrapOptional(e).(type) {
		case *ast.DotExpression:
			e = x.Left
		case *ast.BracketExpression:
			e = x.Left
		case *ast.Identifier:
			return x.Name == "mcp" && k.global("mcp", sc)
		default:
			return false
		}
	}
}

func unwrapOptional(e ast.Expression) ast.Expression {
	for {
		switch x := e.(type) {
		case *ast.Optional:
			e = x.Expression
		case *ast.OptionalChain:
			e = x.Expression
		default:
			return e
		}
	}
}

func isLiteralObject(e ast.Expression) bool {
	_, ok := e.(*ast.ObjectLiteral)
	return ok
}
