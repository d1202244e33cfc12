package workflow

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentgate/nmhost/mediator"
)

// Settings are the data dir's workflow settings (config.json, "workflow").
// The zero value is the strictest reading; DefaultSettings is what a data
// dir without them gets.
type Settings struct {
	// AutoclassifyPureOperations: a run task whose module imports nothing
	// with a side effect is pure (allowed without asking) even when the
	// task does not say so. Off, only tasks marked pure, and code steps,
	// are.
	AutoclassifyPureOperations bool `json:"autoclassifyPureOperations"`
	// ValidatePureCode: every code step's operation name and expression
	// are checked before the workflow starts (invalid_workflow). Off, a
	// bad expression fails its task when its layer runs.
	ValidatePureCode bool `json:"validatePureCode"`
	// StrictMode: a run task marked pure whose module imports a function
	// with a side effect refuses the whole workflow before anything runs
	// (not_pure). Off, the task is decided as a side-effecting one.
	StrictMode bool `json:"strictMode"`
}

// DefaultSettings has all three on.
func DefaultSettings() Settings {
	return Settings{AutoclassifyPureOperations: true, ValidatePureCode: true, StrictMode: true}
}

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
	Agents   Agents
	Calls    Caller
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
}

// Summary is how a workflow ended.
type Summary struct {
	Workflow string       `json:"workflow"`
	Layers   int          `json:"layers"`
	Prompts  int          `json:"prompts"` // layer prompts shown
	Tasks    []TaskResult `json:"tasks"`   // in the spec's order
	Status   string       `json:"status"`  // "ok" when every task succeeded
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
		input: make([]program, len(s.Tasks)), deps: make([][]int, len(s.Tasks))}
	index := map[string]int{}
	for i, t := range s.Tasks {
		index[t.ID] = i
	}
	var exprs []string
	if env.Settings.ValidatePureCode {
		for _, t := range s.Tasks {
			if t.Code != nil && mediator.IsPureOperation(t.Code.Op) {
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
			pr, err := comp(t.Code.Expr)
			if err != nil {
				return nil, fmt.Errorf("task %q: %w", t.ID, err)
			}
			p.code[i] = pr
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

// Run checks the workflow, then runs it layer by layer: before a layer
// runs, the policy decides every task in it (one prompt for those that
// need a person); then its allowed tasks run, at most maxParallel at once.
// A task that fails or is denied stops the tasks that depend on it
// (dependency_failed); the rest go on. An error means nothing ran (the
// workflow was refused) or a decision could not be recorded.
func Run(ctx context.Context, s Spec, env Env) (Summary, error) {
	p, err := prepare(ctx, s, env)
	if err != nil {
		return Summary{}, err
	}
	r := &runner{plan: p, env: env, results: make([]TaskResult, len(s.Tasks)), values: make([]any, len(s.Tasks)),
		failed: make([]bool, len(s.Tasks))}
	sum := Summary{Workflow: s.ID, Layers: len(p.layers), Status: "ok"}
	for n := 0; n < len(p.layers); {
		// Adjacent layers of pure steps only are fused into one step: one
		// decision call, one transaction for their records, evaluated in
		// line in layer order.
		end := n + 1
		for end < len(p.layers) && p.stepsOnly(n) && p.stepsOnly(end) {
			end++
		}
		if end-n > 1 {
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
	for _, t := range r.results {
		if t.Status != "ok" {
			sum.Status = "failed"
		}
	}
	return sum, nil
}

type runner struct {
	*plan
	env     Env
	mu      sync.Mutex // results, values, failed, Events
	results []TaskResult
	values  []any
	failed  []bool
}

func (r *runner) finish(i, layer int, v any, seq int64, err error) {
	res := TaskResult{Task: r.spec.Tasks[i].ID, Layer: layer, Status: "ok", Value: v, AuditSeq: seq}
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
	var todo []int
	var tasks []mediator.LayerTask
	for _, i := range layer {
		if d := r.failedDep(i); d != "" {
			r.finish(i, n, nil, 0, mediator.Errorf(mediator.CodeDependencyFailed, "task %q did not succeed", d))
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
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallel)
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
	wg.Wait()
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

// layerTask is task i as the policy decides it.
func (r *runner) layerTask(ctx context.Context, i int) (mediator.LayerTask, error) {
	t := r.spec.Tasks[i]
	switch {
	case t.Code != nil:
		return mediator.LayerTask{Task: t.ID, Op: mediator.Operation{Name: t.Code.Op}, Pure: true}, nil
	case t.Run != nil:
		return mediator.LayerTask{Task: t.ID, Op: mediator.Operation{Name: mediator.OpAgentRun, AgentID: t.Run.AgentID}, Pure: r.pure[i]}, nil
	}
	op, err := r.env.Calls.Prepare(ctx, *t.Call)
	return mediator.LayerTask{Task: t.ID, Op: op}, err
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
	return r.env.Calls.Do(ctx, *t.Call, auth)
}

// stepsOnly reports whether layer n holds pure steps only.
func (p *plan) stepsOnly(n int) bool {
	for _, i := range p.layers[n] {
		if p.spec.Tasks[i].Code == nil {
			return false
		}
	}
	return true
}

// fused decides layers [from, to), all pure steps, in one call and then
// evaluates them in layer order. The decisions are the same a layer at a
// time would get (class:pure), each recorded with its own layer.
func (r *runner) fused(ctx context.Context, from, to int) error {
	var tasks []mediator.LayerTask
	var idx, layerOf []int
	for n := from; n < to; n++ {
		for _, i := range r.layers[n] {
			t := r.spec.Tasks[i]
			tasks = append(tasks, mediator.LayerTask{Task: t.ID, Op: mediator.Operation{Name: t.Code.Op, Layer: n + 1}, Pure: true})
			idx, layerOf = append(idx, i), append(layerOf, n+1)
		}
	}
	decisions, err := r.env.Policy.AuthorizeLayer(ctx, r.spec.ID, from+1, tasks, nil)
	if err != nil {
		return err
	}
	for k, i := range idx {
		if d := r.failedDep(i); d != "" {
			r.finish(i, layerOf[k], nil, decisions[k].Seq, mediator.Errorf(mediator.CodeDependencyFailed, "task %q did not succeed", d))
			continue
		}
		v, err := r.evalCode(ctx, i)
		r.finish(i, layerOf[k], v, decisions[k].Seq, err)
	}
	return nil
}
