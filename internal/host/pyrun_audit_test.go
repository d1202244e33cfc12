package host

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestPythonRunKeepsItsRecordsLikeAModule: a Python run's calls are kept
// as a module run's are (runs.Deps.Barrier): twelve concurrent callers'
// log calls are one aggregate record, written by the time python-run-end
// answers; a page read keeps its decision and its outcome. Then, hostile
// timing: log calls racing the run's end are counted exactly when they
// were answered, never lost and never counted after the end.
func TestPythonRunKeepsItsRecordsLikeAModule(t *testing.T) {
	h := newHarness(t, true)
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		return map[string]any{"success": true, "data": map[string]any{"text": "words"}}
	})
	agentCall := func(runID, op string, params map[string]any) (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard against a hang
		defer cancel()
		r, err := h.client.Call(ctx, "agent-call", map[string]any{"runId": runID, "agentId": "pyrec", "operation": op, "params": params})
		if err != nil {
			return false, err.Error()
		}
		return r.Success, r.Code
	}
	aggregates := func() (logs []mediator.AuditRecord, perCall int) {
		var page store.AuditPage
		h.mustOK("list-audit", map[string]any{"limit": 1000}, &page)
		for _, r := range page.Records {
			switch {
			case r.Operation.Name != mediator.OpLog:
			case r.Kind == mediator.AuditAggregated:
				logs = append(logs, r)
			default:
				perCall++
			}
		}
		return logs, perCall
	}

	runID, _ := openPythonRun(h, "pyrec", []string{"page.read", "console.log"})
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if ok, code := agentCall(runID, "log", map[string]any{"text": "line"}); !ok {
					failed.Add(1)
					t.Errorf("caller %d: log = %s", g, code)
				}
			}
		}()
	}
	if ok, code := agentCall(runID, "getPageText", nil); !ok {
		t.Fatalf("getPageText = %s", code)
	}
	wg.Wait()
	h.mustOK("python-run-end", map[string]any{"runId": runID, "agentId": "pyrec", "status": "ok"}, &struct{}{})
	logs, perCall := aggregates()
	if len(logs) != 1 || logs[0].Aggregate.Count != 120 || perCall != 0 {
		t.Fatalf("after 120 log calls: %d aggregate records (%+v) and %d per-call records; want one of count 120 and none", len(logs), logs, perCall)
	}

	// The end races twelve callers: every log call answered before it is
	// counted, none after.
	runID, _ = openPythonRun(h, "pyrec", []string{"page.read", "console.log"})
	var answered atomic.Int64
	start := make(chan struct{})
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 50 {
				ok, code := agentCall(runID, "log", map[string]any{"text": "x"})
				if ok {
					answered.Add(1)
					continue
				}
				if code != string(mediator.CodeUnknownRun) {
					t.Errorf("a log call racing the end: %s; want success or unknown_run", code)
				}
				return
			}
		}()
	}
	close(start)
	// Some calls in before the end, so the race has something to lose.
	waitUntil(t, func() bool { return answered.Load() >= 24 })
	h.mustOK("python-run-end", map[string]any{"runId": runID, "agentId": "pyrec", "status": "ok"}, &struct{}{})
	wg.Wait()
	logs, perCall = aggregates()
	if len(logs) != 2 || perCall != 0 || logs[1].Aggregate.Count != answered.Load() {
		t.Fatalf("after the race: aggregates %+v and %d per-call records; want the second to count the %d calls answered", logs, perCall, answered.Load())
	}
}
