package script

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow"
	"github.com/agentgate/nmhost/workflow/purejs"
)

// pure makes a pure task.
func (c *conv) pure(name, op, body string, used map[string]string) string {
	id := c.newID(name)
	c.tasks = append(c.tasks, workflow.Task{ID: id, DependsOn: sortedUnique(slices.Collect(maps.Values(used))),
		Code: &workflow.CodeStep{Op: opName(op), JS: body, Vars: maps.Clone(used)}})
	return id
}

// withHelpers puts before body the script's functions it calls, and
// those they call.
func (c *conv) withHelpers(k *checker, body string) string {
	seen := map[string]bool{}
	var order []string
	var visit func(string)
	visit = func(h string) {
		if seen[h] {
			return
		}
		seen[h] = true
		order = append(order, h)
		for _, u := range c.helperUses[h] {
			visit(u)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(k.helpers)) {
		visit(h)
	}
	if len(order) == 0 {
		return body
	}
	slices.Sort(order)
	var b strings.Builder
	for _, h := range order {
		b.WriteString(c.text(c.helpers[h]))
		b.WriteString("\n")
	}
	b.WriteString(body)
	return b.String()
}

// helper records a function declaration of the script.
func (c *conv) helper(f *ast.FunctionLiteral) error {
	if f.Async || f.Generator {
		return c.fail(f, mediator.CodeNotPure, "an async or generator function: tool calls are made at the top of the script")
	}
	name := f.Name.Name.String()
	if forbiddenProp(name) || name == "mcp" || unsafeName(name) || !purejs.ValidName(name) {
		return c.fail(f.Name, mediator.CodeNotPure, "a function named %s", name)
	}
	c.helpers[name] = f
	return nil
}

// checkHelper proves a function of the script pure: it reads only its
// parameters, its own names and the pure globals.
func (c *conv) checkHelper(name string) error {
	f := c.helpers[name]
	k := c.newChecker(false)
	if err := k.function(f.ParameterList, f.Body, child(nil, false), false); err != nil {
		return err
	}
	c.helperUses[name] = slices.Sorted(maps.Keys(k.helpers))
	return nil
}

// newID is a task id for a variable: its name, then name-2, name-3, ...
// for its later versions.
func (c *conv) newID(name string) string {
	base := strings.ReplaceAll(name, "$", "_")
	if len(base) > 56 {
		base = base[:56]
	}
	id := base
	for n := 2; c.ids[id]; n++ {
		id = base + "-" + strconv.Itoa(n)
	}
	c.ids[id] = true
	return id
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// literal is the JSON value of an expression made only of literals: an
// object with plain keys, arrays, strings, numbers, booleans, null.
func literal(e ast.Expression) (any, bool) {
	switch e := e.(type) {
	case *ast.StringLiteral:
		return e.Value.String(), true
	case *ast.NumberLiteral:
		// A number is JavaScript's: a double, whatever its digits (an
		// integer past 2^53 is the double Node would send).
		switch v := e.Value.(type) {
		case int64:
			return float64(v), true
		case float64:
			return v, true
		}
	case *ast.BooleanLiteral:
		return e.Value, true
	case *ast.NullLiteral:
		return nil, true
	case *ast.TemplateLiteral:
		if e.Tag == nil && len(e.Expressions) == 0 && len(e.Elements) == 1 && e.Elements[0].Valid {
			return e.Elements[0].Parsed.String(), true
		}
	case *ast.UnaryExpression:
		if n, ok := e.Operand.(*ast.NumberLiteral); ok && e.Operator == token.MINUS {
			switch v := n.Value.(type) {
			case int64:
				return -float64(v), true
			case float64:
				return -v, true
			}
		}
	case *ast.ArrayLiteral:
		out := make([]any, 0, len(e.Value))
		for _, x := range e.Value {
			v, ok := literal(x)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	case *ast.ObjectLiteral:
		out := map[string]any{}
		for _, p := range e.Value {
			kv, ok := p.(*ast.PropertyKeyed)
			if !ok || kv.Kind != ast.PropertyKindValue || kv.Computed {
				return nil, false
			}
			key, ok := keyName(kv.Key)
			if !ok || forbiddenProp(key) {
				return nil, false
			}
			if _, dup := out[key]; dup {
				return nil, false
			}
			v, ok := literal(kv.Value)
			if !ok {
				return nil, false
			}
			out[key] = v
		}
		return out, true
	}
	return nil, false
}

func nodeKind(n ast.Node) string {
	s := strings.TrimPrefix(fmt.Sprintf("%T", n), "*ast.")
	return strings.TrimSuffix(strings.TrimSuffix(s, "Statement"), "Literal")
}
