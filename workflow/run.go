package workflow

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow/purejs"
)

// Agents runs agents for run tasks.
type Agents interface {
	// Pure reports whether the agent's module imports nothing with a side
	// effect (and why not, when it does).
	Pure(ctx context.Context, agentID string) (bool, string, error)
	// Run runs the agent with input; its calls are decided as in any run.
	Run(ctx context.Context, agentID, input string) (map[string]any, error)
}

// Caller performs call tasks.
type Caller interface {
	// Prepare runs the checks before the policy and returns the operation
	// the task is decided as, its target in canonical form.
	Prepare(ctx context.Context, c CallTask) (mediator.Operation, error)
	// Do performs the call; auth allows exactly the decided operation.
	Do(ctx context.Context, c CallTask, auth mediator.Authorizer) (map[string]any, error)
}

// Env is what a workflow runs against.
type Env struct {
	Policy   *mediator.Policy
	Prompter mediator.LayerPrompter // nil: tasks that need a person are denied
	// PlanPrompter asks about a whole plan; nil uses Prompter, asked about
	// the plan as one layer (layer 0).
	PlanPrompter mediator.PlanPrompter
	Agents       Agents
	Calls        Caller
	// Tools makes mcp tasks' calls; nil refuses a workflow that has one.
	Tools    ToolCaller
	Settings Settings
	// Events receives a task-result for each task, as it ends; it is
	// called from the workflow's goroutines, one at a time.
	Events func(TaskResult)
}

// TaskResult is one task's outcome, as the task-result event carries it.
type TaskResult struct {
	Task   string        `json:"task"`
	Layer  int           `json:"layer"`
	Status string        `json:"status"` // "ok" or the code
	Code   mediator.Code `json:"code,omitempty"`
	Error  string        `json:"error,omitempty"`
	Value  any           `json:"value,omitempty"`
	// AuditSeq is the task's decision record.
	AuditSeq int64 `json:"auditSeq,omitempty"`
	// SafeToFail: this task's failure does not fail the workflow.
	SafeToFail bool `json:"safeToFail,omitempty"`
}

// Summary is how a workflow ended.
type Summary struct {
	Workflow string `json:"workflow"`
	Layers   int    `json:"layers"` // logical layers: the graph's
	// PhysicalLayers is how many layers ran once adjacent layers of pure
	// steps were fused; Fused says which.
	PhysicalLayers int          `json:"physicalLayers"`
	Fused          []Fused      `json:"fused,omitempty"`
	Prompts        int          `json:"prompts"` // plan and layer prompts shown
	Plan           PlanReport   `json:"plan"`
	Tasks          []TaskResult `json:"tasks"`  // in the spec's order
	Status         string       `json:"status"` // "ok" when every task succeeded or was safe to fail
}

// maxParallel bounds the tasks of one layer that run at once.
const maxParallel = 8

// plan is a checked workflow ready to run.
type plan struct {
	spec   Spec
	layers [][]int
	pure   []bool // decided without asking
	code   []program
	input  []program // run tasks' inputExpr
	url    []program // call tasks' urlExpr
	deps   [][]int
}

