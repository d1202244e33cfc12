package script

import (
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"

	"github.com/agentgate/nmhost/mediator"
)

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
