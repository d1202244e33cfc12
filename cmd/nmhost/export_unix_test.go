//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestExportFollowStopsOnSignal: the real binary's `export --follow`
// ships what is there to a loopback collector, says it is following, and
// on SIGTERM or SIGINT exits 0 with its summary: the acknowledged records
// and where the cursor is.
func TestExportFollowStopsOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := newDataDir(t)
			st, err := store.Open(dir, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.AppendAudit(context.Background(), mediator.AuditEntry{Kind: mediator.AuditDecision, Allowed: true,
				Operation: mediator.Operation{AgentID: "a", Name: "log"}}); err != nil {
				t.Fatal(err)
			}
			st.Close()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
			defer srv.Close()

			cmd := exec.Command(nmhostBin, "export", "--otlp-endpoint", srv.URL, "--follow")
			cmd.Env = hostEnv(dir)
			var stdout strings.Builder
			cmd.Stdout = &stdout
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			following := make(chan struct{})
			read := make(chan struct{}) // stderr read to its end: Wait may close it
			go func() {
				defer close(read)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					if strings.Contains(sc.Text(), "following new records") {
						close(following)
						break
					}
				}
				io.Copy(io.Discard, stderr)
			}()
			select {
			case <-following:
			case <-time.After(30 * time.Second):
				t.Fatal("export --follow never said it was following")
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { <-read; done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("export --follow ended with %v after %s", err, sig)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("export --follow still runs after %s", sig)
			}
			if want := "exported 1 audit records, 0 denials, 1 checkpoints in 1 requests to " + srv.URL + "/v1/logs; acknowledged through record 1, denial 0\n"; stdout.String() != want {
				t.Fatalf("stdout %q; want %q", stdout.String(), want)
			}
		})
	}
}
