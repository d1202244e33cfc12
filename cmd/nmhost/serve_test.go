package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/viewer"
	"github.com/gorilla/websocket"
)

// viewerURL is the first line of `nmhost serve`: the token in the fragment,
// which a browser never sends to the server.
var viewerURL = regexp.MustCompile(`^http://127\.0\.0\.1:([0-9]+)/#token=([A-Za-z0-9_-]{43})$`)

func TestServePrintsItsURLFirstAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	sp := startServe(t, hostEnv(dir), "--port", "0")
	cmd, r, stderr, line, m := sp.cmd, sp.out, sp.stderr, sp.line, sp.url
	file, err := os.ReadFile(filepath.Join(dir, "viewer-token"))
	if err != nil || strings.TrimSpace(string(file)) != m[2] {
		t.Fatalf("the printed token is not the one in the data dir: %q %v", file, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "viewer-token")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %#o", fi.Mode().Perm())
	}
	// What a browser requests for the printed URL: the fragment stays
	// behind, the page comes without the token and sets no cookie.
	page, err := http.Get(line)
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	if page.StatusCode != 200 || page.Request.URL.RequestURI() != "/" || len(page.Header.Values("Set-Cookie")) != 0 {
		t.Fatalf("GET the printed URL: %d for %s, cookies %v", page.StatusCode, page.Request.URL.RequestURI(), page.Header.Values("Set-Cookie"))
	}
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+m[1]+"/api/denials", nil)
	req.Header.Set("Authorization", "Bearer "+m[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/denials with the printed token: %d", resp.StatusCode)
	}
	cmd.Process.Signal(syscall.SIGINT)
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v; stderr:\n%s", err, stderr.String())
	}
	if len(rest) != 0 {
		t.Fatalf("stdout carried more than the URL: %q", rest)
	}
	// The next start keeps the token.
	out := startServe(t, hostEnv(dir), "--port", "0").line
	if !strings.Contains(out, m[2]) {
		t.Fatalf("a restart printed another token: %q", out)
	}
}

// servedProcess is a running `nmhost serve` whose first stdout line has
// been read: the URL it printed, split by viewerURL.
type servedProcess struct {
	cmd    *exec.Cmd
	out    *bufio.Reader // stdout after the first line
	stderr *lockedBuffer
	line   string   // the first line, without its newline
	url    []string // viewerURL's submatches of line
}

// startServe starts serve with env and args and waits for its first line,
// which must be the viewer's URL; the process is killed when the test ends.
func startServe(t testing.TB, env []string, args ...string) *servedProcess {
	t.Helper()
	sp := &servedProcess{cmd: exec.Command(nmhostBin, append([]string{"serve"}, args...)...), stderr: &lockedBuffer{}}
	sp.cmd.Env = env
	sp.cmd.Stderr = sp.stderr
	stdout, err := sp.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.cmd.Process.Kill(); sp.cmd.Wait() })
	sp.out = bufio.NewReader(stdout)
	line, err := sp.out.ReadString('\n')
	sp.line = strings.TrimSuffix(line, "\n")
	if sp.url = viewerURL.FindStringSubmatch(sp.line); err != nil || sp.url == nil {
		t.Fatalf("first line %q (%v) is not http://127.0.0.1:PORT/#token=TOKEN; stderr:\n%s", line, err, sp.stderr.String())
	}
	return sp
}

func TestServeRefusesUnsafeStarts(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		setup func(dir string)
		want  string
	}{
		{"all interfaces", []string{"--bind", "0.0.0.0"}, nil, "--unsafe-bind"},
		{"all interfaces v6", []string{"--bind", "::"}, nil, "--unsafe-bind"},
		{"a LAN address", []string{"--bind", "192.168.1.10"}, nil, "--unsafe-bind"},
		{"a name", []string{"--bind", "localhost"}, nil, "not an IP address"},
		{"bad port", []string{"--port", "70000"}, nil, "not a TCP port"},
		{"positional argument", []string{"now"}, nil, "unexpected argument"},
		{"token readable by others", nil, func(dir string) {
			os.WriteFile(filepath.Join(dir, "viewer-token"), []byte(strings.Repeat("A", 43)), 0o644)
			os.Chmod(filepath.Join(dir, "viewer-token"), 0o644)
		}, "chmod 600"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if c.setup != nil {
				c.setup(dir)
			}
			cmd := exec.Command(nmhostBin, append([]string{"serve"}, c.args...)...)
			cmd.Env = hostEnv(dir)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("serve started")
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("serve kept running; stdout %q", stdout.String())
			}
			if stdout.Len() != 0 || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("stdout %q, stderr %q; want an error about %s", stdout.String(), stderr.String(), c.want)
			}
		})
	}
}

// dialServeWS starts `nmhost serve` on dir and opens its /ws as the page
// does (its Origin, the viewer's protocol and the token); both end with
// the test.
func dialServeWS(t testing.TB, dir string) *websocket.Conn {
	t.Helper()
	m := startServe(t, hostEnv(dir), "--port", "0").url
	h := http.Header{}
	h.Set("Origin", "http://127.0.0.1:"+m[1])
	h.Set("Sec-WebSocket-Protocol", viewer.ViewerProtocol+", "+viewer.TokenProtocolPrefix+m[2])
	c, _, err := (&websocket.Dialer{HandshakeTimeout: 5 * time.Second}).Dial("ws://127.0.0.1:"+m[1]+"/ws", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
