package flows

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"unicode/utf8"

	"github.com/agentgate/nmhost/internal/app/runs"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
	"github.com/agentgate/nmhost/workflow"
	"github.com/agentgate/nmhost/workflow/script"
	"github.com/agentgate/nmhost/workspace"
)

// Host is what a workflow's tasks run on. Store, Policy and Runtime are
// required; Fetch and Browser may be nil (those calls are then refused
// with network_disabled and no_browser).
type Host struct {
	Store   *store.Store
	Policy  *mediator.Policy
	Runtime *wasmhost.Runtime
	Fetch   *agentfetch.Service
	// Browser returns the browser side for an agent's calls; nil: none.
	Browser func(agentID string) wasmhost.Browser
	// LogDenial records what the runtime refuses at link time.
	LogDenial func(ctx context.Context, d mediator.Denial)
	// Tools makes mcp tasks' calls (the core's, set by App.Flows); nil
	// refuses a workflow that has one.
	Tools workflow.ToolCaller
	// SessionLevel and Workspace are the level the workflow's runs get
	// and its session's workspace (store.RunSession and OpenWorkspace):
	// every agent task works in that one workspace, within its one quota,
	// at that level. A nil Workspace mounts none.
	SessionLevel string
	Workspace    *workspace.Workspace
	// SessionID is the session the workflow runs in: its tasks reach that
	// session's memory. "" gives them none (memory calls are then
	// unknown_session).
	SessionID string
}

// MaxValueBytes bounds a call's text result carried on to later steps.
const MaxValueBytes = 1 << 20

// Env is the workflow environment over h, with the data dir's settings.
func (h *Host) Env(settings workflow.Settings, lp mediator.LayerPrompter, events func(workflow.TaskResult)) workflow.Env {
	env := workflow.Env{Policy: h.Policy, Prompter: lp, Agents: agents{h}, Calls: calls{h}, Tools: h.Tools, Settings: settings, Events: events}
	if pp, ok := lp.(mediator.PlanPrompter); ok {
		env.PlanPrompter = pp
	}
	return env
}

// Settings reads the workflow settings of a data dir's config; each one
// not written there is on.
func Settings(c datadir.Config) workflow.Settings {
	s := workflow.DefaultSettings()
	if w := c.Workflow; w != nil {
		if w.AutoclassifyPureOperations != nil {
			s.AutoclassifyPureOperations = *w.AutoclassifyPureOperations
		}
		if w.ValidatePureCode != nil {
			s.ValidatePureCode = *w.ValidatePureCode
		}
		if w.StrictMode != nil {
			s.StrictMode = *w.StrictMode
		}
		if w.Approval == workflow.ApproveLayer {
			s.Approval = workflow.ApproveLayer
		}
		if len(w.Tools) > 0 {
			// A copy: the settings outlive the config they came from.
			s.Tools = maps.Clone(w.Tools)
		}
	}
	return s
}

type agents struct{ h *Host }

// Pure reads the agent's stored module: pure when it imports nothing with
// a side effect. An agent without a module is not pure.
func (a agents) Pure(ctx context.Context, agentID string) (bool, string, error) {
	_, module, err := a.h.Store.AgentModule(ctx, agentID)
	if err != nil {
		return false, "", fmt.Errorf("agent[%s]: %w", mediator.Truncate(agentID, 64), err)
	}
	in, err := wasmhost.Inspect(module)
	if err != nil {
		return false, "cannot be read: " + mediator.MessageOf(err), nil
	}
	if in.Pure {
		return true, "", nil
	}
	for _, im := range in.Imports {
		if im.Permission != "" && im.Permission != mediator.PermConsoleLog {
			return false, fmt.Sprintf("imports %s.%s (%s)", im.Module, im.Name, im.Permission), nil
		}
	}
	return false, "imports " + in.Refused, nil
}

// Run runs the agent as run-agent does, with no page bound.
func (a agents) Run(ctx context.Context, agentID, input string) (map[string]any, error) {
	h := a.h
	// Every task runs in the workflow's one session (its level, its
	// workspace and quota, its memory), through the one run constructor.
	in := &store.Run{Session: h.SessionID, Level: h.SessionLevel, Workspace: h.Workspace}
	r := runs.Request{AgentID: agentID, Input: input, Session: in}
	if h.Browser != nil {
		r.Browser = h.Browser(agentID)
	}
	out, err := runs.Deps{Store: h.Store, Runtime: h.Runtime, Authorizer: h.Policy, Fetch: h.Fetch, LogDenial: h.LogDenial}.Run(ctx, r)
	if err != nil {
		return nil, err
	}
	res := out.Result
	return map[string]any{"status": res.Status, "code": string(res.Code), "error": res.Error, "output": res.Output,
		"exitCode": res.ExitCode, "calls": res.Calls}, nil
}

