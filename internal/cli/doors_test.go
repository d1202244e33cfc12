//go:build unix

package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/host"
	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/viewer"
	"github.com/agentgate/nmhost/mediator"
)

// doors is one data directory under one admin policy, reached through
// every front end: the native host's frames, the viewer's HTTP API and
// its /ws, and the CLI. Each door is opened afresh for each call, as the
// browser starts a host per connection and a person runs a command.
type doors struct {
	t      *testing.T
	dir    string
	policy string
}

// smallModule is a module with an empty _start.
var smallModule = []byte("\x00asm\x01\x00\x00\x00" + "\x01\x04\x01\x60\x00\x00" + "\x03\x02\x01\x00" +
	"\x07\x0a\x01\x06_start\x00\x00" + "\x0a\x04\x01\x02\x00\x0b")

func newDoors(t *testing.T) *doors {
	t.Helper()
	if os.Geteuid() != 0 {
		// The admin policy is refused unless root owns it; CI runs as root.
		t.Skip("the admin policy must be owned by root; run as root")
	}
	d := &doors{t: t, dir: filepath.Join(t.TempDir(), "data")}
	if err := datadir.Ensure(d.dir); err != nil {
		t.Fatal(err)
	}
	// The config bounds guest memory at 16 MiB, the host-wide budget.
	if err := datadir.SaveConfig(d.dir, datadir.Config{MaxGuestMemory: 16 << 20}); err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(t.TempDir(), "etc")
	if err := os.Mkdir(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	d.policy = filepath.Join(etc, "policy.json")
	t.Setenv("NMHOST_TEST_ADMIN_POLICY", d.policy)
	return d
}

// setPolicy writes the administrator's policy file.
func (d *doors) setPolicy(p string) {
	if err := os.WriteFile(d.policy, []byte(p), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// open is the core as a front end opens it.
func (d *doors) open(layer string) *app.App {
	d.t.Helper()
	a, err := app.Open(d.dir, app.Options{AdminPolicyPath: d.policy, Door: app.Door{Layer: layer}})
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { a.Close(context.Background()) })
	return a
}

// native sends one request through a host serving frames, as the
// extension does, and returns the reply's code ("" when it succeeded)
// and data.
func (d *doors) native(typ string, params any) (string, json.RawMessage) {
	d.t.Helper()
	a := d.open("host")
	rt, err := a.Runtime(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- host.Serve(context.Background(), inR, outW, host.Options{App: a, Runtime: rt, OriginAllowed: true,
			Caller: host.Caller{Origin: "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"}})
		outW.Close()
	}()
	c := nmclient.New(outR, inW, inW)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := c.Call(ctx, typ, params)
	inW.Close()
	if err != nil {
		d.t.Fatalf("%s: %v", typ, err)
	}
	if err := <-done; err != nil {
		d.t.Fatalf("Serve: %v", err)
	}
	return r.Code, r.Data
}

// viewer runs the viewer over the data directory and returns its URL
// and token.
func (d *doors) viewer() (string, viewer.Token) {
	d.t.Helper()
	a := d.open("gateway")
	rt, err := a.Runtime(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	token, err := viewer.LoadOrCreateToken(d.dir)
	if err != nil {
		d.t.Fatal(err)
	}
	srv, err := viewer.New(viewer.Config{App: a, Token: token, Runtime: rt})
	if err != nil {
		d.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		d.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	d.t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), token
}

// http sends one authorised request to the viewer's API and returns the
// error body's code ("" for a 2xx).
func (d *doors) http(method, path, body string) string {
	d.t.Helper()
	addr, token := d.viewer()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		d.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token.String())
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Code string `json:"code"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 == 2 {
		return ""
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		d.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return e.Code
}

// ws sends one run message over the viewer's websocket and returns the
// run's code ("" when it ran).
func (d *doors) ws(msg map[string]string) string {
	d.t.Helper()
	addr, token := d.viewer()
	h := http.Header{}
	h.Set("Origin", "http://"+addr)
	h.Set("Sec-WebSocket-Protocol", viewer.ViewerProtocol+", "+viewer.TokenProtocolPrefix+token.String())
	c, _, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial((&url.URL{Scheme: "ws", Host: addr, Path: "/ws"}).String(), h)
	if err != nil {
		d.t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteJSON(msg); err != nil {
		d.t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for {
		var m struct {
			Type   string `json:"type"`
			RunID  string `json:"runId"`
			Code   string `json:"code"`
			Result *struct {
				Code string `json:"code"`
			} `json:"result"`
		}
		if err := c.ReadJSON(&m); err != nil {
			d.t.Fatalf("waiting for the run's end: %v", err)
		}
		switch {
		case m.RunID != msg["runId"]:
		case m.Type == "error":
			return m.Code
		case m.Type == "result" && m.Result != nil:
			return m.Result.Code
		}
	}
}

// cli runs nmhost with args and returns its exit status and stderr.
func (d *doors) cli(args ...string) (int, string) {
	d.t.Helper()
	code, _, errOut := runMain(d.t, d.dir, args...)
	return code, errOut
}

// denials is the denial log's rows with code, newest first.
func (d *doors) denials(code mediator.Code) []mediator.Denial {
	d.t.Helper()
	st, err := store.Open(d.dir, store.Options{})
	if err != nil {
		d.t.Fatal(err)
	}
	defer st.Close()
	p, err := st.ListDenials(context.Background(), store.DenialFilter{Code: code})
	if err != nil {
		d.t.Fatal(err)
	}
	return p.Denials
}

// agent is the installed agent's record, or unknown_agent's code.
func (d *doors) agent(id string) (mediator.AgentRecord, mediator.Code) {
	st, err := store.Open(d.dir, store.Options{})
	if err != nil {
		d.t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Agent(context.Background(), id)
	return rec, mediator.CodeOf(err)
}

// level is the session's stored level.
func (d *doors) level(id string) string {
	st, err := store.Open(d.dir, store.Options{})
	if err != nil {
		d.t.Fatal(err)
	}
	defer st.Close()
	set, err := st.SessionSettings(context.Background(), id)
	if err != nil {
		d.t.Fatal(err)
	}
	return set.PermissionLevel
}

// TestEveryDoorGivesTheSameAnswer: each operation whose rules the
// administrator's policy and the data dir's config set, asked through
// every front end that offers it, gets the same outcome, the same reason
// code and one record of it in the denial log, and leaves the same state.
func TestEveryDoorGivesTheSameAnswer(t *testing.T) {
	d := newDoors(t)
	dir := t.TempDir()
	// Every profile names the widest set and asks clipboard.read as an
	// optional permission, so that nothing but the rule under test can
	// refuse what each door is asked.
	profile := func(id string, required []string, maxMemory int64) string {
		b, _ := json.Marshal(map[string]any{"agentId": id, "permissionSet": "trusted",
			"permissions":  map[string]any{"required": required, "optional": []string{"clipboard.read"}},
			"capabilities": map[string]any{"maxMemory": maxMemory}})
		path := filepath.Join(dir, id+".json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	module := filepath.Join(dir, "small.wasm")
	if err := os.WriteFile(module, smallModule, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside.txt")
	if err := os.WriteFile(outside, []byte("canary outside the workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Before the administrator's policy: an agent to grant to, a session
	// already at high, and one at medium.
	if code, errOut := d.cli("run", "--profile", profile("target", []string{"console.log"}, 0), module); code != 0 {
		t.Fatalf("install the target: %d %s", code, errOut)
	}
	for id, level := range map[string]string{"was-high": "high", "medium": "medium"} {
		if code, errOut := d.cli("session", "set", "--level", level, id); code != 0 {
			t.Fatalf("session %s: %d %s", id, code, errOut)
		}
	}
	d.setPolicy(`{"blockedPermissions":["clipboard.read","workspace.write"],"maxSessionLevel":"medium"}`)

	type door struct {
		name string
		ask  func() (refused bool)
	}
	cliRefused := func(args ...string) func() bool {
		return func() bool { code, _ := d.cli(args...); return code != 0 }
	}
	nativeRefused := func(typ string, params any) func() bool {
		return func() bool { code, _ := d.native(typ, params); return code != "" }
	}
	runRefused := func(agent string) func() bool {
		return func() bool {
			code, data := d.native("run-agent", map[string]any{"agentId": agent})
			var res struct {
				Code string `json:"code"`
			}
			json.Unmarshal(data, &res)
			return code != "" || res.Code != ""
		}
	}
	cases := []struct {
		name  string
		code  mediator.Code
		doors []door
		// kept checks the state the refusals left.
		kept func(t *testing.T)
	}{
		{name: "grant a blocked permission", code: mediator.CodeAdminPolicy, doors: []door{
			{"native", nativeRefused("grant", map[string]any{"agentId": "target", "permission": "clipboard.read"})},
			{"cli", cliRefused("grant", "target", "clipboard.read")},
		}, kept: func(t *testing.T) {
			rec, _ := d.agent("target")
			for _, g := range rec.Grants {
				if g.Permission == mediator.PermClipboardRead {
					t.Fatalf("a blocked grant was stored: %+v", rec.Grants)
				}
			}
		}},
		{name: "install an agent that requires a blocked permission", code: mediator.CodeAdminPolicy, doors: []door{
			{"native", nativeRefused("install-agent", map[string]any{"profile": json.RawMessage(`{"agentId":"clipper","permissionSet":"trusted","permissions":{"required":["clipboard.read"]}}`),
				"module": base64.StdEncoding.EncodeToString(smallModule)})},
			{"cli", cliRefused("run", "--profile", profile("clipper", []string{"clipboard.read"}, 0), module)},
		}, kept: func(t *testing.T) {
			if _, code := d.agent("clipper"); code != mediator.CodeUnknownAgent {
				t.Fatalf("the refused agent is installed (%s)", code)
			}
		}},
		{name: "raise a session above the maximum", code: mediator.CodeAdminPolicy, doors: []door{
			{"native", nativeRefused("set-session", map[string]any{"sessionId": "medium", "level": "high"})},
			{"viewer", func() bool {
				return d.http("PUT", "/api/sessions/medium/settings", `{"settings":{"permissionLevel":"high"}}`) != ""
			}},
			{"cli", cliRefused("session", "set", "--level", "high", "medium")},
		}, kept: func(t *testing.T) {
			if got := d.level("medium"); got != mediator.LevelMedium {
				t.Fatalf("the session is %s", got)
			}
		}},
		{name: "the person's shell writes with workspace.write blocked", code: mediator.CodeAdminPolicy, doors: []door{
			{"cli", cliRefused("shell", "--session", "medium", "-c", "touch written.txt")},
		}, kept: func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(d.dir, "workspaces")); err == nil {
				matches, _ := filepath.Glob(filepath.Join(d.dir, "workspaces", "*", "written.txt"))
				if len(matches) > 0 {
					t.Fatalf("the shell wrote %v", matches)
				}
			}
		}},
		{name: "the person's shell in a session above the maximum", code: mediator.CodeAdminPolicy, doors: []door{
			{"cli", cliRefused("shell", "--session", "was-high", "-c", "cat "+outside)},
		}},
		{name: "a run asks more guest memory than the config's budget", code: mediator.CodeMemoryBusy, doors: []door{
			{"native", runRefused("greedy")},
			{"ws", func() bool {
				return d.ws(map[string]string{"type": "run", "runId": "r1", "sessionId": "medium", "agentId": "greedy"}) != ""
			}},
			{"cli", cliRefused("run", "--session", "medium", "--profile", profile("greedy", []string{"console.log"}, 64<<20), module)},
		}},
	}
	// The greedy agent is installed first (its install is allowed), so
	// each door only runs it.
	if code, _ := d.native("install-agent", map[string]any{"profile": json.RawMessage(`{"agentId":"greedy","permissions":{"required":["console.log"]},"capabilities":{"maxMemory":67108864}}`),
		"module": base64.StdEncoding.EncodeToString(smallModule)}); code != "" {
		t.Fatalf("install greedy: %s", code)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, door := range c.doors {
				before := len(d.denials(c.code))
				if !door.ask() {
					t.Errorf("%s: allowed; want refused with %s", door.name, c.code)
					continue
				}
				if got := len(d.denials(c.code)) - before; got != 1 {
					t.Errorf("%s: %d new denials with %s; want exactly one", door.name, got, c.code)
				}
			}
			if c.kept != nil {
				c.kept(t)
			}
		})
	}
}
