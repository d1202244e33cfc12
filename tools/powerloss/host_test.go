//go:build linux

package powerloss

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// nmhostBin is the real host, built once from ../../cmd/nmhost.
var nmhostBin string

const origin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nmhost-powerloss-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	nmhostBin = filepath.Join(dir, "nmhost")
	build := exec.Command("go", "build", "-o", nmhostBin, "./cmd/nmhost")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building nmhost: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// iterations is how many power losses each durability gets: a few in CI,
// NMHOST_POWERLOSS_ITERATIONS=N for more.
func iterations(t *testing.T, def int) int {
	if v := os.Getenv("NMHOST_POWERLOSS_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("NMHOST_POWERLOSS_ITERATIONS=%q: want a positive number", v)
		}
		return n
	}
	return def
}

// canary is a loopback server that remembers which paths reached it, and
// when.
type canary struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]time.Time
	hits chan struct{}
}

func newCanary(t *testing.T) *canary {
	c := &canary{seen: map[string]time.Time{}, hits: make(chan struct{}, 4096)}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.seen[r.URL.Path] = time.Now()
		c.mu.Unlock()
		select {
		case c.hits <- struct{}{}:
		default:
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *canary) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for range n {
		select {
		case <-c.hits:
		case <-deadline:
			t.Fatalf("fewer than %d requests reached the canary in 60 s", n)
		}
	}
}

// host is a running nmhost with its data dir on the layer.
type host struct {
	*nmclient.Process
	stderr *lockedBuffer
	wg     sync.WaitGroup
}

func startHost(t *testing.T, dir string) *host {
	t.Helper()
	h := &host{stderr: &lockedBuffer{}}
	p, err := nmclient.Start(nmhostBin, []string{origin}, append(os.Environ(), datadir.EnvVar+"="+dir), h.stderr)
	if err != nil {
		t.Fatal(err)
	}
	h.Process = p
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		p.Cmd.Wait()
		if t.Failed() {
			t.Logf("host stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

func (h *host) call(t *testing.T, typ string, params any) nmclient.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := h.Call(ctx, typ, params)
	if err != nil {
		t.Fatalf("%s: %v", typ, err)
	}
	return r
}

// stream starts workers fetching the canary, each request under a path
// of its own, until the host is gone.
func (h *host) stream(c *canary, it, workers int) {
	for w := range workers {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for n := 0; ; n++ {
				u := fmt.Sprintf("%s/i%d-w%d-n%d", c.URL, it, w, n)
				if _, err := h.Call(context.Background(), "network-fetch", map[string]any{"agentId": "canary", "url": u}); err != nil {
					return
				}
			}
		}()
	}
}

// checkpoint asks the running host for a signed checkpoint, as the
// extension does, and keeps it in a file outside the data dir.
func (h *host) checkpoint(t *testing.T) (string, int64) {
	t.Helper()
	r := h.call(t, "audit-checkpoint", map[string]any{})
	var cp struct {
		Checkpoint string
		Size       int64
	}
	if !r.Success || r.Decode(&cp) != nil || cp.Checkpoint == "" {
		t.Fatalf("audit-checkpoint: %+v", r)
	}
	f := filepath.Join(t.TempDir(), "checkpoint")
	if err := os.WriteFile(f, []byte(cp.Checkpoint), 0o600); err != nil {
		t.Fatal(err)
	}
	return f, cp.Size
}

// crash kills the host with SIGKILL, waits for its callers, then cuts the
// power. It returns when the kill was sent.
func (h *host) crash(t *testing.T, l *Layer) time.Time {
	t.Helper()
	at := time.Now()
	if err := h.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.wg.Wait()
	h.Cmd.Wait()
	if err := l.PowerLoss(); err != nil {
		t.Fatal(err)
	}
	return at
}

// decided opens the store on the disk, as the next boot would, and returns
// the paths of the canary URLs with an allowing decision on record and the
// number of records.
func decided(t *testing.T, dir string) (map[string]bool, int64) {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("opening the store after the power loss: %v", err)
	}
	defer s.Close()
	paths := map[string]bool{}
	var records int64
	for after := int64(0); ; {
		page, err := s.ListAudit(ctx, after, store.MaxDenialPage, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			records++
			if r.Kind == mediator.AuditDecision && r.Operation.Name == mediator.OpNetworkFetch && r.Allowed {
				if u, err := url.Parse(r.Operation.URL); err == nil {
					paths[u.Path] = true
				}
			}
		}
		if page.NextAfterSeq == 0 {
			break
		}
		after = page.NextAfterSeq
	}
	return paths, records
}

// nmhost runs a command of the real binary on dir.
func nmhost(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(nmhostBin, args...)
	cmd.Env = append(os.Environ(), datadir.EnvVar+"="+dir)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func newDisk(t *testing.T, durability string) string {
	t.Helper()
	disk := filepath.Join(t.TempDir(), "data")
	c := datadir.Config{AllowedOrigins: []string{origin}, Audit: &datadir.AuditSettings{Durability: durability}}
	if err := datadir.SaveConfig(disk, c); err != nil {
		t.Fatal(err)
	}
	return disk
}

func mountFor(t *testing.T, disk string) *Layer {
	t.Helper()
	l, err := Mount(disk, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatalf("%v (this test needs root and /dev/fuse; CI runs as root)", err)
	}
	t.Cleanup(func() { l.PowerLoss() })
	return l
}

func profile(agent, host string) map[string]any {
	return map[string]any{"profile": map[string]any{
		"agentId":      agent,
		"permissions":  map[string]any{"required": []string{"network.fetch"}},
		"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{host}},
	}}
}

// lockedBuffer collects a host's stderr, written by exec's copier
// goroutine and read by the test.
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

// verifyAgainst runs `nmhost audit verify --checkpoint` on the disk. A
// checkpoint the log still covers must verify; one that signed records the
// power took must be reported broken, never intact.
func verifyAgainst(t *testing.T, disk, cp string, cpSize, records int64) (lostSigned bool) {
	t.Helper()
	out, code := nmhost(t, disk, "audit", "verify", "--checkpoint", cp)
	if records >= cpSize {
		if code != 0 || !strings.Contains(out, "extends the checkpoint of "+strconv.FormatInt(cpSize, 10)) {
			t.Fatalf("verify --checkpoint of %d records, %d on disk: exit %d\n%s", cpSize, records, code, out)
		}
		return false
	}
	if code == 0 || !strings.HasPrefix(out, "BROKEN") || strings.Contains(out, "log intact") {
		t.Fatalf("the checkpoint signed %d records and %d survived, yet verify --checkpoint says (exit %d):\n%s", cpSize, records, code, out)
	}
	return true
}