// prepare checks what must hold before anything runs: the graph, every
// code step (validatePureCode), every task declared pure (strictMode).
func prepare(ctx context.Context, s Spec, env Env) (*plan, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	layers, _ := s.layers()
	p := &plan{spec: s, layers: layers, pure: make([]bool, len(s.Tasks)), code: make([]program, len(s.Tasks)),
		input: make([]program, len(s.Tasks)), url: make([]program, len(s.Tasks)), deps: make([][]int, len(s.Tasks))}
	index := map[string]int{}
	for i, t := range s.Tasks {
		index[t.ID] = i
	}
	var exprs []string
	if env.Settings.ValidatePureCode {
		for _, t := range s.Tasks {
			if t.Code != nil && t.Code.JS == "" && mediator.IsPureOperation(t.Code.Op) {
				exprs = append(exprs, t.Code.Expr)
			}
		}
	}
	compiled := compileAll(exprs)
	comp := func(expr string) (program, error) {
		if c, ok := compiled[expr]; ok {
			return c.p, c.err
		}
		pr, err := compile(expr)
		compiled[expr] = compiledExpr{pr, err}
		return pr, err
	}
	for i, t := range s.Tasks {
		for _, d := range t.DependsOn {
			p.deps[i] = append(p.deps[i], index[d])
		}
		switch {
		case t.Code != nil:
			p.pure[i] = true
			if !env.Settings.ValidatePureCode {
				continue
			}
			if !mediator.IsPureOperation(t.Code.Op) {
				return nil, mediator.Errorf(mediator.CodeInvalidWorkflow, "task %q: %q is not a pure operation (code:filter, code:map, ...)", t.ID, mediator.Truncate(t.Code.Op, 32))
			}
			if t.Code.JS != "" {
				if err := purejs.Check(t.Code.JS, t.Code.Vars); err != nil {
					return nil, fmt.Errorf("task %q: %w", t.ID, err)
				}
				continue
			}
			pr, err := comp(t.Code.Expr)
			if err != nil {
				return nil, fmt.Errorf("task %q: %w", t.ID, err)
			}
			p.code[i] = pr
		case t.MCP != nil:
			if env.Tools == nil {
				return nil, noGateway(t.ID)
			}
			if t.MCP.ArgsExpr != "" {
				if err := purejs.CheckExpr(t.MCP.ArgsExpr, t.MCP.Vars); err != nil {
					return nil, fmt.Errorf("task %q argsExpr: %w", t.ID, err)
				}
			}
		case t.Call != nil && t.Call.URLExpr != "":
			pr, err := comp(t.Call.URLExpr)
			if err != nil {
				return nil, fmt.Errorf("task %q urlExpr: %w", t.ID, err)
			}
			p.url[i] = pr
		case t.Run != nil:
			if t.Run.InputExpr != "" {
				pr, err := comp(t.Run.InputExpr)
				if err != nil {
					return nil, fmt.Errorf("task %q inputExpr: %w", t.ID, err)
				}
				p.input[i] = pr
			}
			if !t.Run.Pure && !env.Settings.AutoclassifyPureOperations {
				continue
			}
			pure, why, err := env.Agents.Pure(ctx, t.Run.AgentID)
			if err != nil && mediator.IsRefusal(mediator.CodeOf(err)) {
				// An agent that is not installed is the plan's refusal
				// (decideRun), named and recorded with the others.
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("task %q: %w", t.ID, err)
			}
			if t.Run.Pure && !pure && env.Settings.StrictMode {
				return nil, mediator.Errorf(mediator.CodeNotPure, "task %q is marked pure, but agent %q's module %s", t.ID, t.Run.AgentID, why)
			}
			p.pure[i] = pure
		}
	}
	return p, nil
}

// Run checks the workflow, decides its whole plan, then runs it layer by
// layer. Before anything runs, every task is decided as far as it can be
// without running it (decidePlan): a task the policy would refuse refuses
// the workflow, and the plan's questions are asked (ApprovePlan: once for
// the plan; ApproveLayer: before each layer). Before a layer runs, the
// policy decides every task in it again (the facts may have changed since
// the plan; a change can only refuse) and records each decision; then its
// allowed tasks run, at most maxParallel at once. A task that fails or is
// denied stops the tasks that depend on it (dependency_failed); the rest
// go on. An error means nothing ran (the workflow was refused) or a
// decision could not be recorded.
func Run(ctx context.Context, s Spec, env Env) (Summary, error) {
	p, err := prepare(ctx, s, env)
	if err != nil {
		return Summary{}, err
	}
	r := &runner{plan: p, env: env, results: make([]TaskResult, len(s.Tasks)), values: make([]any, len(s.Tasks)),
		failed: make([]bool, len(s.Tasks)), calls: make([]*CallTask, len(s.Tasks))}
	sum := Summary{Workflow: s.ID, Layers: len(p.layers), Status: "ok"}
	approved, report, prompted, err := r.decidePlan(ctx)
	if err != nil {
		return Summary{}, err
	}
	r.approved = approved
	sum.Plan = report
	if prompted {
		sum.Prompts++
	}
	for n := 0; n < len(p.layers); {
		// Adjacent layers of pure steps only are fused into one step: one
		// decision call, one transaction for their records, evaluated in
		// line in layer order.
		end := p.fusedEnd(n)
		sum.PhysicalLayers++
		if end-n > 1 {
			sum.Fused = append(sum.Fused, p.fusion(sum.PhysicalLayers, n, end))
			if err := r.fused(ctx, n, end); err != nil {
				return Summary{}, err
			}
			n = end
			continue
		}
		prompted, err := r.layer(ctx, n+1, p.layers[n])
		if err != nil {
			return Summary{}, err
		}
		if prompted {
			sum.Prompts++
		}
		n++
	}
	sum.Tasks = r.results
	for i, t := range r.results {
		if t.Status != "ok" && t.Status != string(mediator.CodeDependencyFailed) && !r.safeToFail(i) {
			sum.Status = "failed"
		}
		// A skipped task whose failed dependency was not safe to fail
		// already failed the workflow through that dependency.
	}
	return sum, nil
}

