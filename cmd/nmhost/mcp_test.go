package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpServersDir is where scripts/mcp-servers.sh installed the reference
// servers.
func mcpServersDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("NMHOST_MCP_SERVERS"); d != "" {
		return d
	}
	out, err := exec.Command("../../scripts/mcp-servers.sh").Output()
	if err != nil {
		t.Fatalf("scripts/mcp-servers.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// mcpDataDir is a data dir whose mcp.json names the reference filesystem
// server over ws, and the workspace with a file in it.
func mcpDataDir(t *testing.T) (dir, ws string) {
	dir = newDataDir(t)
	ws = t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"mcpServers": map[string]any{"fs": map[string]any{
		"command": filepath.Join(mcpServersDir(t), "node_modules", ".bin", "mcp-server-filesystem"), "args": []string{ws}}}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, ws
}

func toolText(res *mcp.CallToolResult) string {
	var s strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s.WriteString(tc.Text)
		}
	}
	return s.String()
}

// TestMCPGatewayOverStdio: `nmhost mcp` as an MCP client starts it: the
// reference server's tools under SERVER.TOOL; nothing before the person's
// grant; a write that needs a person refused when nobody can be asked,
// and made with --yes-to; stdout carries the protocol alone.
func TestMCPGatewayOverStdio(t *testing.T) {
	dir, ws := mcpDataDir(t)
	connect := func(args ...string) *mcp.ClientSession {
		cmd := exec.Command(nmhostBin, append([]string{"mcp"}, args...)...)
		cmd.Env = hostEnv(dir)
		cmd.Stderr = &lockedBuffer{}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect: %v; stderr: %s", err, cmd.Stderr)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, name string, args map[string]any) (string, string) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		code, _ := res.Meta["nmhost/code"].(string)
		return toolText(res), code
	}
	cs := connect()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "fs.write_file") {
		t.Fatalf("tools %v", names)
	}
	if _, code := call(cs, "fs.read_text_file", map[string]any{"path": filepath.Join(ws, "hello.txt")}); code != "permission_not_granted" {
		t.Fatalf("before the grant: %q", code)
	}
	grant := exec.Command(nmhostBin, "grant", "mcp-client", "mcp.call")
	grant.Env = hostEnv(dir)
	if out, err := grant.CombinedOutput(); err != nil {
		t.Fatalf("grant: %v %s", err, out)
	}
	// The grant, made by another process, holds for the next call.
	if text, code := call(cs, "fs.read_text_file", map[string]any{"path": filepath.Join(ws, "hello.txt")}); code != "" || text != "hello" {
		t.Fatalf("read: %q %q", code, text)
	}
	target := filepath.Join(ws, "new.txt")
	if _, code := call(cs, "fs.write_file", map[string]any{"path": target, "content": "x"}); code != "confirmation_required" {
		t.Fatalf("a write with nobody to ask: %q", code)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the refused write made the file: %v", err)
	}
	cs2 := connect("--yes-to", "mcp.call")
	if _, code := call(cs2, "fs.write_file", map[string]any{"path": target, "content": "x"}); code != "" {
		t.Fatalf("a write pre-answered: %q", code)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "x" {
		t.Fatalf("the allowed write: %q %v", b, err)
	}
}

// TestMCPGatewayOverHTTP: the Streamable HTTP endpoint admits only a
// request with the token, the gateway's own Host and no Origin.
func TestMCPGatewayOverHTTP(t *testing.T) {
	dir, ws := mcpDataDir(t)
	if out, err := exec.Command(nmhostBin, "mcp", "--http", "0.0.0.0:0").CombinedOutput(); err == nil || !strings.Contains(string(out), "loopback") {
		t.Fatalf("--http on every address: %v %s", err, out)
	}
	cmd := exec.Command(nmhostBin, "mcp", "--http", "127.0.0.1:0")
	cmd.Env = hostEnv(dir)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v; stderr %s", err, stderr)
	}
	endpoint := strings.TrimSpace(line)
	tok, err := os.ReadFile(filepath.Join(dir, "viewer-token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tok))
	post := func(mod func(*http.Request)) int {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		mod(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, tc := range map[string]struct {
		mod  func(*http.Request)
		want int
	}{
		"no token":      {func(*http.Request) {}, 401},
		"a wrong token": {func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("A", len(token))) }, 401},
		"a web page's request": {func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Origin", "https://evil.example")
		}, 403},
		"another Host": {func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
			r.Host = "rebound.example:80"
		}, 403},
	} {
		if got := post(tc.mod); got != tc.want {
			t.Errorf("%s: %d; want %d", name, got, tc.want)
		}
	}
	hc := &http.Client{Transport: bearer{token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr %s", err, stderr)
	}
	defer cs.Close()
	grant := exec.Command(nmhostBin, "grant", "mcp-client", "mcp.call")
	grant.Env = hostEnv(dir)
	if out, err := grant.CombinedOutput(); err != nil {
		t.Fatalf("grant: %v %s", err, out)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs.read_text_file", Arguments: map[string]any{"path": filepath.Join(ws, "hello.txt")}})
	if err != nil || res.IsError || toolText(res) != "hello" {
		t.Fatalf("read over HTTP: %+v %v", res, err)
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
