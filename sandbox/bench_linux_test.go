package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/netproxy"
)

// benchRun runs argv b.N times in the sandbox over ws, or directly in ws.
func benchRun(b *testing.B, cfg Config, argv ...string) {
	b.Run("sandbox", func(b *testing.B) {
		for b.Loop() {
			res, err := Run(context.Background(), cfg, argv)
			if err != nil || res.Exit != 0 {
				b.Fatalf("%v %+v %q", err, res, res.Output)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = cfg.Workspace
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v %q", err, out)
			}
		}
	})
}

// BenchmarkTrue is what the sandbox itself costs: `true` in it and
// without it.
func BenchmarkTrue(b *testing.B) {
	benchRun(b, Config{Workspace: b.TempDir()}, "true")
}

// BenchmarkGitStatus10k is `git status` over a repository of 10,000
// committed files, in the sandbox and without it. As root a run first
// hands the workspace to nobody (chownTree), which is in the figure.
func BenchmarkGitStatus10k(b *testing.B) {
	ws := b.TempDir()
	for i := range 10_000 {
		d := filepath.Join(ws, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.Mkdir(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	git := []string{"git", "-c", "safe.directory=*", "-c", "user.email=bench@example.com", "-c", "user.name=bench"}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "10,000 files"}} {
		cmd := exec.Command(git[0], append(git[1:], args...)...)
		cmd.Dir = ws
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	benchRun(b, Config{Workspace: ws}, append(git, "status", "--short")...)
}

// BenchmarkCurl1MiB is a 1 MiB download from a loopback server by curl,
// in the sandbox through the run's proxy (bridge, ACL, checked dial) and
// directly.
func BenchmarkCurl1MiB(b *testing.B) {
	body := make([]byte, 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	acl, err := netproxy.NewACL([]string{strings.TrimPrefix(srv.URL, "http://")})
	if err != nil {
		b.Fatal(err)
	}
	rec := &decisions{}
	p, err := ServeProxy(ACLConnect(netproxy.New(netproxy.Config{}), acl, rec.decide))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	benchRun(b, Config{Workspace: b.TempDir(), Proxy: p.Socket}, "curl", "-sS", "-o", "/dev/null", srv.URL+"/1MiB")
}
