package viewer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

// TestRunWorkflowOverTheGateway: a session runs a workflow over /ws. Its
// pure layers run; the layer with a POST needs a person the viewer does
// not have, so it is denied with confirmation_required, its dependant
// never runs, and the canary gets nothing.
func TestRunWorkflowOverTheGateway(t *testing.T) {
	var hits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer canary.Close()
	rt, err := wasmhost.New(context.Background(), wasmhost.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	v := newTestViewer(t, func(c *Config) {
		policy := mediator.NewPolicy(c.Store, mediator.PolicyOptions{})
		fetch, err := agentfetch.New(agentfetch.Config{Store: c.Store, Fetcher: netproxy.New(netproxy.Config{}), Authorizer: policy,
			LogDenial: func(ctx context.Context, d mediator.Denial) { c.Store.LogDenial(ctx, d) }})
		if err != nil {
			t.Fatal(err)
		}
		c.Runtime, c.Fetch, c.Authorizer = rt, fetch, policy
	})
	prof := mediator.Profile{AgentID: "poster", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermNetworkFetch}},
		Capabilities: mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{strings.TrimPrefix(canary.URL, "http://")}}}
	if _, err := v.st.InstallAgent(context.Background(), prof, ""); err != nil {
		t.Fatal(err)
	}
	v.api("PUT", "/api/sessions/s1/settings", `{"settings":{"permission_level":"medium"}}`, 200, nil)
	c := v.browserWS()
	readWS(t, c, "hello", 5*time.Second)
	wf := `{"id":"wf-gw","tasks":[
		{"id":"a","code":{"op":"code:expr","expr":"'x'"}},
		{"id":"post","dependsOn":["a"],"call":{"agentId":"poster","operation":"network.fetch","method":"POST","url":"` + canary.URL + `/","body":"x"}},
		{"id":"after","dependsOn":["post"],"code":{"op":"code:access","expr":"r.post.status"}},
		{"id":"side","dependsOn":["a"],"code":{"op":"code:case","expr":"r.a.upperAscii()"}}
	]}`
	if err := c.WriteJSON(map[string]any{"type": "run-workflow", "run_id": "w1", "session_id": "s1", "workflow": jsonRaw(wf)}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	c.SetReadDeadline(time.Now().Add(3 * time.Minute)) // a guard: a first compile under -race on a loaded machine
	for {
		var m struct {
			Type    string
			RunID   string `json:"run_id"`
			Task    *struct{ Task, Status string }
			Summary *struct {
				Status  string
				Prompts int
			}
			Code, Error string
		}
		if err := c.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.RunID != "w1" {
			continue // the live tail
		}
		switch m.Type {
		case "task-result":
			got[m.Task.Task] = m.Task.Status
			continue
		case "workflow-result":
			if m.Summary.Status != "failed" {
				t.Fatalf("summary %+v", m.Summary)
			}
		default:
			t.Fatalf("%s %s %s", m.Type, m.Code, m.Error)
		}
		break
	}
	want := map[string]string{"a": "ok", "post": "confirmation_required", "after": "dependency_failed", "side": "ok"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %q; want %q", k, got[k], w)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the canary got %d requests", hits.Load())
	}
}

// jsonRaw sends s as JSON, not as a string.
type jsonRaw string

func (j jsonRaw) MarshalJSON() ([]byte, error) { return []byte(j), nil }