// safeToFail reports whether task i's failure leaves the workflow
// succeeding: a pure task unless it says otherwise; never a call or a
// side-effecting run.
func (p *plan) safeToFail(i int) bool {
	t := p.spec.Tasks[i]
	if !p.pure[i] {
		return false
	}
	return t.SafeToFail == nil || *t.SafeToFail
}

type runner struct {
	*plan
	env     Env
	mu      sync.Mutex // results, values, failed, Events
	results []TaskResult
	values  []any
	failed  []bool
	// calls are call tasks whose URL was computed (urlExpr), by index.
	calls []*CallTask
	// approved holds the operations the plan's approval covers, by task.
	approved map[int]approval
}

func (r *runner) finish(i, layer int, v any, seq int64, err error) {
	res := TaskResult{Task: r.spec.Tasks[i].ID, Layer: layer, Status: "ok", Value: v, AuditSeq: seq, SafeToFail: r.safeToFail(i)}
	if err != nil {
		res.Code = mediator.CodeOf(err)
		res.Status, res.Error, res.Value = string(res.Code), mediator.Truncate(mediator.MessageOf(err), mediator.MaxDenialReasonBytes), nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[i], r.values[i], r.failed[i] = res, v, err != nil
	if r.env.Events != nil {
		r.env.Events(res)
	}
}

// layer decides and runs one layer; it reports whether it prompted.
func (r *runner) layer(ctx context.Context, n int, layer []int) (bool, error) {
	var todo, tools []int
	var tasks []mediator.LayerTask
	for _, i := range layer {
		if d := r.failedDep(i); d != "" {
			r.finish(i, n, nil, 0, mediator.Errorf(mediator.CodeDependencyFailed, "task %q did not succeed", d))
			continue
		}
		if r.spec.Tasks[i].MCP != nil {
			// The gateway decides and records each tool call itself.
			tools = append(tools, i)
			continue
		}
		lt, err := r.layerTask(ctx, i)
		if err != nil {
			r.finish(i, n, nil, 0, err)
			continue
		}
		todo = append(todo, i)
		tasks = append(tasks, lt)
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallel)
	defer wg.Wait()
	for _, i := range tools {
		wg.Add(1)
		slots <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-slots }()
			v, err := r.callTool(ctx, i)
			r.finish(i, n, v, 0, err)
		}(i)
	}
	if len(todo) == 0 {
		return false, nil
	}
	prompted := false
	prompter := r.env.Prompter
	if prompter != nil {
		prompter = countingPrompter{prompter, &prompted}
	}
	decisions, err := r.env.Policy.AuthorizeLayer(ctx, r.spec.ID, n, tasks, prompter)
	if err != nil {
		return prompted, err
	}
	for k, i := range todo {
		d := decisions[k]
		if !d.Decision.Allowed || d.Decision.Code != mediator.CodeAllowed {
			r.finish(i, n, nil, d.Seq, mediator.Errorf(d.Decision.Code, "%s", d.Decision.Reason))
			continue
		}
		if r.spec.Tasks[i].Code != nil {
			// Pure steps of a layer run in line, one after another: fused,
			// they cost no goroutine and no scheduling.
			v, err := r.evalCode(ctx, i)
			r.finish(i, n, v, d.Seq, err)
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func(i int, op mediator.Operation, seq int64) {
			defer wg.Done()
			defer func() { <-slots }()
			v, err := r.execute(ctx, i, op, seq)
			r.finish(i, n, v, seq, err)
		}(i, tasks[k].Op, d.Seq)
	}
	return prompted, nil
}

// countingPrompter notes that a layer prompt was shown.
type countingPrompter struct {
	next  mediator.LayerPrompter
	shown *bool
}

