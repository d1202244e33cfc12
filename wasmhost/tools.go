package wasmhost

import (
	"context"
	"encoding/json"

	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/mediator"
)

// Tools reaches the MCP servers the person configured (the core
// implements it): it finds the tool and returns the operation a call is
// decided as, and the call to make once the run's Authorizer allowed it.
// A call it cannot place is refused, and recorded, there.
type Tools interface {
	PrepareToolCall(ctx context.Context, agentID, server, tool string, args []byte) (mediator.Operation, func(context.Context) ([]byte, error), error)
}

// toolCallRequest is the JSON a guest passes to mcp_call.
type toolCallRequest struct {
	Server string          `json:"server"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
}

// mcpCall calls a tool of an MCP server: the operation mcp.call, pinned
// to the tool's definition and carrying the arguments by hash, decided
// by the run's Authorizer like every other call of the run.
func (ru *run) mcpCall(mod api.Module, stack []uint64) ([]byte, error) {
	var req toolCallRequest
	if err := memoryRequest(mod, stack, "mcp_call", &req); err != nil {
		return nil, err
	}
	if ru.spec.Tools == nil {
		return nil, mediator.Errorf(mediator.CodeToolNotAllowed, "this host reaches no MCP server")
	}
	op, call, err := ru.spec.Tools.PrepareToolCall(ru.ctx, ru.spec.Agent.Profile.AgentID, req.Server, req.Tool, req.Args)
	if err != nil {
		return nil, err
	}
	return ru.authorized(op, func() ([]byte, error) { return call(ru.ctx) })
}
