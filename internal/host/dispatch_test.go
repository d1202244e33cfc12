package host

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/nmclient"
)

func TestReservedShort(t *testing.T) {
	for _, c := range []struct{ max, want int }{{1, 0}, {2, 1}, {8, 1}, {16, 2}, {64, 8}} {
		t.Run("", func(t *testing.T) {
			if got := reservedShort(c.max); got != c.want {
				t.Fatalf("reservedShort(%d) = %d, want %d", c.max, got, c.want)
			}
		})
	}
}

// maxInFlight sets Options.MaxInFlight.
func maxInFlight(n int) func(*Options) { return func(o *Options) { o.MaxInFlight = n } }

// TestResultsNeedNoPlace fills the only place with a fetch that waits for
// the user's answer: the answer (a prompt-result) must still get through,
// or the fetch would wait for it until the prompt timed out.
func TestResultsNeedNoPlace(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("posted")) }))
	defer web.Close()
	h := newHarness(t, true, maxInFlight(1))
	script := &promptScript{answers: []string{"allow-once"}}
	h.client.SetHostHandler(script.handle)
	h.install("poster", []string{"network.fetch"}, true, hostPort(web.URL))
	r := h.call("network-fetch", map[string]any{"agentId": "poster", "url": web.URL,
		"options": map[string]any{"method": "POST", "body": "x"}})
	if !r.Success || script.count() != 1 {
		t.Fatalf("fetch: success=%v code=%s error=%s after %d prompts", r.Success, r.Code, r.Error, script.count())
	}
}

// TestLongRequestsLeaveRoomForQuickOnes holds more fetches than there are
// places (the server does not answer until told), then asks hello: it must
// be answered while they wait, from the places kept for short requests,
// and not wait behind them to be read.
func TestLongRequestsLeaveRoomForQuickOnes(t *testing.T) {
	for _, places := range []int{2, 8} {
		t.Run("", func(t *testing.T) {
			entered := make(chan struct{}, 3*places)
			release := make(chan struct{})
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }
			web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				entered <- struct{}{}
				<-release
				w.Write([]byte("late"))
			}))
			defer web.Close()
			defer unblock() // before web.Close: no handler left waiting
			h := newHarness(t, true, maxInFlight(places))
			// A fetch's time limit is the agent's executionTimeout: long
			// enough here for the fetches queued behind the held ones.
			h.mustOK("install-agent", map[string]any{"profile": map[string]any{
				"agentId":      "slow",
				"permissions":  map[string]any{"required": []string{"network.fetch"}},
				"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{hostPort(web.URL)}, "executionTimeout": 60000},
			}}, new(map[string]any))
			// Every long worker busy and the queue full: more fetches than
			// places, yet reading goes on.
			fetches := places - reservedShort(places) + places
			results := make(chan nmclient.Reply, fetches)
			var wg sync.WaitGroup
			for range fetches {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					r, _ := h.client.Call(ctx, "network-fetch", map[string]any{"agentId": "slow", "url": web.URL})
					results <- r
				}()
			}
			// Every long worker is busy before hello is sent.
			for range places - reservedShort(places) {
				<-entered
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r, err := h.client.Call(ctx, "hello", nil)
			unblock()
			if err != nil || !r.Success {
				t.Fatalf("hello while %d fetches wait: %v %+v", fetches, err, r)
			}
			wg.Wait()
			close(results)
			for r := range results {
				if !r.Success {
					t.Fatalf("a fetch failed: code=%s error=%s", r.Code, r.Error)
				}
			}
		})
	}
}

// TestQuickRequestsOnAnIdleHost: requests the reading loop answers itself
// when nothing else is in flight get the same answers, codes included,
// as on a worker: the hostile ones too.
func TestQuickRequestsOnAnIdleHost(t *testing.T) {
	h := newHarness(t, true)
	h.install("quick", []string{"network.fetch"}, true, "example.com")
	for _, c := range []struct {
		name, typ string
		params    any
		want      string // "" succeeds
	}{
		{"hello", "hello", nil, ""},
		{"list-agents", "list-agents", nil, ""},
		{"known agent", "getAgentInfo", map[string]any{"agentId": "quick"}, ""},
		{"unknown agent", "getAgentInfo", map[string]any{"agentId": "nobody"}, "unknown_agent"},
		{"path in the id", "getAgentInfo", map[string]any{"agentId": "../../etc/passwd"}, "invalid_profile"},
		{"unknown member", "getAgentInfo", map[string]any{"agentId": "quick", "agentid": "x"}, "bad_request"},
		{"id of the wrong type", "getAgentInfo", map[string]any{"agentId": 7}, "bad_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.call(c.typ, c.params)
			if c.want == "" && !r.Success || c.want != "" && r.Code != c.want {
				t.Fatalf("success=%v code=%s error=%s; want %q", r.Success, r.Code, r.Error, c.want)
			}
		})
	}
}
