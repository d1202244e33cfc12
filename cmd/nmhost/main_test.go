package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/nmclient"
)

// nmhostBin is the nmhost built once for every test here: these tests talk to
// the real executable over real pipes, as a browser does.
var nmhostBin string

const origin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"

// newDataDir makes a data dir whose config admits the test origin.
func newDataDir(t testing.TB) string {
	dir := t.TempDir()
	if err := datadir.SaveConfig(dir, datadir.Config{AllowedOrigins: []string{origin}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hostEnv(dir string) []string {
	return append(os.Environ(), datadir.EnvVar+"="+dir)
}

func start(t testing.TB, dir string, args ...string) *nmclient.Process {
	t.Helper()
	if len(args) == 0 {
		args = []string{origin}
	}
	stderr := &lockedBuffer{}
	p, err := nmclient.Start(nmhostBin, args, hostEnv(dir), stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		p.Cmd.Wait()
		if t.Failed() {
			t.Logf("host %v stderr:\n%s", args, stderr.String())
		}
	})
	return p
}

// lockedBuffer collects a host's stderr, written by exec's copier goroutine
// and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func call(t testing.TB, c *nmclient.Client, typ string, params any) nmclient.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Call(ctx, typ, params)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	return r
}

func profile(agent string, hosts ...string) map[string]any {
	return map[string]any{"profile": map[string]any{
		"agentId":      agent,
		"permissions":  map[string]any{"required": []string{"network.fetch"}},
		"capabilities": map[string]any{"networkAccess": true, "allowedHosts": hosts},
	}}
}

func TestDemoRunsAndEveryStepHolds(t *testing.T) {
	cmd := exec.Command(nmhostBin, "demo")
	cmd.Dir = "../.." // the repository root, as in the README
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nmhost demo: %v\n%s", err, out)
	}
	for _, want := range []string{"canary hits: 0", "every step turned out as expected", "private_address", "origin_not_allowed", "chunked frames", "import_not_granted in", "one prompt for two calls"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// TestStdoutCarriesOnlyFrames reads the host's whole stdout as frames: one
// stray byte of logging would desynchronise the browser.
func TestStdoutCarriesOnlyFrames(t *testing.T) {
	dir := newDataDir(t)
	cmd := exec.Command(nmhostBin, origin, "--parent-window=0")
	cmd.Env = hostEnv(dir)
	var in bytes.Buffer
	for _, m := range []string{`{"id":1,"type":"hello"}`, `not json`, ``, `{"id":2,"type":"nope"}`, `{"id":3,"type":"list-agents"}`} {
		binary.Write(&in, binary.NativeEndian, uint32(len(m)))
		in.WriteString(m)
	}
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host: %v\n%s", err, stderr.String())
	}
	frames := 0
	for len(out) > 0 {
		if len(out) < 4 {
			t.Fatalf("stray bytes after %d frames: %q", frames, out)
		}
		n := binary.NativeEndian.Uint32(out)
		if int(n) > len(out)-4 {
			t.Fatalf("frame %d claims %d bytes, %d remain", frames, n, len(out)-4)
		}
		if !json.Valid(out[4 : 4+n]) {
			t.Fatalf("frame %d is not JSON: %q", frames, out[4:4+n])
		}
		out = out[4+n:]
		frames++
	}
	if frames != 5 {
		t.Fatalf("want 5 replies, got %d", frames)
	}
	if !strings.Contains(stderr.String(), "host started") {
		t.Fatalf("diagnostics did not reach stderr: %q", stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "nmhost.log")); err != nil || !bytes.Contains(b, []byte("host started")) {
		t.Fatalf("log file in the data dir: %v %q", err, b)
	}
}

// TestOneMessageThenEOF is chrome.runtime.sendNativeMessage: one request,
// then the input closes; the host replies and exits 0.
func TestOneMessageThenEOF(t *testing.T) {
	dir := newDataDir(t)
	p := start(t, dir)
	if r := call(t, p.Client, "hello", nil); !r.Success {
		t.Fatalf("hello: %+v", r)
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("host exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("host did not exit after EOF")
	}
}

func TestFirefoxLaunchForm(t *testing.T) {
	dir := t.TempDir()
	if err := datadir.SaveConfig(dir, datadir.Config{AllowedOrigins: []string{"agents@example.org"}}); err != nil {
		t.Fatal(err)
	}
	p := start(t, dir, "/usr/lib/mozilla/native-messaging-hosts/com.agentgate.nmhost.json", "agents@example.org")
	if r := call(t, p.Client, "hello", nil); !r.Success {
		t.Fatalf("hello from Firefox: %+v", r)
	}
	q := start(t, dir, "/x/com.agentgate.nmhost.json", "other@example.org")
	if r := call(t, q.Client, "hello", nil); r.Success || r.Code != "origin_not_allowed" {
		t.Fatalf("foreign add-on: %+v", r)
	}
}

func TestNoConfigAdmitsNoOrigin(t *testing.T) {
	p := start(t, t.TempDir())
	if r := call(t, p.Client, "list-agents", nil); r.Success || r.Code != "origin_not_allowed" {
		t.Fatalf("want origin_not_allowed, got %+v", r)
	}
}

// TestAcknowledgedWritesSurviveKill9 kills the host right after it
// acknowledges writes; a new host must see every one of them.
func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	dir := newDataDir(t)
	p := start(t, dir)
	if r := call(t, p.Client, "install-agent", profile("durable", "example.com")); !r.Success {
		t.Fatalf("install: %+v", r)
	}
	if r := call(t, p.Client, "revoke", map[string]any{"agentId": "durable", "permission": "network.fetch"}); !r.Success {
		t.Fatalf("revoke: %+v", r)
	}
	if r := call(t, p.Client, "network-fetch", map[string]any{"agentId": "durable", "url": "http://example.com/"}); r.Code != "revoked_by_user" {
		t.Fatalf("fetch: %+v", r)
	}
	p.Cmd.Process.Signal(syscall.SIGKILL)
	p.Cmd.Wait()

	q := start(t, dir)
	var info struct {
		Grants []json.RawMessage `json:"grants"`
	}
	if err := call(t, q.Client, "getAgentInfo", map[string]any{"agentId": "durable"}).Decode(&info); err != nil {
		t.Fatalf("agent lost after kill -9: %v", err)
	}
	if len(info.Grants) != 0 {
		t.Fatalf("revocation lost after kill -9: %d grants", len(info.Grants))
	}
	var page struct {
		Denials []struct{ Code string } `json:"denials"`
	}
	if err := call(t, q.Client, "list-denials", map[string]any{"agentId": "durable"}).Decode(&page); err != nil || len(page.Denials) != 1 {
		t.Fatalf("denial lost after kill -9: %v %+v", err, page)
	}
}

// TestSeveralHostsShareTheStore runs hosts at once on one data dir, as
// Chrome does with one process per connection.
func TestSeveralHostsShareTheStore(t *testing.T) {
	dir := newDataDir(t)
	const hosts, each = 4, 40
	var wg sync.WaitGroup
	errs := make(chan error, hosts*each)
	for h := range hosts {
		p := start(t, dir)
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fmt.Sprintf("agent-%d", h)
			if r := call(t, p.Client, "install-agent", profile(agent, "example.com")); !r.Success {
				errs <- fmt.Errorf("%s install: %s", agent, r.Error)
				return
			}
			for i := range each {
				r := call(t, p.Client, "network-fetch", map[string]any{"agentId": agent, "url": fmt.Sprintf("http://denied-%d.test/", i)})
				if r.Code != "host_not_allowed" {
					errs <- fmt.Errorf("%s fetch %d: %+v", agent, i, r)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	q := start(t, dir)
	total := 0
	for h := range hosts {
		var page struct {
			Denials []json.RawMessage `json:"denials"`
		}
		if err := call(t, q.Client, "list-denials", map[string]any{"agentId": fmt.Sprintf("agent-%d", h), "limit": 1000}).Decode(&page); err != nil {
			t.Fatal(err)
		}
		total += len(page.Denials)
	}
	if total != hosts*each {
		t.Fatalf("want %d denials, found %d", hosts*each, total)
	}
}

func TestInstallWritesManifestAndDoctorPasses(t *testing.T) {
	home, data, profileDir := t.TempDir(), t.TempDir(), t.TempDir()
	env := append(os.Environ(), "HOME="+home, datadir.EnvVar+"="+data)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(nmhostBin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	const id = "ponmlkjihgfedcbaponmlkjihgfedcba"
	if out, err := run("install", "--extension-id", id, "--browser", "chromium", "--user-data-dir", profileDir); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(profileDir, "NativeMessagingHosts", "com.agentgate.nmhost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name           string   `json:"name"`
		Path           string   `json:"path"`
		Type           string   `json:"type"`
		AllowedOrigins []string `json:"allowed_origins"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "com.agentgate.nmhost" || m.Type != "stdio" || !filepath.IsAbs(m.Path) || len(m.AllowedOrigins) != 1 || m.AllowedOrigins[0] != "chrome-extension://"+id+"/" {
		t.Fatalf("manifest: %+v", m)
	}
	cfg, err := datadir.LoadConfig(data)
	if err != nil || len(cfg.AllowedOrigins) != 1 || cfg.AllowedOrigins[0] != "chrome-extension://"+id+"/" {
		t.Fatalf("config after install: %+v %v", cfg, err)
	}
	if out, err := run("doctor", "--extension-id", id, "--browser", "chromium", "--user-data-dir", profileDir); err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	if out, err := run("doctor", "--extension-id", strings.Repeat("a", 32), "--browser", "chromium", "--user-data-dir", profileDir); err == nil {
		t.Fatalf("doctor passed for an extension that was never installed:\n%s", out)
	}
	if out, err := run("install", "--extension-id", "../../etc/passwd"); err == nil {
		t.Fatalf("install took a hostile extension id:\n%s", out)
	}
	if out, err := run("uninstall", "--extension-id", id, "--browser", "chromium", "--user-data-dir", profileDir); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(profileDir, "NativeMessagingHosts", "com.agentgate.nmhost.json")); !os.IsNotExist(err) {
		t.Fatalf("manifest still there after uninstall: %v", err)
	}
}

func TestDenialsCommand(t *testing.T) {
	dir := newDataDir(t)
	p := start(t, dir)
	call(t, p.Client, "install-agent", profile("cli-agent", "example.com"))
	call(t, p.Client, "network-fetch", map[string]any{"agentId": "cli-agent", "url": "http://evil.test/\x1b[2J"})
	cmd := exec.Command(nmhostBin, "denials", "--agent", "cli-agent")
	cmd.Env = hostEnv(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("denials: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("\x1b")) {
		t.Fatalf("an agent-supplied escape sequence reached the terminal: %q", out)
	}
	if !bytes.Contains(out, []byte("cli-agent")) {
		t.Fatalf("denials output lacks the record:\n%s", out)
	}
	cmd = exec.Command(nmhostBin, "denials", "--json", "--code", "invalid_url")
	cmd.Env = hostEnv(dir)
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("denials --json: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range lines {
		var d struct {
			AgentID   string `json:"agentId"`
			Code      string `json:"code"`
			Timestamp int64  `json:"timestamp"`
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil || d.Code != "invalid_url" || d.Timestamp == 0 {
			t.Fatalf("bad JSON line %q: %v", l, err)
		}
	}
}

func TestDenialsFollowSeesOtherProcesses(t *testing.T) {
	dir := newDataDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, nmhostBin, "denials", "--follow", "--json")
	cmd.Env = hostEnv(dir)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// --follow never ends by itself: stop it before waiting for it.
	defer func() { cancel(); cmd.Wait() }()
	// Its line on stderr says the log so far is printed: what comes next
	// can only come from following.
	if line, err := bufio.NewReader(stderr).ReadString('\n'); err != nil || !strings.Contains(line, "following") {
		t.Fatalf("denials --follow did not say it follows: %q %v", line, err)
	}
	p := start(t, dir)
	call(t, p.Client, "install-agent", profile("followed", "example.com"))
	call(t, p.Client, "network-fetch", map[string]any{"agentId": "followed", "url": "http://elsewhere.test/"})
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if !strings.Contains(line, `"followed"`) {
			t.Fatalf("follow printed %q", line)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("--follow did not show a denial written by another process")
	}
}

func TestLoopbackFetchThroughTheBinary(t *testing.T) {
	dir := newDataDir(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	p := start(t, dir)
	call(t, p.Client, "install-agent", profile("loop", strings.TrimPrefix(srv.URL, "http://")))
	var data struct{ Body string }
	if err := call(t, p.Client, "network-fetch", map[string]any{"agentId": "loop", "url": srv.URL}).Decode(&data); err != nil || data.Body != "ok" {
		t.Fatalf("fetch: %v %+v", err, data)
	}
}
