package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

// TestRunClockStopsWhileAPersonDecides: a module's executionTimeout is
// the agent's time. A person who takes longer than the whole
// executionTimeout to answer its prompt still has their answer applied,
// the prompt offered the full PromptTimeout, and the run goes on; an
// agent that spends its own time past the limit is still stopped.
func TestRunClockStopsWhileAPersonDecides(t *testing.T) {
	module, err := testwasm.Probe()
	if err != nil {
		t.Fatal(err)
	}
	const budget = 1000 // ms
	for _, c := range []struct {
		name, input, status, output string
	}{
		{"a slow answer is the person's time", "clipw hi\nprint after the answer", "ok", "after the answer"},
		{"the agent's own time still ends it", "clipw hi\nspin", string(mediator.CodeTimeout), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, true)
			var mu sync.Mutex
			var shown []map[string]any
			h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
				if typ == "prompt" {
					var m map[string]any
					json.Unmarshal(msg, &m)
					mu.Lock()
					shown = append(shown, m)
					mu.Unlock()
					// A person reads the prompt for longer than the
					// agent's whole executionTimeout, then allows.
					<-time.After(2 * budget * time.Millisecond)
					return map[string]any{"answer": "allow-once"}
				}
				if typ == "prompt-cancel" {
					return nil
				}
				return map[string]any{"success": true, "data": map[string]any{}}
			})
			h.mustOK("install-agent", map[string]any{
				"profile": map[string]any{
					"agentId":      "slowpoke",
					"permissions":  map[string]any{"required": []string{"console.log", "page.read", "page.write", "clipboard.read", "clipboard.write", "network.fetch"}},
					"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{"127.0.0.1:1"}, "domAccess": "full", "executionTimeout": budget},
				},
				"module": base64.StdEncoding.EncodeToString(module),
			}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := h.client.Call(ctx, "run-agent", map[string]any{"agentId": "slowpoke", "context": map[string]any{"tabId": 3}, "input": c.input})
			if err != nil {
				t.Fatal(err)
			}
			var res wasmhost.Result
			if err := r.Decode(&res); err != nil {
				t.Fatal(err)
			}
			if res.Status != c.status || !strings.Contains(res.Output, c.output) {
				t.Fatalf("status %q (%s), output %q; want %q with %q", res.Status, res.Error, res.Output, c.status, c.output)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(shown) != 1 || shown[0]["timeoutMs"] != float64(mediator.DefaultPromptTimeout.Milliseconds()) {
				t.Fatalf("prompts shown: %v", shown)
			}
		})
	}
}

// TestPythonRunDeadlineStopsWhileAPersonDecides: a Python run's deadline
// (executionTimeout plus its slack) stands still while one of its calls
// waits for a person: an answer given after the deadline would have
// passed still counts, and the call tells the extension, with "waiting"
// and "resumed" events, to stop its own timers meanwhile.
func TestPythonRunDeadlineStopsWhileAPersonDecides(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer web.Close()
	h := newHarness(t, true)
	const budget = 500 * time.Millisecond
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		if typ != "prompt" {
			return nil
		}
		// The person reads past the run's whole deadline, then allows.
		<-time.After(budget + pythonRunSlack + time.Second)
		return map[string]any{"answer": "allow-once"}
	})
	prof := pyProfile("py-slowpoke", []string{"network.fetch", "console.log"}, hostPort(web.URL))
	prof["capabilities"].(map[string]any)["executionTimeout"] = budget.Milliseconds()
	h.mustOK("install-agent", map[string]any{"profile": prof, "module": pySource}, nil)
	var run struct {
		RunID string `json:"runId"`
	}
	h.mustOK("python-run", map[string]any{"agentId": "py-slowpoke", "origin": "http://page.test"}, &run)
	var events []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := h.client.CallWithEvents(ctx, "agent-call", map[string]any{"runId": run.RunID, "agentId": "py-slowpoke", "operation": "fetch",
		"params": map[string]any{"url": web.URL + "/post", "options": map[string]any{"method": "POST", "body": "x"}}},
		func(e nmclient.Event) { events = append(events, e.Event) })
	if err != nil {
		t.Fatal(err)
	}
	if !r.Success || hits.Load() != 1 {
		t.Fatalf("the call answered after the deadline would have passed: %+v; server hits %d", r, hits.Load())
	}
	if got := strings.Join(events, ","); got != "waiting,resumed" {
		t.Fatalf("events on the call: %q; want waiting,resumed", got)
	}
	// The deadline moved on by the wait: the run still takes calls.
	h.mustOK("agent-call", map[string]any{"runId": run.RunID, "agentId": "py-slowpoke", "operation": "log", "params": map[string]any{"text": "x"}}, nil)
}
