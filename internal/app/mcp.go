package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/mediator"
)

// GatewayAgent is the agent an MCP client of `nmhost mcp` acts as, unless
// the gateway is started for another. It is installed with no code and
// no grant: the person grants it mcp.call, as any agent's permission
// (docs/mcp.md).
const GatewayAgent = "mcp-client"

// opToolCall names the refusals of a tool call made before its decision
// (no such server or tool, a server that fails) in the denial log.
const opToolCall = mediator.OpToolCall

// MCP is the gateway over the person's configuration (mcp.json in the
// data directory), one per App whichever door asks (the gateway's
// clients, an agent's restricted API, a workflow's tool task), read on
// first use. Nothing is started until a tool is listed or called; Close
// stops every server it started.
func (a *App) MCP() (*mcpgw.Gateway, error) {
	a.mcpOnce.Do(func() {
		cfg, err := mcpgw.LoadConfig(a.Dir())
		if err != nil {
			a.mcpErr = err
			return
		}
		a.mcp = mcpgw.New(cfg, a.Dir())
	})
	return a.mcp, a.mcpErr
}

// EnsureGatewayAgent installs agent, the principal of the gateway's
// clients, when it is not installed, with a profile that may ask for
// mcp.call on every server the configuration lists. It grants nothing:
// the permission is optional, for the person to grant. An
// agent already installed under that name is left as it is: the person
// may have narrowed its mcpTools.
func (a *App) EnsureGatewayAgent(ctx context.Context, agent string) error {
	gw, err := a.MCP()
	if err != nil {
		return err
	}
	if rec, err := a.st.Agent(ctx, agent); err == nil {
		if rec.ModuleSHA256 != "" {
			// An agent with code of its own (installed from the extension
			// or `nmhost run`): the gateway's clients would inherit its
			// grants and the answers given to it.
			return mediator.Errorf(mediator.CodeBadRequest,
				"an agent with code is installed as %q; the gateway's clients act as an agent of their own: start it with --agent ID", agent)
		}
		return nil
	}
	prof := mediator.Profile{AgentID: agent, Name: "MCP clients of nmhost mcp",
		Description: "The MCP clients connected to the gateway. Each tool call is decided like an agent's operation.",
		// Optional, not required: installing grants what an agent
		// requires, and nobody consented to this install.
		Permissions:   mediator.Permissions{Required: []mediator.Permission{}, Optional: []mediator.Permission{mediator.PermMCPCall}},
		PermissionSet: mediator.SetMCPStandard, PermissionSource: mediator.SetSourceManual,
		Capabilities: mediator.Capabilities{MCPTools: gw.Servers()}}
	if err := prof.Normalize(); err != nil {
		return err
	}
	_, err = a.Install(ctx, prof, nil)
	return err
}

// ToolCallRequest is one call of one tool, on behalf of an agent.
type ToolCallRequest struct {
	AgentID      string
	SessionID    string
	SessionLevel string
	Server, Tool string
	// Args is the call's arguments: a JSON object, or empty for none.
	Args json.RawMessage
	// Workflow, Layer and Task place the call in a workflow.
	Workflow, Task string
	Layer          int
	// Progress, when set, receives the server's progress notifications
	// about the call.
	Progress mcpgw.Progress
}

// ToolOperation is the operation a call of t with args is decided as:
// the tool pinned to its definition, the person's rule and trust for its
// server, the arguments by hash (and by content when the person's
// configuration records them).
func ToolOperation(gw *mcpgw.Gateway, t mcpgw.Tool, req ToolCallRequest) mediator.Operation {
	srv, _ := gw.Server(t.Server)
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	call := &mediator.ToolCall{Server: t.Server, Tool: t.Def.Name, Definition: t.Definition, ArgsSHA256: mediator.ArgsHash(args),
		Hints: t.Hints, Trusted: srv.Trusted, PersonClass: srv.Tools[t.Def.Name], Description: t.Def.Description, Changed: t.Changed}
	if srv.RecordArguments {
		call.Args = mediator.Truncate(string(args), mediator.MaxDenialReasonBytes)
	}
	return mediator.Operation{AgentID: req.AgentID, Name: mediator.OpToolCall, Permission: mediator.PermMCPCall,
		SessionID: req.SessionID, SessionLevel: req.SessionLevel, Tool: call,
		Workflow: req.Workflow, Layer: req.Layer, Task: req.Task, TextLength: len(args)}
}

