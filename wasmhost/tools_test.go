package wasmhost

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

var toolprobeWasm = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("./" + filepath.Join("testdata", "toolprobe"))
})

// denyAll answers every prompt with deny.
type denyAll struct{}

func (denyAll) Prompt(context.Context, mediator.PromptRequest) (mediator.Answer, error) {
	return mediator.AnswerDeny, nil
}

// fakeTools is one server "fs" with read_file and delete_file; it counts
// the calls that were made.
type fakeTools struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeTools) PrepareToolCall(_ context.Context, agentID, server, tool string, args []byte) (mediator.Operation, func(context.Context) ([]byte, error), error) {
	if server != "fs" || tool != "read_file" && tool != "delete_file" {
		return mediator.Operation{}, nil, mediator.Errorf(mediator.CodeToolNotAllowed, "the MCP server %s lists no tool %s", server, tool)
	}
	def := mediator.ToolDefinitionHash(tool, "", json.RawMessage(`{"type":"object"}`), nil)
	op := mediator.Operation{Name: mediator.OpToolCall, Tool: &mediator.ToolCall{Server: server, Tool: tool, Definition: def, ArgsSHA256: mediator.ArgsHash(args)}}
	return op, func(context.Context) ([]byte, error) {
		f.mu.Lock()
		f.calls = append(f.calls, tool)
		f.mu.Unlock()
		return []byte(`{"content":[{"type":"text","text":"done"}]}`), nil
	}, nil
}

// TestModuleCallsAnMCPTool: a module's mcp_call links only with mcp.call
// granted, is decided by the run's Authorizer (a read runs; a delete,
// always confirmed, is denied here by a prompt that denies), and a
// denied call never reaches the server.
func TestModuleCallsAnMCPTool(t *testing.T) {
	module, err := toolprobeWasm()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.policy = mediator.NewPolicy(f.st, mediator.PolicyOptions{Prompter: denyAll{}})
	rec := f.install(t, "tooler", []mediator.Permission{mediator.PermMCPCall}, mediator.Capabilities{MCPTools: []string{"fs"}})
	tools := &fakeTools{}
	spec := f.spec(rec, module, "fs read_file {\"path\":\"a\"}\nfs delete_file {\"path\":\"a\"}\nfs write_file {}\nmemory read_graph {}")
	spec.Tools = tools
	res, err := sharedRuntime().Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`fs.read_file: {"content":[{"type":"text","text":"done"}]}`,
		"fs.delete_file: error user_denied",
		"fs.write_file: error tool_not_allowed",
		"memory.read_graph: error tool_not_allowed",
	} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if len(tools.calls) != 1 || tools.calls[0] != "read_file" {
		t.Fatalf("calls made %v; want read_file alone", tools.calls)
	}

	// Not granted: mcp_call is not linked at all.
	p := mediator.Profile{AgentID: "tooler2", Permissions: mediator.Permissions{Optional: []mediator.Permission{mediator.PermMCPCall}},
		Capabilities: mediator.Capabilities{MCPTools: []string{"fs"}}}
	if err := p.Normalize(); err != nil {
		t.Fatal(err)
	}
	optional, err := f.st.InstallAgent(context.Background(), p, "")
	if err != nil {
		t.Fatal(err)
	}
	spec = f.spec(optional, module, "fs read_file {}")
	spec.Tools = tools
	res, err = sharedRuntime().Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status == "ok" || !strings.Contains(res.Error, "mcp_call") {
		t.Fatalf("an ungranted mcp_call linked: %s %s", res.Status, res.Error)
	}
}
