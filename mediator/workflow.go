package mediator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// OpAgentRun names the decision to start an agent run inside a workflow;
// its own calls are then decided one by one as in any run.
const OpAgentRun = "agent.run"

// LayerTask is one task of a workflow layer as the policy sees it.
type LayerTask struct {
	Task string    // the task's id in the workflow
	Op   Operation // Workflow, Layer and Task are set by AuthorizeLayer
	// Pure: the task computes only (a pure step, or a run of a module
	// that imports nothing with a side effect); it is allowed without
	// asking and recorded as such.
	Pure bool
	// Ask: the workflow's approval mode for this task's tool asks a
	// person even when the policy would allow without asking. It only
	// adds a question; it never turns a refusal into an allow.
	Ask bool
	// Approved, when set, is the plan approval (its decidedBy) that
	// covers this exact task: a decision that would ask a person is
	// allowed by it instead. The workflow sets it only when the task's
	// operation at run time is the one the person saw in the plan.
	Approved string
}

// LayerPrompt is the one question asked before a layer runs: only the
// tasks of the layer that need a person, each with its agent, operation
// and exact target.
type LayerPrompt struct {
	Workflow string
	Layer    int
	Tasks    []PromptRequest
	Timeout  time.Duration
}

// LayerPrompter asks about a whole layer at once. Allow-once allows every
// listed task; any other answer or an error denies them all.
type LayerPrompter interface {
	PromptLayer(ctx context.Context, p LayerPrompt) (Answer, error)
}

// LayerDecision is a task's decision and, when allowed, the seq of its
// audit record (the approval a run of it then points to).
type LayerDecision struct {
	Task     string
	Decision PolicyDecision
	Seq      int64
}

// AuthorizeLayer decides every task of one layer before any of them runs:
// pure tasks are allowed by class, the others are decided as Decide
// decides them, and those that need a person are asked about together in
// one prompt through lp (nil: they are denied with confirmation_required).
// Each task's decision is its own audit record, tied to the workflow and
// the layer; each denial is also in the denial log. It returns the
// decisions in task order; an error is a failure to record.
func (p *Policy) AuthorizeLayer(ctx context.Context, workflow string, layer int, tasks []LayerTask, lp LayerPrompter) ([]LayerDecision, error) {
	out := make([]LayerDecision, len(tasks))
	var ask []int
	for i, t := range tasks {
		t.Op.Workflow, t.Op.Task = workflow, t.Task
		if t.Op.Layer == 0 {
			// Fused pure layers are decided in one call; each task keeps
			// the layer it belongs to.
			t.Op.Layer = layer
		}
		tasks[i] = t
		out[i].Task = t.Task
		out[i].Decision = p.decideTask(ctx, t)
		if d := &out[i].Decision; d.RequiresPrompt && t.Approved != "" {
			d.RequiresPrompt, d.Allowed, d.Code, d.DecidedBy = false, true, CodeAllowed, t.Approved
			d.Reason = "you allowed it in the workflow's plan"
		}
		if out[i].Decision.RequiresPrompt {
			ask = append(ask, i)
		}
	}
	if len(ask) > 0 {
		p.promptLayer(ctx, workflow, layer, tasks, out, ask, lp)
	}
	entries := make([]AuditEntry, len(tasks))
	for i, t := range tasks {
		d := out[i].Decision
		entries[i] = AuditEntry{Kind: AuditDecision, Operation: t.Op, Class: d.Level,
			Allowed: d.Allowed, Code: d.Code, DecidedBy: d.DecidedBy, Reason: d.Reason}
	}
	recs, err := appendAll(ctx, p.records, entries)
	if err != nil {
		return nil, fmt.Errorf("workflow[%s] layer %d: %w", Truncate(workflow, 64), layer, err)
	}
	for i, t := range tasks {
		out[i].Seq = recs[i].Seq
		p.noteUse(t.Op, out[i].Decision, recs[i].Seq)
		if d := out[i].Decision; !d.Allowed || d.Code != CodeAllowed {
			p.logDenial(ctx, t.Op, d, recs[i].Seq)
		}
	}
	return out, nil
}

// AuditBatcher is what records that can append many entries in one
// transaction implement (the store does): a layer's decisions are then one
// commit, not one per task.
type AuditBatcher interface {
	AppendAuditBatch(ctx context.Context, entries []AuditEntry) ([]AuditRecord, error)
}

func appendAll(ctx context.Context, r PolicyRecords, entries []AuditEntry) ([]AuditRecord, error) {
	if b, ok := r.(AuditBatcher); ok {
		return b.AppendAuditBatch(ctx, entries)
	}
	out := make([]AuditRecord, len(entries))
	for i, e := range entries {
		rec, err := r.AppendAudit(ctx, e)
		if err != nil {
			return nil, err
		}
		out[i] = rec
	}
	return out, nil
}

