package viewer

import (
	"context"
	"fmt"

	"github.com/agentgate/nmhost/internal/app/flows"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow"
)

// workflowEvent is a run-workflow's streamed message: "task-result" for
// each task as it ends, then one "workflow-result" with the summary.
type workflowEvent struct {
	Type      string               `json:"type"`
	RunID     string               `json:"runId,omitempty"`
	SessionID string               `json:"sessionId"`
	Task      *workflow.TaskResult `json:"task,omitempty"`
	Summary   *workflow.Summary    `json:"summary,omitempty"`
}

// runWorkflow runs msg's workflow in its session's context, at the
// session's level (a message may lower it, never raise it). The viewer has
// nobody to ask: a plan with a task that needs a person is refused with
// confirmation_required before anything runs, unless remembered answers
// (a remembered plan among them) or a high level decide it.
func (s *Server) runWorkflow(ctx context.Context, c *client, msg wsMessage) {
	fail := func(err error) {
		// A refusal its refuser did not record (a graph refused as
		// invalid or unsafe) is recorded here, once, as the host does.
		if code := mediator.CodeOf(err); mediator.IsRefusal(code) && !mediator.IsRecorded(err) {
			s.gatewayDenials(msg.SessionID)(ctx, mediator.Denial{Code: code, Context: mediator.DenialContext{Reason: mediator.MessageOf(err),
				Details: map[string]string{"operation": "run-workflow", "decidedBy": "request:run-workflow"}}})
		}
		runFailed(c, msg, err)
	}
	in, ok := s.openRun(ctx, c, &msg)
	if !ok {
		return
	}
	defer in.Close()
	level, ws := in.Level, in.Workspace
	policy, ok := s.cfg.Authorizer.(*mediator.Policy)
	if s.cfg.Runtime == nil || !ok {
		fail(mediator.Errorf(mediator.CodeInternal, "this viewer cannot run workflows"))
		return
	}
	spec, err := flows.Source(msg.Workflow, msg.Script, msg.ScriptName, msg.ScriptAgent)
	if err != nil {
		fail(err)
		return
	}
	if spec.ID == "" {
		spec.ID = "session-" + msg.SessionID
		if mediator.ValidAgentID(spec.ID) != nil {
			spec.ID = "session"
		}
	}
	h := s.app.Flows(&flows.Host{Policy: policy, Runtime: s.cfg.Runtime, Fetch: s.cfg.Fetch, SessionLevel: level, SessionID: msg.SessionID,
		Workspace: ws, LogDenial: s.gatewayDenials(msg.SessionID)})
	settings := workflow.DefaultSettings()
	if s.cfg.Workflow != nil {
		settings = *s.cfg.Workflow
	}
	sum, err := workflow.Run(ctx, spec, h.Env(settings, nil, func(r workflow.TaskResult) {
		c.sendJSON(workflowEvent{Type: "task-result", RunID: msg.RunID, SessionID: msg.SessionID, Task: &r})
	}))
	if err != nil {
		fail(fmt.Errorf("workflow[%s] session[%s]: %w", spec.ID, msg.SessionID, err))
		return
	}
	c.sendJSON(workflowEvent{Type: "workflow-result", RunID: msg.RunID, SessionID: msg.SessionID, Summary: &sum})
}