func (c countingPrompter) PromptLayer(ctx context.Context, p mediator.LayerPrompt) (mediator.Answer, error) {
	*c.shown = true
	return c.next.PromptLayer(ctx, p)
}

func (r *runner) failedDep(i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.deps[i] {
		if r.failed[d] {
			return r.spec.Tasks[d].ID
		}
	}
	return ""
}

// layerTask is task i as the policy decides it when its layer is reached:
// a call whose URL is computed gets it now, from its dependencies' values.
func (r *runner) layerTask(ctx context.Context, i int) (mediator.LayerTask, error) {
	t := r.spec.Tasks[i]
	var lt mediator.LayerTask
	switch {
	case t.Code != nil:
		return mediator.LayerTask{Task: t.ID, Op: mediator.Operation{Name: t.Code.Op}, Pure: true}, nil
	case t.Run != nil:
		lt = mediator.LayerTask{Task: t.ID, Op: mediator.Operation{Name: mediator.OpAgentRun, AgentID: t.Run.AgentID}, Pure: r.pure[i]}
	default:
		call := *t.Call
		if r.url[i].prg != nil {
			v, err := r.url[i].eval(ctx, r.depValues(i))
			if err != nil {
				return lt, err
			}
			u, ok := v.(string)
			if !ok {
				return lt, mediator.Errorf(mediator.CodeTrap, "urlExpr gave a %T, not a string", v)
			}
			call.URL, call.URLExpr = u, ""
			r.mu.Lock()
			r.calls[i] = &call
			r.mu.Unlock()
		}
		op, err := r.env.Calls.Prepare(ctx, call)
		if err != nil {
			return lt, err
		}
		lt = mediator.LayerTask{Task: t.ID, Op: op}
	}
	lt.Ask = !lt.Pure && r.env.Settings.asks(lt.Op.Name)
	if a, ok := r.approved[i]; ok && a.covers(lt.Op) {
		lt.Approved = a.by
	}
	return lt, nil
}

// call is task i's call as it runs: with its computed URL, if any.
func (r *runner) call(i int) CallTask {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.calls[i]; c != nil {
		return *c
	}
	return *r.spec.Tasks[i].Call
}

// deps returns the results task i may see, by id.
func (r *runner) depValues(i int) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]any, len(r.deps[i]))
	for _, d := range r.deps[i] {
		out[r.spec.Tasks[d].ID] = r.values[d]
	}
	return out
}

func (r *runner) evalCode(ctx context.Context, i int) (any, error) {
	if r.spec.Tasks[i].Code.JS != "" {
		return r.evalJS(ctx, i)
	}
	pr := r.code[i]
	if pr.prg == nil {
		t := r.spec.Tasks[i]
		if !mediator.IsPureOperation(t.Code.Op) {
			return nil, mediator.Errorf(mediator.CodeInvalidWorkflow, "%q is not a pure operation", mediator.Truncate(t.Code.Op, 32))
		}
		var err error
		if pr, err = compile(t.Code.Expr); err != nil {
			return nil, err
		}
	}
	return pr.eval(ctx, r.depValues(i))
}

// execute runs a run or call task the policy allowed.
func (r *runner) execute(ctx context.Context, i int, op mediator.Operation, seq int64) (any, error) {
	t := r.spec.Tasks[i]
	if t.Run != nil {
		input := t.Run.Input
		if r.input[i].prg != nil {
			v, err := r.input[i].eval(ctx, r.depValues(i))
			if err != nil {
				return nil, err
			}
			s, ok := v.(string)
			if !ok {
				return nil, mediator.Errorf(mediator.CodeTrap, "inputExpr gave a %T, not a string", v)
			}
			input = s
		}
		res, err := r.env.Agents.Run(ctx, t.Run.AgentID, input)
		if err == nil && res["status"] != "ok" {
			code, _ := res["code"].(string)
			msg, _ := res["error"].(string)
			err = mediator.Errorf(mediator.Code(code), "the run ended with %s: %s", code, msg)
		}
		return res, err
	}
	auth := &mediator.Preapproved{Op: op, Seq: seq, Next: r.env.Policy, Records: r.env.Policy.Records()}
	return r.env.Calls.Do(ctx, r.call(i), auth)
}
