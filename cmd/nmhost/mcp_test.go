package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/nmhost/internal/testkit"
)

// mcpDataDir is a data dir whose mcp.json names the reference filesystem
// server over ws, and the workspace with a file in it.
func mcpDataDir(t *testing.T) (dir, ws string) {
	dir = newDataDir(t)
	ws = t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"mcpServers": map[string]any{"fs": map[string]any{
		"command": testkit.MCPServer(t, "mcp-server-filesystem"), "args": []string{ws}}}}
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
	// nmhost check holds the gateway's agent to the tool rules too.
	check := exec.Command(nmhostBin, "check", "mcp-client")
	check.Env = hostEnv(dir)
	out, err := check.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok   tool      mcp.call fs.delete_everything that its server calls read-only") ||
		!strings.Contains(string(out), "ok   tool      mcp.call of a server the profile does not list") {
		t.Fatalf("nmhost check: %v\n%s", err, out)
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

// TestMCPConformance runs the official MCP conformance suite's server
// scenarios against `nmhost mcp --http --server everything`, in front of
// the Go SDK's conformance server, through a loopback proxy that adds the
// token (the suite sends none). testdata/mcp-conformance-baseline.yml
// lists the scenarios the gateway does not pass and why; the suite exits
// non-zero on a new failure and on a stale entry.
func TestMCPConformance(t *testing.T) {
	tmp := t.TempDir()
	upstream := filepath.Join(tmp, "everything-server")
	if out, err := exec.Command("go", "build", "-o", upstream, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput(); err != nil {
		t.Fatalf("building the SDK's conformance server: %v\n%s", err, out)
	}
	dir := newDataDir(t)
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": upstream}}})
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	endpoint, stop := startMCPHTTP(t, dir, "--server", "everything", "--yes-to", "mcp.call")
	defer stop()
	grant := exec.Command(nmhostBin, "grant", "mcp-client", "mcp.call")
	grant.Env = hostEnv(dir)
	if out, err := grant.CombinedOutput(); err != nil {
		t.Fatalf("grant: %v %s", err, out)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "viewer-token"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := tokenProxy(t, endpoint, strings.TrimSpace(string(tok)))
	baseline, err := filepath.Abs("testdata/mcp-conformance-baseline.yml")
	if err != nil {
		t.Fatal(err)
	}
	suite := exec.Command("node", testkit.MCPServer(t, "conformance"), "server",
		"--url", proxy+"/", "--expected-failures", baseline)
	suite.Dir = tmp // its results/ directory
	out, err := suite.CombinedOutput()
	summary := string(out)
	if i := strings.Index(summary, "=== SUMMARY ==="); i >= 0 {
		summary = summary[i:]
	}
	t.Logf("conformance suite:\n%s", summary)
	if err != nil {
		t.Fatalf("the conformance suite: %v (a scenario failed that the baseline does not list, or passed that it does)\n%s", err, out)
	}
}

// startMCPHTTP starts `nmhost mcp --http 127.0.0.1:0 args...` over dir and
// returns its endpoint.
func startMCPHTTP(t *testing.T, dir string, args ...string) (string, func()) {
	t.Helper()
	cmd := exec.Command(nmhostBin, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...)...)
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
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("nmhost mcp's first line: %v; stderr %s", err, stderr)
	}
	return strings.TrimSuffix(strings.TrimSpace(line), "/"), func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
	}
}

