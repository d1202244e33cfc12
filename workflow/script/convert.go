package script

import (
	"maps"
	"slices"
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
