package mcpserve_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/mediator"
)

// TestGatewayCodesReachTheDenialLog: every reason code the gateway can
// answer a call with is in the denial log after a real scenario.
func TestGatewayCodesReachTheDenialLog(t *testing.T) {
	for _, tc := range []struct {
		code mediator.Code
		run  func(t *testing.T, calls string) *gateway
	}{
		{mediator.CodePermissionNotGranted, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "liar", calls)}})
			g.call(t, "s.read_file", map[string]any{})
			return g
		}},
		{mediator.CodeToolNotAllowed, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "liar", calls)}, grant: true})
			// An agent whose profile lists another server's tools only.
			prof := mediator.Profile{AgentID: "narrow", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermMCPCall}},
				Capabilities: mediator.Capabilities{MCPTools: []string{"other"}}}
			if err := prof.Normalize(); err != nil {
				t.Fatal(err)
			}
			if _, err := g.core.Install(t.Context(), prof, nil); err != nil {
				t.Fatal(err)
			}
			_, err := g.core.CallTool(t.Context(), g.core.Policy(mediator.PolicyOptions{}), app.ToolCallRequest{AgentID: "narrow", Server: "s", Tool: "read_file"})
			if mediator.CodeOf(err) != mediator.CodeToolNotAllowed {
				t.Fatalf("CallTool: %v", err)
			}
			// And a server nobody configured, refused before any decision.
			_, err = g.core.CallTool(t.Context(), g.core.Policy(mediator.PolicyOptions{}), app.ToolCallRequest{AgentID: "narrow", Server: "nowhere", Tool: "x"})
			if mediator.CodeOf(err) != mediator.CodeToolNotAllowed || !mediator.IsRecorded(err) {
				t.Fatalf("CallTool of an unconfigured server: %v", err)
			}
			return g
		}},
		{mediator.CodeToolDefinitions, func(t *testing.T, calls string) *gateway {
			return newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "names", calls)}, grant: true})
		}},
		{mediator.CodeUserDenied, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "liar", calls)}, grant: true})
			g.person.set(mediator.AnswerDeny)
			g.call(t, "s.delete_everything", map[string]any{})
			return g
		}},
		{mediator.CodePromptTimeout, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "liar", calls)}, grant: true})
			g.call(t, "s.delete_everything", map[string]any{})
			return g
		}},
		{mediator.CodeSessionLevel, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "liar", calls)}, grant: true, level: mediator.LevelLow})
			g.call(t, "s.read_file", map[string]any{})
			return g
		}},
		{mediator.CodeAdminPolicy, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "liar", calls)}, grant: true, admin: `{"blockedMcpTools": ["s"]}`})
			g.call(t, "s.read_file", map[string]any{})
			return g
		}},
		{mediator.CodeBadRequest, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": self(t, "liar", calls)}, grant: true})
			_, err := g.core.CallTool(context.Background(), g.core.Policy(mediator.PolicyOptions{}), app.ToolCallRequest{AgentID: app.GatewayAgent, Server: "s", Tool: "read_file", Args: []byte(`[1]`)})
			if mediator.CodeOf(err) != mediator.CodeBadRequest {
				t.Fatalf("arguments that are no object: %v", err)
			}
			return g
		}},
		{mediator.CodeUpstreamError, func(t *testing.T, calls string) *gateway {
			g := newGateway(t, setup{servers: map[string]mcpgw.Server{"s": {Command: filepath.Join(t.TempDir(), "no-such-program")}}, grant: true})
			return g
		}},
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			g := tc.run(t, calls)
			d := g.hasDenial(t, tc.code)
			if d.Permission != string(mediator.PermMCPCall) {
				t.Fatalf("denial %+v does not name mcp.call", d)
			}
			if got := upstreamCalls(t, calls); len(got) != 0 {
				t.Fatalf("a refused call reached the server: %v", got)
			}
		})
	}
}

// TestTheGatewayDoesNotAdoptAnAgentWithCode: the gateway's clients never
// act as an agent that has code of its own (its grants and answers are
// that agent's).
func TestTheGatewayDoesNotAdoptAnAgentWithCode(t *testing.T) {
	g := newGateway(t, setup{servers: map[string]mcpgw.Server{}})
	prof := mediator.Profile{AgentID: "borrowed", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermConsoleLog}}}
	if err := prof.Normalize(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.core.Install(t.Context(), prof, []byte("\x00asm\x01\x00\x00\x00")); err != nil {
		t.Fatal(err)
	}
	if err := g.core.EnsureGatewayAgent(t.Context(), "borrowed"); mediator.CodeOf(err) != mediator.CodeBadRequest {
		t.Fatalf("the gateway adopted an agent with code: %v", err)
	}
	if err := g.core.EnsureGatewayAgent(t.Context(), app.GatewayAgent); err != nil {
		t.Fatalf("its own agent, installed already: %v", err)
	}
}
