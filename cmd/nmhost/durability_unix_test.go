//go:build unix

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestRunResultsSurviveKill9: a run's log calls may run before their
// audit records are durable, but a run's reply is sent only once every
// record of the run is. Workers run agents that log logsPerRun times, over
// and over; once enough runs have replied the host is killed with SIGKILL
// mid-run. Every run that got a reply must have all its decision and
// executed records in the trail, and the trail must verify.
func TestRunResultsSurviveKill9(t *testing.T) {
	const workers, logsPerRun, killAfter = 4, 20, 40
	calls := make([]wasmCall, logsPerRun)
	for i := range calls {
		calls[i] = wasmCall{"log", []string{"line " + strconv.Itoa(i)}}
	}
	module := base64.StdEncoding.EncodeToString(assemble(calls))
	dir := newDataDir(t)
	p := start(t, dir)
	for w := range workers {
		r := call(t, p.Client, "install-agent", map[string]any{"module": module, "profile": map[string]any{
			"agentId": "dur-" + strconv.Itoa(w), "permissions": map[string]any{"required": []string{"console.log"}}}})
		if !r.Success {
			t.Fatalf("install: %+v", r)
		}
	}

	var total atomic.Int64
	replied := make([]int64, workers)
	enough := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := p.Call(context.Background(), "run-agent", map[string]any{"agentId": "dur-" + strconv.Itoa(w)})
				if err != nil {
					return // the host is gone
				}
				var res struct{ Status string }
				if !r.Success || r.Decode(&res) != nil || res.Status != "ok" {
					t.Errorf("run of dur-%d: %+v", w, r)
					return
				}
				replied[w]++
				if total.Add(1) >= killAfter {
					once.Do(func() { close(enough) })
				}
			}
		}()
	}
	<-enough
	// Runs are still in flight on every worker: the kill lands mid-run.
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	p.Cmd.Wait()

	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	decisions, executed := map[string]int64{}, map[string]int64{}
	for after := int64(0); ; {
		page, err := s.ListAudit(ctx, after, store.MaxDenialPage, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if r.Operation.Name != mediator.OpLog {
				continue
			}
			switch r.Kind {
			case mediator.AuditDecision:
				decisions[r.Operation.AgentID]++
			case mediator.AuditExecuted:
				executed[r.Operation.AgentID]++
			}
		}
		if page.NextAfterSeq == 0 {
			break
		}
		after = page.NextAfterSeq
	}
	// A worker's runs are sequential and the host commits in order, so a
	// replied run with a record missing leaves its agent short of
	// logsPerRun records per replied run.
	var lost []string
	for w := range workers {
		id := "dur-" + strconv.Itoa(w)
		if want := replied[w] * logsPerRun; decisions[id] < want || executed[id] < want {
			lost = append(lost, fmt.Sprintf("%s: %d runs replied, %d decision and %d executed records; want at least %d each", id, replied[w], decisions[id], executed[id], want))
		}
	}
	if len(lost) > 0 {
		t.Fatalf("records of replied runs lost after kill -9:\n%s", strings.Join(lost, "\n"))
	}
	t.Logf("%d runs replied before SIGKILL; their %d log decisions are all on disk", total.Load(), total.Load()*logsPerRun)
	if out, code := nmhost(t, dir, "audit", "verify"); code != 0 || !strings.Contains(out, "ok: ") {
		t.Fatalf("audit verify after kill -9: %d %s", code, out)
	}
}
