package mediator

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// OpWorkflowPlan names a remembered "always allow" for a workflow's plan:
// one preference per agent of the plan, its target the plan's hash, so
// uninstalling an agent forgets the plans it was in and `nmhost prefs`
// lists and revokes them like any other answer.
const OpWorkflowPlan = "workflow.plan"

// PlanPrompt is the one question asked before a workflow starts: every
// task of the plan that needs a person, layer by layer (each Op.Layer
// set), with its agent, operation and exact target.
type PlanPrompt struct {
	Workflow string
	// Hash identifies the plan's side effects (the workflow computes it);
	// "always allow" is remembered for it.
	Hash    string
	Layers  int
	Tasks   []PromptRequest
	Timeout time.Duration
}

// PlanPrompter asks about a whole plan at once. allow-once and
// always-allow allow every listed task; any other answer or an error
// refuses the workflow before anything runs.
type PlanPrompter interface {
	PromptPlan(ctx context.Context, p PlanPrompt) (Answer, error)
}

// DecidePlan decides every task of a workflow before anything runs, as
// far as it can without running it: what AuthorizeLayer would decide
// before asking anyone. It neither prompts nor writes. Each task's
// Op.Layer must be set; Workflow and Task are set here.
func (p *Policy) DecidePlan(ctx context.Context, workflow string, tasks []LayerTask) []PolicyDecision {
	out := make([]PolicyDecision, len(tasks))
	for i := range tasks {
		tasks[i].Op.Workflow, tasks[i].Op.Task = workflow, tasks[i].Task
		out[i] = p.decideTask(ctx, tasks[i])
	}
	return out
}