type calls struct{ h *Host }

// Prepare is the operation a call task is decided as. A fetch passes the
// checks before the policy first (grant, ACL, ...), so a layer prompt
// never lists a request that would be refused anyway.
func (c calls) Prepare(ctx context.Context, t workflow.CallTask) (mediator.Operation, error) {
	switch t.Operation {
	case mediator.OpNetworkFetch:
		if c.h.Fetch == nil {
			return mediator.Operation{}, mediator.Errorf(mediator.CodeNetworkDisabled, "this host makes no fetches")
		}
		return c.h.Fetch.Prepare(ctx, c.fetchRequest(t))
	case mediator.OpNotificationsShow:
		return mediator.Operation{AgentID: t.AgentID, Name: t.Operation, TextLength: len(t.Title) + len(t.Text), SessionLevel: c.h.SessionLevel}, nil
	case mediator.OpClipboardWrite:
		return mediator.Operation{AgentID: t.AgentID, Name: t.Operation, TextLength: len(t.Text), SessionLevel: c.h.SessionLevel}, nil
	case mediator.OpClipboardRead:
		return mediator.Operation{AgentID: t.AgentID, Name: t.Operation, SessionLevel: c.h.SessionLevel}, nil
	}
	// Page calls need a run bound to a page's document; a workflow has none.
	return mediator.Operation{}, mediator.Errorf(mediator.CodeBadRequest,
		"a workflow call may be network.fetch, notifications.showNotification, clipboard.write or clipboard.read, not %q", mediator.Truncate(t.Operation, 64))
}

func (c calls) fetchRequest(t workflow.CallTask) agentfetch.Request {
	return agentfetch.Request{AgentID: t.AgentID, SessionLevel: c.h.SessionLevel,
		Request: netproxy.Request{URL: t.URL, Method: t.Method, Headers: t.Headers, Body: []byte(t.Body)}}
}

// Do performs a call the layer's decision allowed; auth allows exactly it.
func (c calls) Do(ctx context.Context, t workflow.CallTask, auth mediator.Authorizer) (map[string]any, error) {
	if t.Operation == mediator.OpNetworkFetch {
		req := c.fetchRequest(t)
		req.Authorizer = auth
		resp, err := c.h.Fetch.Fetch(ctx, req)
		if err != nil {
			return nil, err
		}
		defer resp.Release()
		body := resp.Body
		if len(body) > MaxValueBytes {
			body = body[:MaxValueBytes]
		}
		out := map[string]any{"status": resp.Status, "url": resp.FinalURL, "truncated": len(resp.Body) > MaxValueBytes}
		if utf8.Valid(body) {
			out["body"] = string(body)
		} else {
			out["bodyBase64"] = body
		}
		return out, nil
	}
	op, err := c.Prepare(ctx, t)
	if err != nil {
		return nil, err
	}
	done, err := auth.Authorize(ctx, op)
	if err != nil {
		return nil, err
	}
	if c.h.Browser == nil {
		err := mediator.Errorf(mediator.CodeNoBrowser, "no browser is attached to run %s", t.Operation)
		done(err)
		return nil, err
	}
	params := map[string]any{}
	switch t.Operation {
	case mediator.OpNotificationsShow:
		params = map[string]any{"title": t.Title, "message": t.Text}
	case mediator.OpClipboardWrite:
		params = map[string]any{"text": t.Text}
	}
	raw, err := c.h.Browser(t.AgentID).Call(ctx, t.Operation, params)
	done(err)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	// decode: a page call's data, handed to the workflow's later steps as
	// the page gave it; nothing is decided from it.
	if json.Unmarshal(raw, &v) != nil {
		v = map[string]any{}
	}
	return v, nil
}

// Source is the workflow a request names: its graph (JSON, parsed
// exactly), or an agent's script, in JavaScript or TypeScript (the
// extension's "script.ts"), converted before anything runs, its tool
// calls made for agent. Exactly one of the two. Every door that runs a
// workflow reads it here, so a script is refused the same way wherever
// it arrives.
func Source(graph json.RawMessage, src, name, agent string) (workflow.Spec, error) {
	switch {
	case len(graph) > 0 && src != "":
		return workflow.Spec{}, mediator.Errorf(mediator.CodeBadRequest, "a request carries a workflow or a script, not both")
	case src == "":
		return workflow.Parse(graph)
	}
	if agent == "" {
		agent = "script"
	}
	if mediator.ValidAgentID(agent) != nil {
		return workflow.Spec{}, mediator.Errorf(mediator.CodeBadRequest, "the script's agent %q is not an agent id", mediator.Truncate(agent, 64))
	}
	if name == "" {
		name = "script.ts"
	}
	return script.Convert(name, []byte(src), script.Options{ID: "script", AgentID: agent})
}
