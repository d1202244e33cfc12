package host

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/agentgate/nmhost/internal/app/flows"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
	"github.com/agentgate/nmhost/workflow"
)

type workflowParams struct {
	Workflow json.RawMessage `json:"workflow"`
	// Script is an agent's script instead (docs/scripts.md), converted
	// before anything runs; ScriptName its file name (its extension says
	// TypeScript or JavaScript) and ScriptAgent the agent its tool calls
	// are made for.
	Script      string `json:"script"`
	ScriptName  string `json:"scriptName"`
	ScriptAgent string `json:"scriptAgent"`
	// SessionID and SessionLevel are a run's (runParams): the session the
	// workflow's tasks work in, "" for a fresh one.
	SessionID    string `json:"sessionId"`
	SessionLevel string `json:"sessionLevel"`
}

// workflowResult is run-workflow's reply: the summary and the session.
type workflowResult struct {
	workflow.Summary
	SessionID string `json:"sessionId"`
}

// workflowSeq numbers the workflows of this process that came without an
// id, so each one's audit records can be told apart.
var workflowSeq atomic.Int64

// handleRunWorkflow runs a workflow: the graph is checked and its whole
// plan decided before anything runs (one prompt-layer for the plan's
// tasks that need a person, or one per layer in layer approval), each
// task's end is a task-result event, and the reply is the summary and the
// session it ran in (a fresh one when the request names none, as
// run-agent).
func handleRunWorkflow(ctx context.Context, s *server, req *request) (any, error) {
	if s.opts.Runtime == nil {
		return nil, mediator.Errorf(mediator.CodeInternal, "this host has no WebAssembly runtime")
	}
	policy, ok := s.opts.Authorizer.(*mediator.Policy)
	if !ok {
		return nil, mediator.Errorf(mediator.CodeInternal, "this host's authorizer cannot decide workflows")
	}
	var p workflowParams
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	if _, err := mediator.ParseLevel(p.SessionLevel); err != nil {
		return nil, err
	}
	spec, err := flows.Source(p.Workflow, p.Script, p.ScriptName, p.ScriptAgent)
	if err != nil {
		return nil, err
	}
	if spec.ID == "" {
		spec.ID = "wf-" + strconv.FormatInt(workflowSeq.Add(1), 10)
	}
	in, err := s.app.Sessions().OpenRun(ctx, p.SessionID, p.SessionLevel)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	sessionID, level, ws := in.Session, in.Level, in.Workspace
	h := s.app.Flows(&flows.Host{Policy: policy, Runtime: s.opts.Runtime, Fetch: s.fetch,
		LogDenial: s.recordDenial, SessionLevel: level, Workspace: ws, SessionID: sessionID,
		Browser: func(agentID string) wasmhost.Browser {
			return &Browser{peer: &s.peer, agentID: agentID, timeout: DefaultBrowserTimeout}
		}})
	settings := workflow.DefaultSettings()
	if s.opts.Workflow != nil {
		settings = *s.opts.Workflow
	}
	env := h.Env(settings, layerPrompter{&s.peer}, func(r workflow.TaskResult) {
		_ = s.write(req.ID, event{ID: req.ID, Event: "task-result", Data: r})
	})
	sum, err := workflow.Run(ctx, spec, env)
	if err != nil {
		return nil, err
	}
	return workflowResult{Summary: sum, SessionID: sessionID}, nil
}

// layerPrompter asks about a workflow's plan, or one of its layers,
// through the extension's prompt window: one question listing each task
// that needs a person. A plan is asked as a prompt-layer whose layer is 0
// and which carries "plan" (its hash and layer count), each task naming
// its layer.
type layerPrompter struct{ peer *peer }

type layerTask struct {
	Task          string                 `json:"task"`
	Layer         int                    `json:"layer"`
	AgentID       string                 `json:"agentId"`
	Operation     string                 `json:"operation"`
	Permission    mediator.Permission    `json:"permission,omitempty"`
	Class         mediator.SafetyClass   `json:"class"`
	Target        promptTarget           `json:"target"`
	PermissionSet mediator.PermissionSet `json:"permissionSet,omitempty"`
	Reason        string                 `json:"reason"`
}

func layerTasks(reqs []mediator.PromptRequest) []layerTask {
	tasks := make([]layerTask, len(reqs))
	for i, t := range reqs {
		op := t.Op
		tasks[i] = layerTask{Task: op.Task, Layer: op.Layer, AgentID: op.AgentID, Operation: op.Name, Permission: op.Permission, Class: t.Class,
			Target: targetOf(op), PermissionSet: t.PermissionSet, Reason: t.Reason}
	}
	return tasks
}

// PromptLayer implements mediator.LayerPrompter. Only allow-once allows;
// a layer's prompt offers no "always".
func (p layerPrompter) PromptLayer(ctx context.Context, lp mediator.LayerPrompt) (mediator.Answer, error) {
	return p.ask(ctx, lp.Timeout, map[string]any{
		"workflow": lp.Workflow, "layer": lp.Layer, "tasks": layerTasks(lp.Tasks), "timeoutMs": lp.Timeout.Milliseconds(),
	}, mediator.LayerOffers())
}

// PromptPlan implements mediator.PlanPrompter: allow-once, or
// always-allow for this exact plan (its hash).
func (p layerPrompter) PromptPlan(ctx context.Context, pp mediator.PlanPrompt) (mediator.Answer, error) {
	return p.ask(ctx, pp.Timeout, map[string]any{
		"workflow": pp.Workflow, "layer": 0, "plan": map[string]any{"hash": pp.Hash, "layers": pp.Layers},
		"tasks": layerTasks(pp.Tasks), "timeoutMs": pp.Timeout.Milliseconds(),
	}, mediator.PlanOffers())
}

// ask sends one prompt-layer with the answers it offers; an answer
// outside them is refused with answer_not_offered.
func (p layerPrompter) ask(ctx context.Context, timeout time.Duration, msg map[string]any, offered []mediator.Answer) (mediator.Answer, error) {
	msg["offers"] = offered
	r, err := p.peer.ask(ctx, "prompt-layer", timeout, msg)
	if err != nil {
		return "", err
	}
	return readAnswer(r, offered)
}
