package workflow

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentgate/nmhost/mediator"
)

// Limits on a workflow, checked before anything runs.
const (
	MaxTasks     = 10_000
	MaxSpecBytes = 4 << 20
	maxIDLen     = 64
	maxExprBytes = 16 << 10
)

// Spec is a workflow as a client sends it: a graph of tasks.
type Spec struct {
	// ID names the workflow in the audit trail; the host makes one up
	// when it is empty.
	ID    string `json:"id,omitempty"`
	Tasks []Task `json:"tasks"`
}

// Task is one node: exactly one of Run, Call, MCP and Code.
type Task struct {
	ID        string    `json:"id"`
	DependsOn []string  `json:"dependsOn,omitempty"`
	Run       *RunTask  `json:"run,omitempty"`
	Call      *CallTask `json:"call,omitempty"`
	MCP       *MCPTask  `json:"mcp,omitempty"`
	Code      *CodeStep `json:"code,omitempty"`
	// SafeToFail says whether the task's failure leaves the workflow
	// succeeding (its dependants still skip). Unset, a pure task (a code
	// step, a run decided pure) is safe to fail and any other is not; a
	// call can never be marked so: a side effect that failed halfway is
	// not something to shrug off.
	SafeToFail *bool `json:"safeToFail,omitempty"`
}

// RunTask is an agent run. Input is literal text; InputExpr, a CEL expression
// over earlier results, is evaluated to a string instead when set. Pure
// declares that the agent's module imports nothing with a side effect;
// the host checks that before the workflow starts (not_pure in strictMode).
type RunTask struct {
	AgentID   string `json:"agentId"`
	Input     string `json:"input,omitempty"`
	InputExpr string `json:"inputExpr,omitempty"`
	Pure      bool   `json:"pure,omitempty"`
}