// decideTask is one task's decision without prompting or writing: pure
// tasks by class, runs by decideRun, calls by Decide; a task whose tool's
// approval mode asks a person has an allowed decision turned into a
// question (never a refusal into an allow).
func (p *Policy) decideTask(ctx context.Context, t LayerTask) PolicyDecision {
	var d PolicyDecision
	switch {
	case t.Pure:
		return PolicyDecision{Allowed: true, Level: AlwaysSafe, Code: CodeAllowed, DecidedBy: "class:pure",
			Reason: "pure: it computes on earlier results and touches nothing"}
	case t.Op.Name == OpAgentRun:
		d = p.decideRun(ctx, t.Op)
	default:
		d = p.Decide(ctx, t.Op)
	}
	if t.Ask && d.Allowed {
		d = PolicyDecision{RequiresPrompt: true, Level: d.Level, Code: CodeConfirmRequired, DecidedBy: "approval:ask",
			Reason: "the workflow settings ask a person before every " + t.Op.Name, PermissionSet: d.PermissionSet}
	}
	return d
}

// decideRun decides starting an agent's run: the agent must be installed;
// what the run then does is decided call by call.
func (p *Policy) decideRun(ctx context.Context, op Operation) PolicyDecision {
	if _, err := p.records.DecisionFacts(ctx, op.AgentID, PermConsoleLog, OpLog, ""); err != nil {
		return denied(AlwaysSafe, CodeOf(err), "agent:"+Truncate(op.AgentID, 64), MessageOf(err))
	}
	return PolicyDecision{Allowed: true, Level: AlwaysSafe, Code: CodeAllowed, DecidedBy: "class:run",
		Reason: "starting a run changes nothing; each of its calls is decided as it is made"}
}

// promptLayer asks once about the tasks at ask and writes the answer into
// their decisions.
func (p *Policy) promptLayer(ctx context.Context, workflow string, layer int, tasks []LayerTask, out []LayerDecision, ask []int, lp LayerPrompter) {
	req := LayerPrompt{Workflow: workflow, Layer: layer, Timeout: p.opts.PromptTimeout}
	for _, i := range ask {
		rule, _ := RuleFor(tasks[i].Op)
		d := out[i].Decision
		req.Tasks = append(req.Tasks, PromptRequest{Op: tasks[i].Op, Class: d.Level, Reason: d.Reason,
			Target: targetKey(rule, tasks[i].Op), Timeout: p.opts.PromptTimeout, PermissionSet: d.PermissionSet})
	}
	answer, err := AnswerDeny, error(nil)
	if lp != nil {
		pctx, cancel := context.WithTimeout(ctx, p.opts.PromptTimeout)
		answer, err = lp.PromptLayer(pctx, req)
		cancel()
		if err == nil {
			err = CheckAnswer(answer, LayerOffers())
		}
	}
	for _, i := range ask {
		d := &out[i].Decision
		d.RequiresPrompt = false
		switch {
		case lp == nil:
			d.Code, d.Reason = CodeConfirmRequired, "it needs your confirmation and nobody can be asked: "+d.Reason
		case err != nil && (CodeOf(err) == CodeTimeout || errors.Is(err, context.DeadlineExceeded)):
			d.Code, d.DecidedBy, d.Reason = CodePromptTimeout, "prompt:layer", "nobody answered the layer's prompt in time"
		case err != nil:
			d.Code, d.DecidedBy, d.Reason = codeOrInternal(CodeOf(err)), "prompt:layer", "the layer's prompt failed: "+MessageOf(err)
		case answer == AnswerAllowOnce:
			d.Allowed, d.Code, d.DecidedBy, d.Reason = true, CodeAllowed, "prompt:layer", "you allowed this layer"
		default:
			d.Code, d.DecidedBy, d.Reason = CodeUserDenied, "prompt:layer", "you denied this layer"
		}
	}
}

// Preapproved runs one operation a layer prompt (or the policy) already
// allowed: the first Authorize of exactly that operation is allowed
// without asking again, on the strength of the decision record at Seq,
// and its outcome is recorded. Anything else (another target, a second
// time, a redirect hop) goes to Next, the policy, as usual.
type Preapproved struct {
	Op   Operation
	Seq  int64
	Next Authorizer
	// Records appends the executed record.
	Records PolicyRecords
	used    bool
}

// Authorize implements Authorizer.
func (a *Preapproved) Authorize(ctx context.Context, op Operation) (func(error), error) {
	if a.used || !sameTarget(a.Op, op) {
		return a.Next.Authorize(ctx, op)
	}
	a.used = true
	return func(result error) {
		e := AuditEntry{Kind: AuditExecuted, Operation: a.Op, Allowed: true, Ref: a.Seq}
		if result != nil {
			e.Code, e.Error = CodeOf(result), Truncate(MessageOf(result), MaxDenialReasonBytes)
		}
		_, _ = a.Records.AppendAudit(context.WithoutCancel(ctx), e)
	}, nil
}

// sameTarget reports whether op is the approved operation: the same agent,
// operation, method and targets, and not a redirect hop.
func sameTarget(approved, op Operation) bool {
	return op.Hop == 0 && approved.AgentID == op.AgentID && approved.Name == op.Name &&
		strings.EqualFold(approved.Method, op.Method) && approved.URL == op.URL && approved.Origin == op.Origin &&
		approved.Selector == op.Selector && op.TextLength <= approved.TextLength
}

// Records returns the records the policy writes to, for an Authorizer
// that allows on the policy's behalf (Preapproved).
func (p *Policy) Records() PolicyRecords { return p.records }
