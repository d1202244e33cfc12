//go:build unix

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

// crashIterations is how many times each crash test kills the host;
// NMHOST_CRASH_ITERATIONS raises it (a soak), the default keeps CI short.
func crashIterations(t *testing.T, def int) int {
	if v := os.Getenv("NMHOST_CRASH_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("NMHOST_CRASH_ITERATIONS=%q is not a positive count", v)
		}
		return n
	}
	return def
}

// TestShellWritesSurviveKill9: an agent's session shell (a Python
// agent's agent-call "shell", three callers at once) writes files in a
// stream, and the host is killed with SIGKILL mid-stream, over and over,
// in each durability. Every file in the workspace afterwards must have an
// allowing decision on record that names it, and the trail must verify:
// no effect without its record.
func TestShellWritesSurviveKill9(t *testing.T) {
	const workers, killAfter = 3, 24
	iterations := crashIterations(t, 4)
	for _, durability := range []string{mediator.DurabilityWritten, mediator.DurabilityStrict} {
		t.Run(durability, func(t *testing.T) {
			dir := t.TempDir()
			if err := datadir.SaveConfig(dir, datadir.Config{AllowedOrigins: []string{origin}, Audit: &datadir.AuditSettings{Durability: durability}}); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var files int
			for it := range iterations {
				p := start(t, dir)
				if it == 0 {
					prof := map[string]any{"agentId": "writer", "runtime": "python", "permissionSet": "filesystem",
						"permissions":  map[string]any{"required": []string{"shell", "workspace.read", "workspace.write"}},
						"capabilities": map[string]any{"executionTimeout": 60000}}
					if r := call(t, p.Client, "install-agent", map[string]any{"profile": prof, "module": "await restricted_api.shell('ls')\n"}); !r.Success {
						t.Fatalf("install: %+v", r)
					}
					if r := call(t, p.Client, "set-session", map[string]any{"sessionId": "crash", "level": "low"}); !r.Success {
						t.Fatalf("session: %+v", r)
					}
				}
				r := call(t, p.Client, "python-run", map[string]any{"agentId": "writer", "sessionId": "crash"})
				var run struct {
					RunID string `json:"runId"`
				}
				if err := r.Decode(&run); err != nil {
					t.Fatalf("python-run: %v %+v", err, r)
				}
				files = streamKillAndCheck(t, p, dir, workers, killAfter, shellPathsOnRecord, func(w, n int) (nmclient.Reply, error) {
					return p.Call(ctx, "agent-call", map[string]any{"runId": run.RunID, "agentId": "writer", "operation": "shell",
						"params": map[string]any{"command": fmt.Sprintf("echo x > i%d-w%d-n%d.txt", it, w, n)}})
				})
			}
			t.Logf("%d kills; %d files in the workspace, every one decided on record", iterations, files)
		})
	}
}

// shellPathsOnRecord is every path an allowing shell decision in the
// trail names.
func shellPathsOnRecord(t *testing.T, s *store.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for after := int64(0); ; {
		page, err := s.ListAudit(context.Background(), after, store.MaxDenialPage, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if r.Kind == mediator.AuditDecision && r.Allowed && strings.HasPrefix(r.Operation.Name, mediator.OpShellPrefix) && r.Operation.Shell != nil {
				for _, p := range r.Operation.Shell.Paths {
					out[p] = true
				}
			}
		}
		if page.NextAfterSeq == 0 {
			return out
		}
		after = page.NextAfterSeq
	}
}

// fsprobe is wasmhost's workspace test agent, built for wasip1: each
// input line "write NAME TEXT" writes a file through WASI.
var fsprobe = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("../../wasmhost/testdata/fsprobe")
})

