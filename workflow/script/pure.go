package script

import (
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
