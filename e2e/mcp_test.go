//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testkit"
)

// TestMCPCallIsAskedInTheExtension: an MCP client (the Go SDK's) calls the
// reference filesystem server's write_file through `nmhost mcp`; the
// gateway has no terminal, so the question reaches the extension's
// prompt window through the host it is connected to. Allow writes the
// file and records it; deny leaves a canary file as it was and logs the
// denial.
func TestMCPCallIsAskedInTheExtension(t *testing.T) {
	ws := t.TempDir()
	canary := filepath.Join(ws, "canary.txt")
	if err := os.WriteFile(canary, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": testkit.MCPServer(t, "mcp-server-filesystem"), "args": []string{ws}}}})
	cfgPath := filepath.Join(dataDir, "mcp.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(cfgPath) })
	env := append(os.Environ(), "NMHOST_DATA_DIR="+dataDir)
	cmd := exec.Command(nmhostBin, "mcp")
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	grant := exec.Command(nmhostBin, "grant", "mcp-client", "mcp.call")
	grant.Env = env
	if out, err := grant.CombinedOutput(); err != nil {
		t.Fatalf("grant: %v %s", err, out)
	}
	// A page of the extension keeps its host connected: the host claims
	// the gateway's question and shows it.
	ext := page(t, extURL("options.html"))
	call := func(args map[string]any, answer string) *mcp.CallToolResult {
		t.Helper()
		if r := hostCall(t, ext, "hello", nil); !r.Success {
			t.Fatalf("hello: %+v", r)
		}
		type result struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs.write_file", Arguments: args})
			done <- result{res, err}
		}()
		tg := nextPrompt(t)
		// The window says which tool of which server, in its sentence.
		if q := waitInPrompt(t, tg, `document.getElementById('question') && document.getElementById('question').textContent.includes('write_file')`,
			`document.getElementById('question').textContent`); !strings.Contains(q, "wants to call the tool write_file of your MCP server fs") {
			t.Errorf("the prompt's sentence: %q", q)
		}
		clickPrompt(t, tg, answer)
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.res
		case <-time.After(guard):
			t.Fatal("the tool call never ended")
			return nil
		}
	}
	res := call(map[string]any{"path": canary, "content": "overwritten"}, "deny")
	if !res.IsError || res.Meta["nmhost/code"] != "user_denied" {
		t.Fatalf("denied call: %+v", res)
	}
	if b, _ := os.ReadFile(canary); string(b) != "untouched" {
		t.Fatalf("the canary was written: %q", b)
	}
	target := filepath.Join(ws, "new.txt")
	if res := call(map[string]any{"path": target, "content": "allowed"}, "allow-once"); res.IsError {
		t.Fatalf("allowed call: %+v", res)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "allowed" {
		t.Fatalf("the allowed write: %q %v", b, err)
	}
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page, err := st.ListDenials(context.Background(), store.DenialFilter{AgentID: "mcp-client", Code: "user_denied", Limit: 10})
	if err != nil || len(page.Denials) == 0 || page.Denials[0].Permission != "mcp.call" {
		t.Fatalf("the denial log: %+v %v", page, err)
	}
}
