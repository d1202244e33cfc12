package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// PlanReport is what the workflow's plan was, as the summary reports it:
// every task with a side effect, layer by layer, how it was decided before
// anything ran, and how the person approved it.
type PlanReport struct {
	// Hash identifies the plan's side effects: the SHA-256 of the
	// canonical JSON of its side-effecting tasks and their targets. An
	// "always allow" for a plan is remembered for it, so any change to
	// one of those tasks asks again.
	Hash     string `json:"hash"`
	Approval string `json:"approval"` // "plan" or "layer"
	// ApprovedBy is how the plan's questions were settled: "prompt:plan",
	// "pref:always:N", or "" when there were none or they are asked layer
	// by layer.
	ApprovedBy  string     `json:"approvedBy,omitempty"`
	SideEffects []PlanStep `json:"sideEffects"`
	// Deferred names the tasks decided only when their layer is reached:
	// a call whose URL a step computes, and the calls an agent run makes
	// (its start is decided in the plan).
	Deferred []string `json:"deferred,omitempty"`
}

// PlanStep is one side-effecting task of the plan.
type PlanStep struct {
	Task      string `json:"task"`
	Layer     int    `json:"layer"`
	AgentID   string `json:"agentId"`
	Operation string `json:"operation"`
	// Tool, Args and ArgsExpr are an mcp task's: server.tool and its
	// arguments, literal or as the script computes them.
	Tool     string          `json:"tool,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	ArgsExpr string          `json:"argsExpr,omitempty"`
	Method   string          `json:"method,omitempty"`
	URL      string          `json:"url,omitempty"`
	Origin   string          `json:"origin,omitempty"`
	// Decision is "allowed" (the policy allows it without asking), "ask"
	// (a person approves it: the plan's prompt or its layer's) or
	// "deferred" (decided when its layer is reached); an mcp task is
	// "ask", decided by the MCP gateway when its layer is reached.
	Decision  string `json:"decision"`
	DecidedBy string `json:"decidedBy,omitempty"`
}

// approval is an operation the plan's approval covers, and how it was
// approved.
type approval struct {
	op mediator.Operation
	by string
}

// covers reports whether op, prepared when its layer is reached, is the
// operation the person approved in the plan: the same agent, operation
// and target. Anything else is decided, and asked about, afresh.
func (a approval) covers(op mediator.Operation) bool {
	x, y := a.op, op
	x.Workflow, x.Layer, x.Task = "", 0, ""
	y.Workflow, y.Layer, y.Task = "", 0, ""
	return x == y
}

// decidePlan decides the whole plan before anything runs and settles its
// questions. It returns the approvals by task, the report, and whether a
// person was asked.
func (r *runner) decidePlan(ctx context.Context) (map[int]approval, PlanReport, bool, error) {
	env := r.env
	report := PlanReport{Approval: env.Settings.Approval, SideEffects: []PlanStep{}}
	if report.Approval != ApproveLayer {
		report.Approval = ApprovePlan
	}
	var tasks []mediator.LayerTask
	var idx, specIdx []int // each decided task's step in the report, its task in the spec
	var hashed []hashedTask
	for n, layer := range r.layers {
		for _, i := range layer {
			t := r.spec.Tasks[i]
			if r.pure[i] {
				continue
			}
			step := PlanStep{Task: t.ID, Layer: n + 1}
			var lt mediator.LayerTask
			switch {
			case t.MCP != nil:
				// Decided by the MCP gateway when its layer is reached;
				// the plan shows it, with its arguments, as needing a
				// person.
				step.AgentID, step.Operation, step.Tool, step.Args = t.MCP.AgentID, "mcp", t.MCP.Server+"."+t.MCP.Tool, t.MCP.Args
				if t.MCP.ArgsExpr != "" {
					step.ArgsExpr = t.MCP.ArgsExpr
				}
				step.Decision = "ask"
				report.SideEffects = append(report.SideEffects, step)
				hashed = append(hashed, hashedTask{Task: t.ID, Layer: n + 1, MCP: t.MCP})
				continue
			case t.Run != nil:
				step.AgentID, step.Operation = t.Run.AgentID, mediator.OpAgentRun
				lt = mediator.LayerTask{Task: t.ID, Op: mediator.Operation{Name: mediator.OpAgentRun, AgentID: t.Run.AgentID}}
				report.Deferred = append(report.Deferred, t.ID)
			case t.Call.URLExpr != "":
				step.AgentID, step.Operation, step.Method = t.Call.AgentID, t.Call.Operation, t.Call.Method
				step.Decision = "deferred"
				report.Deferred = append(report.Deferred, t.ID)
				report.SideEffects = append(report.SideEffects, step)
				hashed = append(hashed, hashedTask{Task: t.ID, Layer: n + 1, Call: t.Call})
				continue
			default:
				op, err := env.Calls.Prepare(ctx, *t.Call)
				if err != nil {
					return nil, report, false, r.refusePrepare(ctx, t.ID, n+1, t.Call, err)
				}
				lt = mediator.LayerTask{Task: t.ID, Op: op}
				step.AgentID, step.Operation, step.Method, step.URL, step.Origin = op.AgentID, op.Name, op.Method, op.URL, op.Origin
			}
			lt.Op.Layer = n + 1
			lt.Ask = env.Settings.asks(lt.Op.Name)
			tasks, idx, specIdx = append(tasks, lt), append(idx, len(report.SideEffects)), append(specIdx, i)
			report.SideEffects = append(report.SideEffects, step)
			hashed = append(hashed, hashedTask{Task: t.ID, Layer: n + 1, Op: lt.Op, Run: t.Run, Call: t.Call})
		}
	}
	report.Hash = planHash(hashed)
	ds := env.Policy.DecidePlan(ctx, r.spec.ID, tasks)
	if err := env.Policy.RefusePlan(ctx, r.spec.ID, tasks, ds); err != nil {
		return nil, report, false, err
	}
	asked := false
	for k, d := range ds {
		s := &report.SideEffects[idx[k]]
		s.Decision, s.DecidedBy = "allowed", d.DecidedBy
		if d.RequiresPrompt {
			s.Decision, asked = "ask", true
		}
	}
	if !asked {
		return nil, report, false, nil
	}
	if report.Approval == ApproveLayer {
		if env.Prompter != nil {
			return nil, report, false, nil
		}
		// Nobody can be asked: the layer would refuse, so the plan does.
		_, err := env.Policy.ApprovePlan(ctx, r.spec.ID, report.Hash, len(r.layers), tasks, ds, nil)
		return nil, report, false, err
	}
	pp := env.PlanPrompter
	if pp == nil && env.Prompter != nil {
		pp = layerAsPlan{env.Prompter}
	}
	shown := false
	if pp != nil {
		pp = countingPlanPrompter{pp, &shown}
	}
	by, err := env.Policy.ApprovePlan(ctx, r.spec.ID, report.Hash, len(r.layers), tasks, ds, pp)
	if err != nil {
		return nil, report, shown, err
	}
	report.ApprovedBy = by
	approved := map[int]approval{}
	for k, d := range ds {
		if d.RequiresPrompt {
			approved[specIdx[k]] = approval{op: tasks[k].Op, by: by}
		}
	}
	return approved, report, shown, nil
}

// refusePrepare turns a call the host's checks refused before the policy
// (the ACL, the grant, the request's shape) into the workflow's refusal,
// naming the task. Those checks record their own denials; one that did
// not is recorded here, once.
func (r *runner) refusePrepare(ctx context.Context, task string, layer int, c *CallTask, err error) error {
	code := mediator.CodeOf(err)
	if !mediator.IsRefusal(code) {
		return fmt.Errorf("task %q: %w", task, err)
	}
	msg := fmt.Sprintf("the plan is refused before anything runs: task %q (layer %d) would be refused: %s", task, layer, mediator.MessageOf(err))
	if mediator.IsRecorded(err) {
		return mediator.Recorded(mediator.Errorf(code, "%s", msg))
	}
	lt := mediator.LayerTask{Task: task, Op: mediator.Operation{AgentID: c.AgentID, Name: c.Operation, Method: c.Method, URL: c.URL, Layer: layer}}
	d := mediator.PolicyDecision{Code: code, DecidedBy: "prepare:" + c.Operation, Reason: mediator.MessageOf(err), Level: mediator.AlwaysConfirm}
	if rerr := r.env.Policy.RefusePlan(ctx, r.spec.ID, []mediator.LayerTask{lt}, []mediator.PolicyDecision{d}); rerr != nil && !mediator.IsRecorded(rerr) {
		return rerr
	}
	return mediator.Recorded(mediator.Errorf(code, "%s", msg))
}

// hashedTask is what a plan's hash covers of one side-effecting task: its
// place, its operation with the canonical target, and the task as written
// (so a changed body or input is another plan).
type hashedTask struct {
	Task  string             `json:"task"`
	Layer int                `json:"layer"`
	Op    mediator.Operation `json:"op"`
	Run   *RunTask           `json:"run,omitempty"`
	Call  *CallTask          `json:"call,omitempty"`
	MCP   *MCPTask           `json:"mcp,omitempty"`
}

// planHash is the SHA-256 of the canonical JSON of the side-effecting
// tasks: encoding/json writes struct fields in their order and map keys
// sorted, so the same plan is the same bytes.
func planHash(tasks []hashedTask) string {
	b, _ := json.Marshal(tasks)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// layerAsPlan asks about a plan through a layer prompter, as layer 0: for
// a caller that only knows how to show layers.
type layerAsPlan struct{ lp mediator.LayerPrompter }

func (l layerAsPlan) PromptPlan(ctx context.Context, p mediator.PlanPrompt) (mediator.Answer, error) {
	return l.lp.PromptLayer(ctx, mediator.LayerPrompt{Workflow: p.Workflow, Layer: 0, Tasks: p.Tasks, Timeout: p.Timeout})
}

// countingPlanPrompter notes that the plan's prompt was shown.
type countingPlanPrompter struct {
	next  mediator.PlanPrompter
	shown *bool
}

func (c countingPlanPrompter) PromptPlan(ctx context.Context, p mediator.PlanPrompt) (mediator.Answer, error) {
	*c.shown = true
	return c.next.PromptPlan(ctx, p)
}
