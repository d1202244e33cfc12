package script

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/dop251/goja/ast"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow"
	"github.com/agentgate/nmhost/workflow/purejs"
)

// unroll converts a for-of loop of tool calls over items known before
// anything runs (an array literal, or a const bound to one), within
// MaxLoopItems: its body once per item, the loop variable a pure task of
// the item.
func (c *conv) unroll(s *ast.ForOfStatement) error {
	var items *ast.ArrayLiteral
	switch src := s.Source.(type) {
	case *ast.ArrayLiteral:
		items = src
	case *ast.Identifier:
		items = c.arrays[src.Name.String()]
	}
	if items == nil {
		return c.fail(s.Source, mediator.CodeNotPure, "a tool call in a loop over data: how many calls it makes is known only when the script runs, and the plan is decided before (loop over a literal array)")
	}
	if len(items.Value) > c.opts.MaxLoopItems {
		return c.fail(s.Source, mediator.CodeNotPure, "a tool call in a loop of %d items; the limit is %d", len(items.Value), c.opts.MaxLoopItems)
	}
	d, ok := s.Into.(*ast.ForDeclaration)
	if !ok {
		return c.fail(s.Into, mediator.CodeNotPure, "a loop of tool calls declares its variable: for (const x of ...)")
	}
	id, ok := d.Target.(*ast.Identifier)
	if !ok {
		return c.fail(d.Target, mediator.CodeNotPure, "a loop of tool calls binds one name")
	}
	name := id.Name.String()
	if _, ok := c.vars[name]; ok || !purejs.ValidName(name) || forbiddenProp(name) {
		return c.fail(id, mediator.CodeNotPure, "a loop variable named %s (another name of the script, or not one a step can bind)", name)
	}
	body := []ast.Statement{s.Body}
	if b, ok := s.Body.(*ast.BlockStatement); ok {
		body = b.List
	}
	for _, item := range items.Value {
		if _, ok := item.(*ast.SpreadElement); ok || item == nil {
			return c.fail(items, mediator.CodeNotPure, "a loop of tool calls over an array with a spread or a hole")
		}
		saved := c.scopeSave()
		if err := c.bind(name, item, item, d.IsConst); err != nil {
			return err
		}
		if err := c.statements(body, false); err != nil {
			return err
		}
		c.scopeRestore(saved)
	}
	return nil
}

// scope is what a block may shadow; restored when it ends, keeping the
// versions of outer variables the block assigned.
type savedScope struct {
	vars   map[string]string
	consts map[string]bool
	arrays map[string]*ast.ArrayLiteral
}

func (c *conv) scopeSave() savedScope {
	return savedScope{maps.Clone(c.vars), maps.Clone(c.consts), maps.Clone(c.arrays)}
}

func (c *conv) scopeRestore(s savedScope) {
	for name := range c.vars {
		if _, outer := s.vars[name]; !outer {
			delete(c.vars, name)
			delete(c.consts, name)
			delete(c.arrays, name)
		}
	}
}

// toolCall is `mcp.server.tool(arg)`.
type toolCall struct {
	server, tool string
	call         *ast.CallExpression
}

// toolCallOf reads an awaited tool call. Its names must be written in
// the script: a computed one is refused by the checker.
func (c *conv) toolCallOf(aw *ast.AwaitExpression) (toolCall, bool) {
	call, ok := aw.Argument.(*ast.CallExpression)
	if !ok {
		return toolCall{}, false
	}
	d, ok := call.Callee.(*ast.DotExpression)
	if !ok {
		return toolCall{}, false
	}
	names, ok := toolCallee(d)
	if !ok {
		return toolCall{}, false
	}
	return toolCall{server: names[0], tool: names[1], call: call}, true
}

// toolCallee reads mcp.server.tool.
func toolCallee(d *ast.DotExpression) ([2]string, bool) {
	inner, ok := d.Left.(*ast.DotExpression)
	if !ok {
		return [2]string{}, false
	}
	root, ok := inner.Left.(*ast.Identifier)
	if !ok || root.Name != "mcp" {
		return [2]string{}, false
	}
	return [2]string{inner.Identifier.Name.String(), d.Identifier.Name.String()}, true
}

// findTool finds a tool call (or any await) in a statement.
func (c *conv) findTool(s ast.Statement) ast.Node {
	var found ast.Node
	walk(s, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if aw, ok := n.(*ast.AwaitExpression); ok {
			found = aw
			return false
		}
		if d, ok := n.(*ast.DotExpression); ok {
			if _, ok := toolCallee(d); ok {
				found = d
				return false
			}
		}
		return true
	})
	return found
}

// tool makes an mcp task: its arguments literal JSON when they are, else
// the script's own expression, checked pure; after the previous tool
// call, whatever the data says.
func (c *conv) tool(name string, tc toolCall) (string, error) {
	for _, n := range []string{tc.server, tc.tool} {
		if !plainName(n) {
			return "", c.fail(tc.call.Callee, mediator.CodeNotPure, "tool name %q: a server's and a tool's names are letters, digits, '_' or '-'", n)
		}
	}
	if len(tc.call.ArgumentList) > 1 {
		return "", c.fail(tc.call, mediator.CodeNotPure, "a tool call takes one argument, an object")
	}
	m := &workflow.MCPTask{AgentID: c.opts.AgentID, Server: tc.server, Tool: tc.tool}
	var deps []string
	if len(tc.call.ArgumentList) == 1 {
		arg := tc.call.ArgumentList[0]
		if _, ok := arg.(*ast.SpreadElement); ok {
			return "", c.fail(arg, mediator.CodeNotPure, "a spread as a tool's arguments")
		}
		if v, ok := literal(arg); ok {
			if _, isObj := v.(map[string]any); !isObj {
				return "", c.fail(arg, mediator.CodeNotPure, "a tool's arguments are an object")
			}
			m.Args, _ = json.Marshal(v)
		} else {
			k := c.newChecker(true)
			if err := k.expr(arg, child(nil, false)); err != nil {
				return "", err
			}
			if len(k.helpers) > 0 {
				return "", c.fail(arg, mediator.CodeNotPure, "a tool's arguments call a function of the script: compute them in a const first")
			}
			m.ArgsExpr = c.text(arg)
			m.Vars = maps.Clone(k.used)
			deps = slices.Collect(maps.Values(k.used))
		}
	}
	if c.lastTool != "" {
		deps = append(deps, c.lastTool)
	}
	id := c.newID(name)
	c.tasks = append(c.tasks, workflow.Task{ID: id, DependsOn: sortedUnique(deps), MCP: m})
	c.lastTool = id
	return id, nil
}

func plainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
