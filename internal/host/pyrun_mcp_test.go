package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
)

// TestPythonAgentCallsAnMCPTool: restricted_api.mcp_call reaches a tool
// of the person's MCP server through the same decision as the gateway's
// clients: the grant and the profile's mcpTools, the tool's class, a
// prompt in the extension for a write; a denied write leaves the file
// unmade.
func TestPythonAgentCallsAnMCPTool(t *testing.T) {
	h := newHarness(t, true)
	script := &promptScript{answers: []string{"deny", "allow-once"}}
	h.client.SetHostHandler(script.handle)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": testkit.MCPServer(t, "mcp-server-filesystem"), "args": []string{ws}}}})
	if err := os.WriteFile(filepath.Join(h.st.Dir(), "mcp.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	prof := pyProfile("py-tools", []string{"mcp.call"})
	prof["capabilities"].(map[string]any)["mcpTools"] = []string{"fs/read_text_file", "fs/write_file"}
	h.mustOK("install-agent", map[string]any{"profile": prof, "module": pySource}, nil)
	var run struct {
		RunID string   `json:"runId"`
		API   []string `json:"api"`
	}
	h.mustOK("python-run", map[string]any{"agentId": "py-tools"}, &run)
	if !strings.Contains(strings.Join(run.API, " "), "mcp_call") {
		t.Fatalf("restricted_api %v lacks mcp_call", run.API)
	}
	call := func(tool string, args map[string]any) (json.RawMessage, string) {
		t.Helper()
		r := h.call("agent-call", map[string]any{"runId": run.RunID, "agentId": "py-tools", "operation": "mcp_call",
			"params": map[string]any{"server": "fs", "tool": tool, "args": args}})
		return r.Data, r.Code
	}
	data, code := call("read_text_file", map[string]any{"path": filepath.Join(ws, "hello.txt")})
	if code != "" || !strings.Contains(string(data), "hello") {
		t.Fatalf("read: %s %s", code, data)
	}
	target := filepath.Join(ws, "new.txt")
	if _, code := call("write_file", map[string]any{"path": target, "content": "x"}); code != string(mediator.CodeUserDenied) {
		t.Fatalf("denied write: %s", code)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the denied write made the file: %v", err)
	}
	if _, code := call("write_file", map[string]any{"path": target, "content": "x"}); code != "" {
		t.Fatalf("allowed write: %s", code)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "x" {
		t.Fatalf("the allowed write: %q %v", b, err)
	}
	if _, code := call("move_file", map[string]any{"source": target, "destination": filepath.Join(ws, "moved.txt")}); code != string(mediator.CodeToolNotAllowed) {
		t.Fatalf("a tool the profile does not list: %s", code)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the refused move moved the file: %v", err)
	}
	if n := script.count(); n != 2 {
		t.Fatalf("%d prompts; want 2 (the two writes)", n)
	}
	h.call("python-run-end", map[string]any{"runId": run.RunID, "agentId": "py-tools", "status": "ok"})
}
