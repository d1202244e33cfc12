package host

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/agentgate/nmhost/internal/flows"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
	"github.com/agentgate/nmhost/workflow"
)

type workflowParams struct {
	Workflow json.RawMessage `json:"workflow"`
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

// handleRunWorkflow runs a workflow: the graph is checked before anything
// runs, each layer is decided before it runs (one prompt-layer for the
// tasks that need a person), each task's end is a task-result event, and
// the reply is the summary and the session it ran in (a fresh one when
// the request names none, as run-agent).
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
	spec, err := workflow.Parse(p.Workflow)
	if err != nil {
		return nil, err
	}
	if spec.ID == "" {
		spec.ID = "wf-" + strconv.FormatInt(workflowSeq.Add(1), 10)
	}
	in, err := s.opts.Store.OpenRun(ctx, p.SessionID, p.SessionLevel)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	sessionID, level, ws := in.Session, in.Level, in.Workspace
	h := &flows.Host{Store: s.opts.Store, Policy: policy, Runtime: s.opts.Runtime, Fetch: s.fetch,
		LogDenial: s.recordDenial, SessionLevel: level, Workspace: ws, SessionID: sessionID,
		Browser: func(agentID string) wasmhost.Browser {
			return &Browser{peer: &s.peer, agentID: agentID, timeout: DefaultBrowserTimeout}
		}}
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

// layerPrompter asks about a workflow layer through the extension's
// prompt window: one question listing each task that needs a person.
type layerPrompter struct{ peer *peer }

type layerTask struct {
	Task          string                 `json:"task"`
	AgentID       string                 `json:"agentId"`
	Operation     string                 `json:"operation"`
	Permission    mediator.Permission    `json:"permission,omitempty"`
	Class         mediator.SafetyClass   `json:"class"`
	Target        promptTarget           `json:"target"`
	PermissionSet mediator.PermissionSet `json:"permissionSet,omitempty"`
	Reason        string                 `json:"reason"`
}

// PromptLayer implements mediator.LayerPrompter. Only allow-once allows;
// the layer's prompt offers no "always".
func (p layerPrompter) PromptLayer(ctx context.Context, lp mediator.LayerPrompt) (mediator.Answer, error) {
	tasks := make([]layerTask, len(lp.Tasks))
	for i, t := range lp.Tasks {
		op := t.Op
		tasks[i] = layerTask{Task: op.Task, AgentID: op.AgentID, Operation: op.Name, Permission: op.Permission, Class: t.Class,
			Target:        targetOf(op),
			PermissionSet: t.PermissionSet, Reason: t.Reason}
	}
	r, err := p.peer.ask(ctx, "prompt-layer", lp.Timeout, map[string]any{
		"workflow": lp.Workflow, "layer": lp.Layer, "tasks": tasks, "timeoutMs": lp.Timeout.Milliseconds(),
	})
	if err != nil {
		return "", err
	}
	var res promptResult
	if mediator.DecodeExact(r.Raw, &res) != nil || res.Answer != mediator.AnswerAllowOnce {
		return mediator.AnswerDeny, nil
	}
	return mediator.AnswerAllowOnce, nil
}