// TestWASIWritesSurviveKill9: a WebAssembly agent writes files through
// WASI in its session's workspace, two runs at once, over and over, and
// the host is killed with SIGKILL mid-stream; the durability alternates
// between kills (one data dir, so the module is compiled once). Every
// file in the workspace afterwards must have an allowing workspace.write
// decision on record that names it, and the trail must verify.
func TestWASIWritesSurviveKill9(t *testing.T) {
	const workers, perRun, killAfter = 2, 20, 3
	module, err := fsprobe()
	if err != nil {
		t.Fatal(err)
	}
	iterations := crashIterations(t, 4)
	dir := t.TempDir()
	ctx := context.Background()
	var files int
	for it := range iterations {
		durability := []string{mediator.DurabilityWritten, mediator.DurabilityStrict}[it%2]
		if err := datadir.SaveConfig(dir, datadir.Config{AllowedOrigins: []string{origin}, Audit: &datadir.AuditSettings{Durability: durability}}); err != nil {
			t.Fatal(err)
		}
		p := start(t, dir)
		if it == 0 {
			prof := map[string]any{"agentId": "wasi-writer", "permissionSet": "filesystem",
				"permissions":  map[string]any{"required": []string{"workspace.read", "workspace.write"}},
				"capabilities": map[string]any{"executionTimeout": 60000}}
			if r := call(t, p.Client, "install-agent", map[string]any{"profile": prof, "module": base64.StdEncoding.EncodeToString(module)}); !r.Success {
				t.Fatalf("install: %+v", r)
			}
			if r := call(t, p.Client, "set-session", map[string]any{"sessionId": "crash", "level": "low"}); !r.Success {
				t.Fatalf("session: %+v", r)
			}
		}
		files = streamKillAndCheck(t, p, dir, workers, killAfter, writePathsOnRecord, func(w, n int) (nmclient.Reply, error) {
			var in strings.Builder
			for k := range perRun {
				fmt.Fprintf(&in, "write /workspace/i%d-w%d-r%d-f%d.txt x\n", it, w, n, k)
			}
			return p.Call(ctx, "run-agent", map[string]any{"agentId": "wasi-writer", "sessionId": "crash", "input": in.String()})
		})
	}
	t.Logf("%d kills; %d files in the workspace, every one decided on record", iterations, files)
}

// writePathsOnRecord is every path an allowing workspace.write decision
// in the trail names.
func writePathsOnRecord(t *testing.T, s *store.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for after := int64(0); ; {
		page, err := s.ListAudit(context.Background(), after, store.MaxDenialPage, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if r.Kind == mediator.AuditDecision && r.Allowed && r.Operation.Name == mediator.OpWorkspaceWrite {
				out[strings.TrimPrefix(r.Operation.Path, "/")] = true
			}
		}
		if page.NextAfterSeq == 0 {
			return out
		}
		after = page.NextAfterSeq
	}
}

// streamKillAndCheck runs workers that each call next(worker, n) for n =
// 0, 1, ... until the host is gone; once killAfter calls have succeeded it
// kills the host with SIGKILL (more calls are in flight: the kill lands
// mid-stream), reopens the store, and fails the test unless the trail
// verifies and every file in the "crash" session's workspace is named by
// an allowing decision (onRecord reads them). It returns the files.
func streamKillAndCheck(t *testing.T, p *nmclient.Process, dir string, workers, killAfter int64,
	onRecord func(*testing.T, *store.Store) map[string]bool, next func(w, n int) (nmclient.Reply, error)) int {
	t.Helper()
	var done atomic.Int64
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range int(workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				r, err := next(w, n)
				if err != nil {
					return // the host is gone
				}
				if !r.Success {
					t.Errorf("worker %d call %d: %s %s", w, n, r.Code, r.Error)
					once.Do(func() { close(enough) })
					return
				}
				if done.Add(1) == killAfter {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	<-enough
	s := killThenOpen(t, p, &wg, dir)
	decided := onRecord(t, s)
	rep, verr := s.VerifyAudit(context.Background())
	wsDir := s.SessionWorkspaceDir("crash")
	s.Close()
	if verr != nil || !rep.OK {
		t.Fatalf("verify after kill -9: %+v %v", rep, verr)
	}
	entries, err := os.ReadDir(wsDir)
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for _, e := range entries {
		if !decided[e.Name()] {
			lost = append(lost, e.Name())
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d files in the workspace have no decision on record: %v", len(lost), len(entries), lost)
	}
	return len(entries)
}
