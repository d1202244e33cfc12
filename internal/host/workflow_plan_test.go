package host

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// requestLog is a loopback server that notes every request it gets.
type requestLog struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRequestLog(t *testing.T) *requestLog {
	l := &requestLog{}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, r.Method+" "+r.URL.Path)
		l.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *requestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// TestPlanIsDecidedBeforeAnyRequest: over the native protocol, against
// real fetches on 127.0.0.1 only. A plan whose last layer POSTs to a
// host outside the agent's list makes no request at all (not even its
// first layer's GET), is refused naming the task, and is in the denial
// log once; the same plan without that task is asked about once, as a
// plan listing its POST with its layer, and then makes exactly the
// requests it lists.
func TestPlanIsDecidedBeforeAnyRequest(t *testing.T) {
	web := newRequestLog(t)
	canary := newRequestLog(t) // 127.0.0.1 too, on a port the agent's list does not hold
	h := newHarness(t, true)
	h.install("planner", []string{"network.fetch"}, true, hostPort(web.URL))
	var mu sync.Mutex
	var prompts []map[string]any
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		if typ != "prompt-layer" {
			return nil
		}
		var m map[string]any
		json.Unmarshal(msg, &m)
		mu.Lock()
		prompts = append(prompts, m)
		mu.Unlock()
		return map[string]any{"answer": "allow-once"}
	})
	tasks := []any{
		map[string]any{"id": "get", "call": map[string]any{"agentId": "planner", "operation": "network.fetch", "url": web.URL + "/in"}},
		map[string]any{"id": "size", "dependsOn": []string{"get"}, "code": map[string]any{"op": "code:get_length", "expr": "size(r.get.body)"}},
		map[string]any{"id": "post", "dependsOn": []string{"size"}, "call": map[string]any{"agentId": "planner", "operation": "network.fetch",
			"method": "POST", "url": web.URL + "/out", "body": "2"}},
	}
	unlisted := map[string]any{"id": "leak", "dependsOn": []string{"size"}, "call": map[string]any{"agentId": "planner", "operation": "network.fetch",
		"method": "POST", "url": canary.URL + "/leak", "body": "2"}}

	for _, tc := range []struct {
		name     string
		tasks    []any
		want     mediator.Code // the refusal; "" runs
		requests []string
		prompts  int
	}{
		{"a refused last layer: no request at all", append(slices.Clone(tasks), unlisted), mediator.CodeHostNotAllowed, nil, 0},
		{"without it: exactly the listed requests", tasks, "", []string{"GET /in", "POST /out"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			web.mu.Lock()
			web.seen = nil
			web.mu.Unlock()
			mu.Lock()
			prompts = nil
			mu.Unlock()
			r := h.call("run-workflow", map[string]any{"workflow": map[string]any{"id": "plan", "tasks": tc.tasks}})
			if tc.want != "" {
				if r.Success || r.Code != string(tc.want) {
					t.Fatalf("success %v, %s %s %s; want %s", r.Success, r.Code, r.Error, r.Data, tc.want)
				}
				page, _ := h.st.ListDenials(context.Background(), store.DenialFilter{Code: tc.want})
				if len(page.Denials) != 1 || page.Denials[0].AuditSeq == 0 || page.Denials[0].Context.URL != canary.URL+"/leak" {
					t.Fatalf("denial log %+v", page.Denials)
				}
			} else if !r.Success {
				t.Fatalf("%+v", r)
			}
			if got := web.requests(); !slices.Equal(got, tc.requests) || len(canary.requests()) != 0 {
				t.Fatalf("the server got %v, the canary %v; want %v", got, canary.requests(), tc.requests)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(prompts) != tc.prompts {
				t.Fatalf("%d prompts: %v", len(prompts), prompts)
			}
			if tc.prompts == 0 {
				return
			}
			p := prompts[0]
			listed, _ := p["tasks"].([]any)
			first, _ := listed[0].(map[string]any)
			plan, _ := p["plan"].(map[string]any)
			if p["layer"] != 0.0 || plan["layers"] != 3.0 || len(listed) != 1 || first["task"] != "post" || first["layer"] != 3.0 {
				t.Fatalf("the plan's prompt: %v", p)
			}
		})
	}
}

// TestPlanPromptRefusesAnswersItDidNotOffer: a plan's prompt offers once,
// always for this plan, and deny. A forged wider or unknown answer is
// refused with answer_not_offered before any request, and nothing is
// remembered.
func TestPlanPromptRefusesAnswersItDidNotOffer(t *testing.T) {
	web := newRequestLog(t)
	h := newHarness(t, true)
	h.install("planner", []string{"network.fetch"}, true, hostPort(web.URL))
	var answer string
	var offers []any
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		var m map[string]any
		json.Unmarshal(msg, &m)
		offers, _ = m["offers"].([]any)
		return map[string]any{"answer": answer}
	})
	tasks := []any{map[string]any{"id": "post", "call": map[string]any{"agentId": "planner", "operation": "network.fetch",
		"method": "POST", "url": web.URL + "/out", "body": "2"}}}
	for _, a := range []string{"allow-24h", "allow-and-log", "allow-session", "always-block", "allow-forever"} {
		t.Run(a, func(t *testing.T) {
			answer = a
			r := h.call("run-workflow", map[string]any{"workflow": map[string]any{"id": "plan", "tasks": tasks}})
			if r.Success || r.Code != string(mediator.CodeAnswerNotOffered) {
				t.Fatalf("success %v, %s %s; want answer_not_offered", r.Success, r.Code, r.Error)
			}
			if got := web.requests(); len(got) != 0 {
				t.Fatalf("the server got %v", got)
			}
			if len(offers) != 3 || offers[0] != "allow-once" || offers[1] != "always-allow" || offers[2] != "deny" {
				t.Fatalf("the plan's prompt offered %v", offers)
			}
			if prefs, _ := h.st.ListPreferences(context.Background(), "planner"); len(prefs) != 0 {
				t.Fatalf("remembered %+v", prefs)
			}
		})
	}
}