// tokenProxy is a loopback reverse proxy to endpoint that adds the
// bearer token, as a configured client would, and passes every other
// header through, except its own address in Host and Origin, which it
// turns into the gateway's: the suite's checks of foreign Hosts and
// Origins still reach the gateway as sent.
func tokenProxy(t *testing.T, endpoint, token string) string {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	// The proxy's own address is known before it serves: a request's
	// Rewrite reads it.
	srv := httptest.NewUnstartedServer(nil)
	self := srv.Listener.Addr().String()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			if pr.In.Host == self {
				pr.Out.Host = target.Host
			}
			if pr.In.Header.Get("Origin") == "http://"+self {
				pr.Out.Header.Set("Origin", "http://"+target.Host)
			}
			pr.Out.Header.Set("Authorization", "Bearer "+token)
		},
		FlushInterval: -1,
	}
	srv.Config.Handler = rp
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMCPGatewayAsksThroughTheBrowser: `nmhost mcp` with no terminal puts
// a call that needs a person to the browser: a host process the
// extension is connected to shows it in its prompt window (here the test
// answers as the extension does), and the answer decides the call. Deny
// leaves the file unmade; allow writes it; with no browser connected the
// call is refused, on the record, without waiting out the prompt.
func TestMCPGatewayAsksThroughTheBrowser(t *testing.T) {
	dir, ws := mcpDataDir(t)
	cmd := exec.Command(nmhostBin, "mcp")
	cmd.Env = hostEnv(dir)
	cmd.Stderr = &lockedBuffer{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	grant := exec.Command(nmhostBin, "grant", "mcp-client", "mcp.call")
	grant.Env = hostEnv(dir)
	if out, err := grant.CombinedOutput(); err != nil {
		t.Fatalf("grant: %v %s", err, out)
	}
	target := filepath.Join(ws, "new.txt")
	write := func() (string, string) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fs.write_file", Arguments: map[string]any{"path": target, "content": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		code, _ := res.Meta["nmhost/code"].(string)
		return toolText(res), code
	}
	if text, code := write(); code != "confirmation_required" || !strings.Contains(text, "nobody could be asked") {
		t.Fatalf("with no browser: %q %q", code, text)
	}

	host := start(t, dir)
	var mu sync.Mutex
	var shown []map[string]any
	answers := []string{"deny", "allow-once"}
	host.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		if typ != "prompt" {
			return nil
		}
		var m map[string]any
		json.Unmarshal(msg, &m)
		mu.Lock()
		defer mu.Unlock()
		shown = append(shown, m)
		a := answers[0]
		answers = answers[1:]
		return map[string]any{"answer": a}
	})
	if _, err := host.Call(context.Background(), "hello", nil); err != nil {
		t.Fatal(err)
	}
	if _, code := write(); code != "user_denied" {
		t.Fatalf("denied in the browser: %q", code)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the denied write made the file: %v", err)
	}
	if _, code := write(); code != "" {
		t.Fatalf("allowed in the browser: %q", code)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "x" {
		t.Fatalf("the allowed write: %q %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(shown) != 2 {
		t.Fatalf("%d prompts in the browser; want 2", len(shown))
	}
	tool, _ := shown[0]["target"].(map[string]any)["tool"].(map[string]any)
	if shown[0]["operation"] != "mcp.call" || tool["server"] != "fs" || tool["tool"] != "write_file" || tool["definition"] == "" {
		t.Fatalf("the prompt showed %v", shown[0])
	}
}

// TestWorkflowScriptCallsMCPTools: an agent's script, converted to its
// workflow, calls a reference server's tool through the core: a read
// runs without a question and its result flows into the script's pure
// steps; the call is on the record under the script's agent.
func TestWorkflowScriptCallsMCPTools(t *testing.T) {
	dir := newDataDir(t)
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"memory": map[string]any{
		"command": testkit.MCPServer(t, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "m.jsonl")}}}})
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(nmhostBin, args...)
		cmd.Env = hostEnv(dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// The gateway installs the script's agent (no grant); the person grants it.
	if out, err := run("mcp", "--agent", "reporter"); err != nil {
		t.Fatalf("nmhost mcp: %v %s", err, out)
	}
	script := filepath.Join(t.TempDir(), "count.ts")
	if err := os.WriteFile(script, []byte("const g: any = await mcp.memory.read_graph({});\nconst parts = g.content.length;\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run("workflow", "run", "--agent", "reporter", script); err == nil || !strings.Contains(out, "permission_not_granted") {
		t.Fatalf("before the grant: %v\n%s", err, out)
	}
	if out, err := run("grant", "reporter", "mcp.call"); err != nil {
		t.Fatalf("grant: %v %s", err, out)
	}
	out, err := run("workflow", "run", "--agent", "reporter", script)
	if err != nil || !strings.Contains(out, "parts") || !strings.Contains(out, "0 prompts") {
		t.Fatalf("workflow run: %v\n%s", err, out)
	}
	trail, _ := run("audit", "tail", "-n", "20", "--json")
	if !strings.Contains(trail, `"operation":"mcp.call"`) || !strings.Contains(trail, `"agentId":"reporter"`) {
		t.Fatalf("the trail lacks the tool call:\n%s", trail)
	}
}

// TestWSRunAsksThroughTheBrowser: a /ws run of `nmhost serve` asks the
// person in the browser for a call that needs them (a POST): denied
// there, the canary gets nothing; allowed, it gets the request.
func TestWSRunAsksThroughTheBrowser(t *testing.T) {
	var hits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer canary.Close()
	dir := newDataDir(t)
	hostport := strings.TrimPrefix(canary.URL, "http://")
	module := assemble([]wasmCall{{"fetch", []string{`{"url":"` + canary.URL + `/p","method":"POST","body":"x"}`}}})
	host := start(t, dir)
	if r := call(t, host.Client, "install-agent", map[string]any{"module": base64.StdEncoding.EncodeToString(module), "profile": map[string]any{
		"agentId": "poster", "permissions": map[string]any{"required": []string{"network.fetch"}},
		"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{hostport}}}}); !r.Success {
		t.Fatalf("install: %+v", r)
	}
	var mu sync.Mutex
	answers := []string{"deny", "allow-once"}
	prompts := 0
	host.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		if typ != "prompt" {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		prompts++
		a := answers[0]
		answers = answers[1:]
		return map[string]any{"answer": a}
	})
	c := dialServeWS(t, dir)
	run := func(id string) string {
		t.Helper()
		if err := c.WriteJSON(map[string]any{"type": "run", "runId": id, "agentId": "poster"}); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		code := ""
		for {
			var msg struct {
				Type   string
				RunID  string
				Denial *struct{ Code string }
				Error  string
			}
			if err := c.ReadJSON(&msg); err != nil {
				t.Fatal(err)
			}
			if msg.RunID != id {
				continue // not this run's: the hello, the live feed of the denial log
			}
			switch msg.Type {
			case "denial":
				code = msg.Denial.Code
			case "result":
				return code
			case "error":
				t.Fatal(msg.Error)
			}
		}
	}
	if code := run("r1"); code != "user_denied" || hits.Load() != 0 {
		t.Fatalf("denied in the browser: denial %q, canary hit %d times", code, hits.Load())
	}
	if code := run("r2"); code != "" || hits.Load() != 1 {
		t.Fatalf("allowed in the browser: denial %q, canary hit %d times", code, hits.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if prompts != 2 {
		t.Fatalf("%d prompts in the browser; want 2", prompts)
	}
}
