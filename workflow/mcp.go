package workflow

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow/purejs"
)

// ToolCaller performs mcp tasks through the host's MCP gateway, which
// decides each call (the policy, a person's approval where it asks) and
// records it before it is made. A workflow with an mcp task and no
// ToolCaller is refused before anything runs.
type ToolCaller interface {
	CallTool(ctx context.Context, agentID, server, tool string, args json.RawMessage) (json.RawMessage, error)
}

// maxToolResultBytes bounds what one tool call may return into the
// workflow's values.
const maxToolResultBytes = 4 << 20

// checkJS checks the parts of a task written in JavaScript: a code step
// has exactly one of expr and js, an mcp task names its server and tool
// plainly and has at most one of args (a JSON object) and argsExpr, and
// every name bound by vars is a dependency.
func (t Task) checkJS() error {
	bad := func(format string, args ...any) error {
		return mediator.Errorf(mediator.CodeInvalidWorkflow, "task %q: "+format, append([]any{t.ID}, args...)...)
	}
	var vars map[string]string
	switch {
	case t.Code != nil:
		if (t.Code.Expr == "") == (t.Code.JS == "") {
			return bad("a code step has exactly one of expr (CEL) and js (JavaScript)")
		}
		if t.Code.Expr != "" && len(t.Code.Vars) > 0 {
			return bad("vars bind names of a js step only")
		}
		vars = t.Code.Vars
	case t.MCP != nil:
		m := t.MCP
		if mediator.ValidAgentID(m.AgentID) != nil {
			return bad("agentId %q is not an agent id", mediator.Truncate(m.AgentID, 64))
		}
		if !plainName(m.Server) || !plainName(m.Tool) {
			return bad("server and tool must be 1-%d letters, digits, '_' or '-'", maxIDLen)
		}
		if len(m.Args) > 0 && m.ArgsExpr != "" {
			return bad("has both args and argsExpr")
		}
		if len(m.Args) > 0 {
			var obj map[string]jsontext.Value
			if err := mediator.DecodeExact(m.Args, &obj); err != nil || obj == nil {
				return bad("args must be a JSON object")
			}
		}
		if m.ArgsExpr == "" && len(m.Vars) > 0 {
			return bad("vars bind names of argsExpr only")
		}
		vars = m.Vars
	}
	for name, dep := range vars {
		if !purejs.ValidName(name) {
			return bad("%q is not a JavaScript name to bind", mediator.Truncate(name, 64))
		}
		if !slices.Contains(t.DependsOn, dep) {
			return bad("binds %q to %q, which is not one of its dependencies", name, mediator.Truncate(dep, 64))
		}
	}
	return nil
}

// plainName is a server's or a tool's name as a plan shows it.
func plainName(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// jsValues binds a JavaScript step's names to its dependencies' results.
func (r *runner) jsValues(i int, vars map[string]string) map[string]any {
	byID := r.depValues(i)
	out := make(map[string]any, len(vars))
	for name, dep := range vars {
		out[name] = byID[dep]
	}
	return out
}

// evalJS runs a code step written in JavaScript.
func (r *runner) evalJS(ctx context.Context, i int) (any, error) {
	c := r.spec.Tasks[i].Code
	return purejs.Run(ctx, c.JS, r.jsValues(i, c.Vars), r.jsLimits())
}

func (r *runner) jsLimits() purejs.Limits { return purejs.DefaultLimits() }

// callTool runs an mcp task: its arguments (computed now when argsExpr),
// then the call through the gateway.
func (r *runner) callTool(ctx context.Context, i int) (any, error) {
	m := r.spec.Tasks[i].MCP
	if r.env.Tools == nil {
		return nil, noGateway(r.spec.Tasks[i].ID)
	}
	args := m.Args
	if m.ArgsExpr != "" {
		if err := purejs.CheckExpr(m.ArgsExpr, m.Vars); err != nil {
			return nil, err
		}
		v, err := purejs.Run(ctx, "return ("+m.ArgsExpr+"\n);", r.jsValues(i, m.Vars), r.jsLimits())
		if err != nil {
			return nil, err
		}
		if _, ok := v.(map[string]any); !ok {
			return nil, mediator.Errorf(mediator.CodeTrap, "argsExpr gave %T, not an object", v)
		}
		if args, err = json.Marshal(v); err != nil {
			return nil, mediator.Errorf(mediator.CodeTrap, "argsExpr: %v", err)
		}
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	out, err := r.env.Tools.CallTool(ctx, m.AgentID, m.Server, m.Tool, args)
	if err != nil {
		return nil, err
	}
	if len(out) > maxToolResultBytes {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "tool %s.%s returned %d bytes; the limit is %d", m.Server, m.Tool, len(out), maxToolResultBytes)
	}
	var v any
	// decode: a tool's result is data for the workflow's later steps, with
	// the tool's meaning; nothing is decided from it (the gateway decided
	// the call).
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, mediator.Errorf(mediator.CodeUpstreamError, "tool %s.%s returned no JSON value: %v", m.Server, m.Tool, err)
	}
	return v, nil
}

// noGateway refuses an mcp task in a host with no MCP gateway.
func noGateway(task string) error {
	return mediator.Errorf(mediator.CodeUnknownOperation, "task %q calls an MCP tool, and this host has no MCP gateway to decide and make the call", task)
}
