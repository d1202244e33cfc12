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
)

// viewerURL is the first line of `nmhost serve`: the token in the fragment,
// which a browser never sends to the server.
var viewerURL = regexp.MustCompile(`^http://127\.0\.0\.1:([0-9]+)/#token=([A-Za-z0-9_-]{43})$`)

func TestServePrintsItsURLFirstAndStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(nmhostBin, "serve", "--port", "0")
	cmd.Env = hostEnv(dir)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v; stderr:\n%s", err, stderr.String())
	}
	m := viewerURL.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
	if m == nil {
		t.Fatalf("first line %q is not http://127.0.0.1:PORT/#token=TOKEN", line)
	}
	file, err := os.ReadFile(filepath.Join(dir, "viewer-token"))
	if err != nil || strings.TrimSpace(string(file)) != m[2] {
		t.Fatalf("the printed token is not the one in the data dir: %q %v", file, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "viewer-token")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %#o", fi.Mode().Perm())
	}
	// What a browser requests for the printed URL: the fragment stays
	// behind, the page comes without the token and sets no cookie.
	page, err := http.Get(strings.TrimSuffix(line, "\n"))
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
	out := serveOnce(t, dir, "--port", "0")
	if !strings.Contains(out, m[2]) {
		t.Fatalf("a restart printed another token: %q", out)
	}
}

// TestServeOpenKeepsTheTokenOutOfArgv: --open hands the desktop's opener
// (here a stand-in earlier on PATH that records its arguments) the path of
// an owner-only file that forwards to the URL; the token is in the file,
// never in a process's arguments, which every user can read. The file goes
// when serve stops.
func TestServeOpenKeepsTheTokenOutOfArgv(t *testing.T) {
	dir := t.TempDir()
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "opener-argv")
	// Written whole, then renamed, so the test never reads half of it.
	script := "#!/bin/sh\nfor a in \"$0\" \"$@\"; do printf '%s\\n' \"$a\"; done > \"$OPENER_RECORD.tmp\" && mv \"$OPENER_RECORD.tmp\" \"$OPENER_RECORD\"\n"
	for _, name := range []string{"xdg-open", "open"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(nmhostBin, "serve", "--port", "0", "--open")
	cmd.Env = append(hostEnv(dir), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "OPENER_RECORD="+record)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := viewerURL.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
	if err != nil || m == nil {
		t.Fatalf("first line %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	link, token := m[0], m[2]

	var argv []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(record); err == nil {
			argv = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the opener never ran; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(argv) != 2 || filepath.Base(argv[0]) != "xdg-open" && filepath.Base(argv[0]) != "open" {
		t.Fatalf("the opener ran as %q; want the opener and one path", argv)
	}
	for _, a := range argv {
		if strings.Contains(a, token) {
			t.Fatalf("the token is in the opener's arguments: %q", argv)
		}
	}
	launcher := argv[1]
	if filepath.Dir(launcher) != dir {
		t.Errorf("the launcher %s is not in the data dir %s", launcher, dir)
	}
	fi, err := os.Lstat(launcher)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("launcher mode %v; want a regular file, 0600", fi.Mode())
	}
	page, err := os.ReadFile(launcher)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `content="0;url=`+link+`"`) || !strings.Contains(string(page), `location.replace("`+link+`")`) {
		t.Errorf("the launcher does not forward to %s:\n%s", link, page)
	}

	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v; stderr:\n%s", err, stderr.String())
	}
	if _, err := os.Lstat(launcher); !os.IsNotExist(err) {
		t.Errorf("the launcher outlived serve: %v", err)
	}
}

// serveOnce starts serve, returns its first stdout line and stops it.
func serveOnce(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(nmhostBin, append([]string{"serve"}, args...)...)
	cmd.Env = hostEnv(dir)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	return line
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