// CallTool decides one tool call through auth (a policy the front end
// built with the prompter it has) and makes it: the decision is on record
// before the call reaches the server, and its outcome after.
func (a *App) CallTool(ctx context.Context, auth mediator.Authorizer, req ToolCallRequest) (*mcp.CallToolResult, error) {
	p, err := a.PrepareToolCall(ctx, req)
	if err != nil {
		return nil, err
	}
	done, err := auth.Authorize(ctx, p.Op)
	if err != nil {
		return nil, err
	}
	res, err := p.Call(ctx)
	done(err)
	if err != nil {
		return nil, fmt.Errorf("agent[%s] tool[%s.%s]: %w", req.AgentID, req.Server, req.Tool, err)
	}
	return res, nil
}

// PreparedCall is a tool call ready to be decided: the operation to
// decide, and the call to make once it is allowed.
type PreparedCall struct {
	Op   mediator.Operation
	Call func(ctx context.Context) (*mcp.CallToolResult, error)
}

// PrepareToolCall finds the tool (starting its server when needed) and
// returns the operation a call of it is decided as, for a door that
// decides through its own Authorizer (a module's run, a workflow's
// layer). A call the gateway cannot place (no such server or tool, a
// server that fails to list, arguments that are no object) is refused
// and recorded here, in one place for every door.
func (a *App) PrepareToolCall(ctx context.Context, req ToolCallRequest) (PreparedCall, error) {
	if err := mediator.ValidAgentID(req.AgentID); err != nil {
		return PreparedCall{}, err
	}
	gw, err := a.MCP()
	if err != nil {
		return PreparedCall{}, a.refusedTool(ctx, req, err)
	}
	if len(req.Args) > 0 && !isObject(req.Args) {
		return PreparedCall{}, a.refusedTool(ctx, req, mediator.Errorf(mediator.CodeBadRequest, "a tool's arguments are a JSON object"))
	}
	t, err := gw.Tool(ctx, req.Server, req.Tool)
	if err != nil {
		return PreparedCall{}, a.refusedTool(ctx, req, err)
	}
	args, progress := req.Args, req.Progress
	return PreparedCall{Op: ToolOperation(gw, t, req), Call: func(ctx context.Context) (*mcp.CallToolResult, error) {
		return gw.Call(ctx, t, args, progress)
	}}, nil
}

// ModuleTools is the MCP tools as a module's run reaches them
// (wasmhost.Tools).
func (a *App) ModuleTools() ModuleTools { return ModuleTools{a} }

// ModuleTools prepares a module's tool calls through the core.
type ModuleTools struct{ a *App }

// PrepareToolCall implements wasmhost.Tools.
func (m ModuleTools) PrepareToolCall(ctx context.Context, agentID, server, tool string, args []byte) (mediator.Operation, func(context.Context) ([]byte, error), error) {
	p, err := m.a.PrepareToolCall(ctx, ToolCallRequest{AgentID: agentID, Server: server, Tool: tool, Args: args})
	if err != nil {
		return mediator.Operation{}, nil, err
	}
	return p.Op, func(ctx context.Context) ([]byte, error) {
		res, err := p.Call(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	}, nil
}

// RecordToolRefusals puts the tools and servers a listing refused in the
// denial log: a tool a hostile server named with a control character is
// not silently missing.
func (a *App) RecordToolRefusals(ctx context.Context, agent string, refused []mcpgw.Refusal) {
	for _, r := range refused {
		_ = a.refusedTool(ctx, ToolCallRequest{AgentID: agent, Server: r.Server, Tool: r.Tool}, r.Err)
	}
}

func (a *App) refusedTool(ctx context.Context, req ToolCallRequest, err error) error {
	a.LogDenial(ctx, a.layer, mediator.Denial{
		AgentID: mediator.Truncate(req.AgentID, mediator.MaxAgentIDLen), Permission: string(mediator.PermMCPCall), Code: mediator.CodeOf(err),
		Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Method: opToolCall, Origin: a.origin,
			Details: map[string]string{"operation": opToolCall, "decidedBy": "gateway", "server": mediator.Truncate(req.Server, 64),
				"tool": mediator.EscapeTerminal(mediator.Truncate(req.Tool, mediator.MaxToolNameLen))}},
	})
	return mediator.Recorded(err)
}

func isObject(b json.RawMessage) bool {
	i := slices.IndexFunc(b, func(c byte) bool { return c != ' ' && c != '\t' && c != '\n' && c != '\r' })
	return i >= 0 && b[i] == '{' && json.Valid(b)
}

// workflowTools makes a workflow's mcp tasks' calls through CallTool,
// each decided by the workflow's policy (a prompt per call that needs
// one: the plan lists the task as one that asks).
type workflowTools struct {
	a    *App
	auth mediator.Authorizer
}

// CallTool implements workflow.ToolCaller.
func (w workflowTools) CallTool(ctx context.Context, agentID, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	res, err := w.a.CallTool(ctx, w.auth, ToolCallRequest{AgentID: agentID, Server: server, Tool: tool, Args: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