// RefusePlan records the refusals among a plan's decisions, each an audit
// record and a denial naming it, and returns the workflow's refusal: the
// first refused task, by name and code. The error is marked Recorded, so
// the entry point that reports it does not record it again. It returns
// nil when nothing is refused.
func (p *Policy) RefusePlan(ctx context.Context, workflow string, tasks []LayerTask, ds []PolicyDecision) error {
	var idx []int
	for i, d := range ds {
		if !d.RequiresPrompt && (!d.Allowed || d.Code != CodeAllowed) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	if err := p.recordRefusals(ctx, tasks, ds, idx); err != nil {
		return fmt.Errorf("workflow[%s] plan: %w", Truncate(workflow, 64), err)
	}
	first := idx[0]
	more := ""
	if len(idx) > 1 {
		more = fmt.Sprintf(" (and %d more task(s) of the plan)", len(idx)-1)
	}
	return Recorded(Errorf(codeOrInternal(ds[first].Code), "the plan is refused before anything runs: task %q (layer %d) would be refused: %s%s",
		tasks[first].Task, tasks[first].Op.Layer, ds[first].Reason, more))
}

func (p *Policy) recordRefusals(ctx context.Context, tasks []LayerTask, ds []PolicyDecision, idx []int) error {
	entries := make([]AuditEntry, len(idx))
	for k, i := range idx {
		d := ds[i]
		entries[k] = AuditEntry{Kind: AuditDecision, Operation: tasks[i].Op, Class: d.Level,
			Allowed: false, Code: codeOrInternal(d.Code), DecidedBy: d.DecidedBy, Reason: d.Reason}
	}
	recs, err := appendAll(context.WithoutCancel(ctx), p.records, entries)
	if err != nil {
		return err
	}
	for k, i := range idx {
		p.logDenial(ctx, tasks[i].Op, ds[i], recs[k].Seq)
	}
	return nil
}

// ApprovePlan settles the plan's questions before anything runs: the tasks
// whose decisions ask a person are allowed together by a remembered
// "always allow" for hash (every agent among them remembered it), or by
// one prompt through pp. It returns the decidedBy the approval is
// recorded with. A denial, no answer, or nobody to ask (pp nil) refuses
// the workflow: each asked task's refusal is recorded, and the error is
// marked Recorded.
func (p *Policy) ApprovePlan(ctx context.Context, workflow, hash string, layers int, tasks []LayerTask, ds []PolicyDecision, pp PlanPrompter) (string, error) {
	var ask []int
	agents := map[string]bool{}
	for i, d := range ds {
		if d.RequiresPrompt {
			ask = append(ask, i)
			agents[tasks[i].Op.AgentID] = true
		}
	}
	if len(ask) == 0 {
		return "", nil
	}
	if by, ok := p.rememberedPlan(ctx, hash, agents); ok {
		return by, nil
	}
	refuse := func(code Code, by, reason string) (string, error) {
		refused := make([]PolicyDecision, len(ds))
		copy(refused, ds)
		for _, i := range ask {
			refused[i].RequiresPrompt, refused[i].Allowed = false, false
			refused[i].Code, refused[i].DecidedBy, refused[i].Reason = code, by, reason
		}
		if err := p.recordRefusals(ctx, tasks, refused, ask); err != nil {
			return "", fmt.Errorf("workflow[%s] plan: %w", Truncate(workflow, 64), err)
		}
		return "", Recorded(Errorf(code, "the plan is refused before anything runs: %s (%d task(s) needed a person, the first %q)", reason, len(ask), tasks[ask[0]].Task))
	}
	if pp == nil {
		return refuse(CodeConfirmRequired, "prompt:plan", "it needs your confirmation and nobody can be asked")
	}
	req := PlanPrompt{Workflow: workflow, Hash: hash, Layers: layers, Timeout: p.opts.PromptTimeout}
	for _, i := range ask {
		rule, _ := RuleFor(tasks[i].Op)
		req.Tasks = append(req.Tasks, PromptRequest{Op: tasks[i].Op, Class: ds[i].Level, Reason: ds[i].Reason,
			Target: targetKey(rule, tasks[i].Op), Timeout: p.opts.PromptTimeout, PermissionSet: ds[i].PermissionSet})
	}
	pctx, cancel := context.WithTimeout(ctx, p.opts.PromptTimeout)
	answer, err := pp.PromptPlan(pctx, req)
	cancel()
	if err == nil {
		err = CheckAnswer(answer, PlanOffers())
	}
	switch {
	case err != nil && (CodeOf(err) == CodeTimeout || errors.Is(err, context.DeadlineExceeded)):
		return refuse(CodePromptTimeout, "prompt:plan", "nobody answered the plan's prompt in time")
	case err != nil:
		return refuse(codeOrInternal(CodeOf(err)), "prompt:plan", "the plan's prompt failed: "+MessageOf(err))
	case answer == AnswerAllowOnce:
		return "prompt:plan", nil
	case answer == AnswerAlwaysAllow:
		var last Preference
		for agent := range agents {
			// Bound to each agent's code as it is now: a new module of
			// any of them asks about the plan again.
			f, err := p.records.DecisionFacts(ctx, agent, PermConsoleLog, OpWorkflowPlan, hash)
			if err != nil {
				return refuse(CodeOf(err), "prompt:plan", "your answer could not be stored: "+MessageOf(err))
			}
			pref, err := p.records.SetPreference(ctx, Preference{AgentID: agent, Operation: OpWorkflowPlan, Target: hash, Answer: AnswerAlwaysAllow,
				ModuleSHA256: f.ModuleSHA256})
			if err != nil {
				return refuse(CodeOf(err), "prompt:plan", "your answer could not be stored: "+MessageOf(err))
			}
			if pref.ID > last.ID {
				last = pref
			}
		}
		return last.DecidedBy(), nil
	}
	return refuse(CodeUserDenied, "prompt:plan", "you denied the workflow's plan")
}

// rememberedPlan reports whether every agent of the plan's questions
// remembered "always allow" for this exact plan.
func (p *Policy) rememberedPlan(ctx context.Context, hash string, agents map[string]bool) (string, bool) {
	var last Preference
	for agent := range agents {
		f, err := p.records.DecisionFacts(ctx, agent, PermConsoleLog, OpWorkflowPlan, hash)
		if err != nil || f.Preference.Answer != AnswerAlwaysAllow || !f.Preference.Holds(Operation{AgentID: agent}, f.ModuleSHA256, p.now()) {
			return "", false
		}
		if f.Preference.ID > last.ID {
			last = f.Preference
		}
	}
	return last.DecidedBy(), true
}
