package script

import (
	"regexp/syntax"
	"slices"

	"github.com/dop251/goja/ast"

	"github.com/agentgate/nmhost/mediator"
)

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

// regexp refuses a regular expression that could backtrack without
// bound: only what RE2 (Go's regexp) accepts, which runs in linear time.
func (k *checker) regexp(n ast.Node, pattern string) error {
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return k.fail(n, mediator.CodeNotPure, "a regular expression outside what runs in linear time: %v", err)
	}
	return nil
}
