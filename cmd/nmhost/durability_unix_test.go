//go:build unix

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestRunResultsSurviveKill9: a run's log calls may run before their
// audit record is written, but a run's reply is sent only once every
// record of the run is. Workers run agents that log logsPerRun times, over
// and over; once enough runs have replied the host is killed with SIGKILL
// mid-run. Every run that got a reply must have its calls in the trail
// (one aggregate record per run, counting them), and the trail must
// verify.
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
	s := killThenOpen(t, p, &wg, dir)
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
			case mediator.AuditAggregated:
				decisions[r.Operation.AgentID] += r.Aggregate.Count
				executed[r.Operation.AgentID] += r.Aggregate.Count - r.Aggregate.Failed
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
	t.Logf("%d runs replied before SIGKILL; their %d log calls are all recorded", total.Load(), total.Load()*logsPerRun)
	if out, code := nmhost(t, dir, "audit", "verify"); code != 0 || !strings.Contains(out, "ok: ") {
		t.Fatalf("audit verify after kill -9: %d %s", code, out)
	}
}

// TestFetchDecisionsSurviveKill9: in the default durability a fetch waits
// only until its decision is written to the operating system, so a crash
// of the process must lose none of them. Workers fetch a loopback canary,
// each request under a path of its own; after a number of requests reached
// the canary the host is killed with SIGKILL while more are in flight, 20
// times over on one data dir. After each kill the store is opened again:
// every request the canary received has its allowed decision in the trail,
// and the trail verifies.
func TestFetchDecisionsSurviveKill9(t *testing.T) {
	const iterations, workers, killAfter = 20, 3, 12
	var mu sync.Mutex
	seen := map[string]bool{} // paths that reached the canary
	hits := make(chan struct{}, 1024)
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = true
		mu.Unlock()
		select {
		case hits <- struct{}{}:
		default:
		}
		w.Write([]byte("ok"))
	}))
	defer canary.Close()
	dir := newDataDir(t)
	ctx := context.Background()
	for it := range iterations {
		p := start(t, dir)
		if it == 0 {
			if r := call(t, p.Client, "install-agent", profile("canary", strings.TrimPrefix(canary.URL, "http://"))); !r.Success {
				t.Fatalf("install: %+v", r)
			}
		}
		for len(hits) > 0 {
			<-hits
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					u := fmt.Sprintf("%s/i%d-w%d-n%d", canary.URL, it, w, n)
					if _, err := p.Call(ctx, "network-fetch", map[string]any{"agentId": "canary", "url": u}); err != nil {
						return // the host is gone
					}
				}
			}()
		}
		for range killAfter {
			<-hits
		}
		// More fetches are in flight on every worker: the kill lands mid-stream.
		s := killThenOpen(t, p, &wg, dir)
		decided := map[string]bool{}
		for after := int64(0); ; {
			page, err := s.ListAudit(ctx, after, store.MaxDenialPage, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Records {
				if r.Kind == mediator.AuditDecision && r.Operation.Name == mediator.OpNetworkFetch && r.Allowed {
					if u, err := url.Parse(r.Operation.URL); err == nil {
						decided[u.Path] = true
					}
				}
			}
			if page.NextAfterSeq == 0 {
				break
			}
			after = page.NextAfterSeq
		}
		rep, verr := s.VerifyAudit(ctx)
		s.Close()
		if verr != nil || !rep.OK {
			t.Fatalf("iteration %d: verify after kill -9: %+v %v", it, rep, verr)
		}
		mu.Lock()
		var lost []string
		for path := range seen {
			if !decided[path] {
				lost = append(lost, path)
			}
		}
		n := len(seen)
		mu.Unlock()
		if len(lost) > 0 {
			t.Fatalf("iteration %d: %d requests reached the canary with no decision on record: %v", it, len(lost), lost)
		}
		t.Logf("iteration %d: %d requests reached the canary so far, every one decided on record", it, n)
	}
}

// killThenOpen kills the host with SIGKILL, waits for its callers (wg)
// and the process, and opens its store as the next process would.
func killThenOpen(t *testing.T, p *nmclient.Process, wg *sync.WaitGroup, dir string) *store.Store {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	p.Cmd.Wait()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