// CallTask is one restricted API operation on behalf of an agent, with its
// exact target: what a layer's prompt shows.
type CallTask struct {
	AgentID   string `json:"agentId"`
	Operation string `json:"operation"` // network.fetch, notifications.showNotification, ...
	Method    string `json:"method,omitempty"`
	URL       string `json:"url,omitempty"`
	// URLExpr, a CEL expression over earlier results, computes the URL
	// instead: the task cannot be decided before its layer, and the plan
	// lists it as decided when known.
	URLExpr  string            `json:"urlExpr,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	Body     string            `json:"body,omitempty"`
	Selector string            `json:"selector,omitempty"`
	Text     string            `json:"text,omitempty"`
	Title    string            `json:"title,omitempty"`
}

// CodeStep is a pure step named by its operation (code:filter, code:map,
// ...) so the audit trail reads like the workflow: either Expr, a CEL
// expression over earlier results, or JS, the body of a JavaScript
// function from an agent's script (workflow/script), run with Vars bound
// to earlier results in an engine with no host objects (workflow/purejs).
type CodeStep struct {
	Op   string `json:"op"`
	Expr string `json:"expr,omitempty"`
	JS   string `json:"js,omitempty"`
	// Vars binds the JavaScript's free names to the tasks whose results
	// they are: name -> task id, each one of the task's dependencies.
	Vars map[string]string `json:"vars,omitempty"`
}

// MCPTask is one call of a tool of an MCP server on behalf of an agent:
// a side effect, which a person approves (the plan lists it so). Args
// are the call's arguments as literal JSON (an object), shown exactly in
// the plan; ArgsExpr, a JavaScript expression from the script over
// earlier results (Vars), computes them instead when the layer is
// reached.
type MCPTask struct {
	AgentID  string            `json:"agentId"`
	Server   string            `json:"server"`
	Tool     string            `json:"tool"`
	Args     json.RawMessage   `json:"args,omitempty"`
	ArgsExpr string            `json:"argsExpr,omitempty"`
	Vars     map[string]string `json:"vars,omitempty"`
}

// kind is what a task does.
func (t Task) kind() string {
	switch {
	case t.Run != nil:
		return "run"
	case t.Call != nil:
		return "call"
	case t.MCP != nil:
		return "mcp"
	}
	return "code"
}

// Parse reads an untrusted workflow exactly (names match exactly; unknown
// and repeated members refused) and checks its graph: every id unique and
// plain, every dependency known, no cycle, each task one kind.
func Parse(data []byte) (Spec, error) {
	if len(data) > MaxSpecBytes {
		return Spec{}, mediator.Errorf(mediator.CodeTooLarge, "the workflow is %d bytes; the limit is %d", len(data), MaxSpecBytes)
	}
	var s Spec
	if err := mediator.DecodeExact(data, &s); err != nil {
		return Spec{}, &mediator.Error{Code: mediator.CodeInvalidWorkflow, Msg: "the workflow is not JSON of the expected shape (names match exactly; no unknown or repeated members)", Err: err}
	}
	return s, s.Check()
}

// Check validates the graph; Parse calls it, and a Spec built in Go should
// be checked before it is run.
func (s Spec) Check() error {
	bad := func(format string, args ...any) error {
		return mediator.Errorf(mediator.CodeInvalidWorkflow, format, args...)
	}
	if s.ID != "" && mediator.ValidAgentID(s.ID) != nil {
		return bad("workflow id %q must be letters, digits, '.', '_' or '-'", mediator.Truncate(s.ID, 64))
	}
	switch {
	case len(s.Tasks) == 0:
		return bad("the workflow has no tasks")
	case len(s.Tasks) > MaxTasks:
		return bad("the workflow has %d tasks; the limit is %d", len(s.Tasks), MaxTasks)
	}
	index := make(map[string]int, len(s.Tasks))
	for i, t := range s.Tasks {
		if len(t.ID) > maxIDLen || mediator.ValidAgentID(t.ID) != nil {
			return bad("task id %q must be 1-%d letters, digits, '.', '_' or '-'", mediator.Truncate(t.ID, 64), maxIDLen)
		}
		if _, dup := index[t.ID]; dup {
			return bad("task id %q is used twice", t.ID)
		}
		index[t.ID] = i
		n := 0
		for _, set := range []bool{t.Run != nil, t.Call != nil, t.MCP != nil, t.Code != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return bad("task %q must have exactly one of run, call, mcp and code", t.ID)
		}
		if t.Code != nil && (len(t.Code.Expr) > maxExprBytes || len(t.Code.JS) > maxExprBytes) || t.Run != nil && len(t.Run.InputExpr) > maxExprBytes ||
			t.Call != nil && len(t.Call.URLExpr) > maxExprBytes || t.MCP != nil && len(t.MCP.ArgsExpr) > maxExprBytes {
			return bad("task %q: an expression is longer than %d bytes", t.ID, maxExprBytes)
		}
		if err := t.checkJS(); err != nil {
			return err
		}
		if t.Call != nil && t.Call.URL != "" && t.Call.URLExpr != "" {
			return bad("task %q has both url and urlExpr", t.ID)
		}
		if (t.Call != nil || t.MCP != nil) && t.SafeToFail != nil && *t.SafeToFail {
			return bad("task %q: a call has a side effect and cannot be safeToFail", t.ID)
		}
		if t.Code != nil && mediator.IsUnsafeOperation(t.Code.Op) {
			// Whatever the settings: a step that names eval or fetch is
			// not a typo to run later but a graph to refuse.
			return mediator.Errorf(mediator.CodeUnsafeOperation, "task %q names %q, which can never be a pure step (it evaluates code, waits, reaches the network or writes somewhere)",
				t.ID, mediator.Truncate(t.Code.Op, 32))
		}
	}
	for _, t := range s.Tasks {
		for _, d := range t.DependsOn {
			if _, ok := index[d]; !ok {
				return bad("task %q depends on %q, which is not a task of this workflow", t.ID, mediator.Truncate(d, 64))
			}
			if d == t.ID {
				return bad("task %q depends on itself", t.ID)
			}
		}
	}
	if _, err := s.layers(); err != nil {
		return err
	}
	return nil
}

// layers sorts the tasks topologically into layers: a task's layer is one
// more than its deepest dependency's, so every task of a layer may run
// concurrently. A cycle is refused, naming a task on it.
func (s Spec) layers() ([][]int, error) {
	index := make(map[string]int, len(s.Tasks))
	for i, t := range s.Tasks {
		index[t.ID] = i
	}
	indeg := make([]int, len(s.Tasks))
	users := make([][]int, len(s.Tasks))
	for i, t := range s.Tasks {
		seen := map[string]bool{}
		for _, d := range t.DependsOn {
			if seen[d] {
				continue // a repeated dependency is one edge
			}
			seen[d] = true
			indeg[i]++
			users[index[d]] = append(users[index[d]], i)
		}
	}
	var out [][]int
	var layer []int
	for i := range s.Tasks {
		if indeg[i] == 0 {
			layer = append(layer, i)
		}
	}
	done := 0
	for len(layer) > 0 {
		out = append(out, layer)
		done += len(layer)
		var next []int
		for _, i := range layer {
			for _, u := range users[i] {
				if indeg[u]--; indeg[u] == 0 {
					next = append(next, u)
				}
			}
		}
		slices.Sort(next)
		layer = next
	}
	if done != len(s.Tasks) {
		for i, d := range indeg {
			if d > 0 {
				return nil, mediator.Errorf(mediator.CodeInvalidWorkflow, "the workflow has a cycle through task %q", s.Tasks[i].ID)
			}
		}
	}
	return out, nil
}

func (t Task) String() string { return fmt.Sprintf("%s(%s)", t.ID, t.kind()) }
