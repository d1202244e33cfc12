package script

import (
	"encoding/json"
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

// Options are a conversion's.
type Options struct {
	// ID names the workflow; AgentID is the agent the tool calls are made
	// for.
	ID, AgentID string
	// MaxLoopItems bounds the tool calls a loop may unroll to (one task
	// per item); zero means DefaultMaxLoopItems.
	MaxLoopItems int
}

// DefaultMaxLoopItems is how many items a loop of tool calls may have.
const DefaultMaxLoopItems = 100

// Convert turns a script into its workflow. name's extension says
// whether it is TypeScript. Nothing runs: a script is converted whole or
// refused with an *Error (its code, line and column).
func Convert(name string, src []byte, opts Options) (workflow.Spec, error) {
	if opts.MaxLoopItems <= 0 {
		opts.MaxLoopItems = DefaultMaxLoopItems
	}
	if opts.AgentID == "" {
		opts.AgentID = "script"
	}
	s, err := parse(name, src)
	if err != nil {
		return workflow.Spec{}, err
	}
	c := &conv{src: s, opts: opts, ids: map[string]bool{}, vars: map[string]string{}, consts: map[string]bool{},
		helpers: map[string]*ast.FunctionLiteral{}, helperUses: map[string][]string{}, arrays: map[string]*ast.ArrayLiteral{}}
	if err := c.program(s.body.Body.List); err != nil {
		return workflow.Spec{}, err
	}
	if len(c.tasks) == 0 {
		return workflow.Spec{}, &Error{Line: 1, Column: 1, Err: mediator.Errorf(mediator.CodeInvalidWorkflow, "the script calls no tool and computes nothing")}
	}
	spec := workflow.Spec{ID: opts.ID, Tasks: c.tasks}
	if err := spec.Check(); err != nil {
		return workflow.Spec{}, &Error{Line: 1, Column: 1, Err: asMediator(err)}
	}
	return spec, nil
}

func asMediator(err error) *mediator.Error {
	return &mediator.Error{Code: mediator.CodeOf(err), Msg: mediator.MessageOf(err)}
}

// conv is one conversion: the tasks so far and what each script variable
// is now.
type conv struct {
	src   *source
	opts  Options
	tasks []workflow.Task
	ids   map[string]bool
	// vars maps each script variable in scope to the task whose result
	// it is now; consts are those declared const.
	vars   map[string]string
	consts map[string]bool
	// arrays are const variables bound to an array literal: a loop over
	// one has a count known before anything runs.
	arrays map[string]*ast.ArrayLiteral
	// helpers are the script's function declarations, each checked pure,
	// and the helpers each calls.
	helpers    map[string]*ast.FunctionLiteral
	helperUses map[string][]string
	// lastTool is the latest tool task: tool calls keep the script's
	// order, whatever their data says.
	lastTool string
}

func (c *conv) fail(n ast.Node, code mediator.Code, format string, args ...any) error {
	line, col := 1, 1
	if n != nil {
		line, col = c.src.pos(c.start(n))
	}
	return &Error{Line: line, Column: col, Err: mediator.Errorf(code, format, args...)}
}

// text is the script's own text of a node.
func (c *conv) text(n ast.Node) string {
	return c.src.js[c.start(n) : int(n.Idx1())-1]
}

// start is the offset where n begins. goja's parser leaves an if
// statement's own position unset: it is the "if" before its test.
func (c *conv) start(n ast.Node) int {
	if s, ok := n.(*ast.IfStatement); ok && s.If == 0 {
		return strings.LastIndex(c.src.js[:int(s.Test.Idx0())-1], "if")
	}
	return max(int(n.Idx0())-1, 0)
}

// program converts the script's top-level statements in order.
func (c *conv) program(list []ast.Statement) error {
	for _, s := range list {
		if f, ok := s.(*ast.FunctionDeclaration); ok {
			if err := c.helper(f.Function); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.helpers)) {
		if err := c.checkHelper(name); err != nil {
			return err
		}
	}
	return c.statements(list, true)
}

func (c *conv) statements(list []ast.Statement, top bool) error {
	for i, s := range list {
		if r, ok := s.(*ast.ReturnStatement); ok {
			if !top || i != len(list)-1 {
				return c.fail(r, mediator.CodeNotPure, "return before the end of the script")
			}
		}
		if err := c.statement(s); err != nil {
			return err
		}
	}
	return nil
}

func (c *conv) statement(s ast.Statement) error {
	switch s := s.(type) {
	case *ast.EmptyStatement, *ast.FunctionDeclaration:
		return nil
	case *ast.LexicalDeclaration:
		return c.declaration(s.List, s.Token == token.CONST)
	case *ast.VariableStatement:
		return c.declaration(s.List, false)
	case *ast.ExpressionStatement:
		return c.expressionStatement(s)
	case *ast.ReturnStatement:
		if s.Argument == nil {
			return nil
		}
		// The task is named "return", which no variable of the script can be.
		return c.bind("return", s.Argument, s, false)
	case *ast.IfStatement:
		if n := c.findTool(s); n != nil {
			return c.fail(n, mediator.CodeNotPure, "a tool call under a condition: whether it happens is known only when the script runs, and the plan is decided before")
		}
		return c.pureStatement(s, "code:logic")
	case *ast.ForOfStatement:
		if c.findTool(s) != nil {
			return c.unroll(s)
		}
		return c.pureStatement(s, "code:computation")
	case *ast.ForStatement, *ast.ForInStatement, *ast.WhileStatement, *ast.DoWhileStatement, *ast.SwitchStatement:
		if n := c.findTool(s); n != nil {
			return c.fail(n, mediator.CodeNotPure, "a tool call in a loop whose count is data: the plan must know every call before the script runs (for (const x of [literal items]) unrolls)")
		}
		return c.pureStatement(s, "code:computation")
	case *ast.BlockStatement:
		saved := c.scopeSave()
		defer c.scopeRestore(saved)
		return c.statements(s.List, false)
	case *ast.ClassDeclaration:
		return c.fail(s, mediator.CodeNotPure, "a class runs code when it is made and used")
	case *ast.ThrowStatement:
		return c.fail(s, mediator.CodeNotPure, "throw at the top of the script ends it there")
	}
	return c.fail(s, mediator.CodeNotPure, "%s is not something the converter can prove pure or turn into a tool task", nodeKind(s))
}

// declaration converts const/let/var bindings: each is a tool task or a
// pure task named after its variable.
func (c *conv) declaration(list []*ast.Binding, isConst bool) error {
	for _, b := range list {
		id, ok := b.Target.(*ast.Identifier)
		if !ok {
			return c.fail(b.Target, mediator.CodeNotPure, "destructuring at the top of the script: bind one name, then read its properties")
		}
		name := id.Name.String()
		if b.Initializer == nil {
			return c.fail(b, mediator.CodeNotPure, "%s has no value: give it one where it is declared", name)
		}
		if forbiddenProp(name) || name == "mcp" || unsafeName(name) || !purejs.ValidName(name) {
			return c.fail(id, mediator.CodeNotPure, "a variable named %s", name)
		}
		if _, ok := c.vars[name]; ok {
			return c.fail(id, mediator.CodeNotPure, "declares %s again in a block: use another name", name)
		}
		if err := c.bind(name, b.Initializer, b, isConst); err != nil {
			return err
		}
		if isConst {
			if a, ok := b.Initializer.(*ast.ArrayLiteral); ok {
				c.arrays[name] = a
			}
		}
	}
	return nil
}

// bind makes the task that computes name's new value from e: a tool task
// when e is `await mcp.server.tool(args)`, else a pure task.
func (c *conv) bind(name string, e ast.Expression, at ast.Node, isConst bool) error {
	if aw, ok := e.(*ast.AwaitExpression); ok {
		if call, ok := c.toolCallOf(aw); ok {
			id, err := c.tool(name, call)
			if err != nil {
				return err
			}
			c.setVar(name, id, isConst)
			return nil
		}
	}
	k := c.newChecker(true)
	if err := k.expr(e, child(nil, false)); err != nil {
		return err
	}
	id := c.pure(name, opOf(e), c.withHelpers(k, "return ("+c.text(e)+"\n);"), k.used)
	c.setVar(name, id, isConst)
	return nil
}

func (c *conv) setVar(name, id string, isConst bool) {
	c.vars[name] = id
	c.consts[name] = isConst
	delete(c.arrays, name)
}

// expressionStatement converts a statement that is a tool call, or an
// assignment of a let variable (a new version of it).
func (c *conv) expressionStatement(s *ast.ExpressionStatement) error {
	switch e := s.Expression.(type) {
	case *ast.AwaitExpression:
		if call, ok := c.toolCallOf(e); ok {
			_, err := c.tool(call.server+"."+call.tool, call)
			return err
		}
	case *ast.AssignExpression:
		id, ok := e.Left.(*ast.Identifier)
		if !ok {
			return c.fail(e.Left, mediator.CodeNotPure, "changes a value other steps may hold: assign a variable instead")
		}
		name := id.Name.String()
		if _, ok := c.vars[name]; !ok {
			return c.fail(id, mediator.CodeNotPure, "assigns %s, which is not a variable of the script", name)
		}
		if c.consts[name] {
			return c.fail(id, mediator.CodeNotPure, "assigns %s, a const", name)
		}
		if e.Operator == token.ASSIGN {
			return c.bind(name, e.Right, s, false)
		}
		return c.pureStatement(s, opOfAssign(e.Operator))
	case *ast.UnaryExpression:
		if e.Operator == token.INCREMENT || e.Operator == token.DECREMENT {
			return c.pureStatement(s, "code:add")
		}
	}
	k := c.newChecker(true)
	if err := k.expr(s.Expression, child(nil, false)); err != nil {
		return err
	}
	return c.fail(s, mediator.CodeNotPure, "a statement whose value is dropped: only a tool call or an assignment has an effect a graph can carry")
}

// pureStatement converts a top-level statement of pure code (an if, a
// loop, a compound assignment): one pure task per script variable it
// assigns, each running the statement itself and returning that
// variable.
func (c *conv) pureStatement(s ast.Statement, op string) error {
	k := c.newChecker(true)
	if err := k.stmt(s, child(nil, false)); err != nil {
		return err
	}
	if len(k.assigned) == 0 {
		return nil // assigns nothing the script reads later: no effect
	}
	src := c.text(s)
	for _, name := range slices.Sorted(maps.Keys(k.assigned)) {
		id := c.pure(name, op, c.withHelpers(k, src+"\nreturn "+name+";"), k.used)
		c.vars[name] = id
	}
	return nil
}

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
