package viewer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

// TestRunWorkflowOverTheGateway: a session runs a workflow over /ws. Its
// plan has a POST that needs a person the viewer does not have, so the
// whole workflow is refused with confirmation_required before anything
// runs: no task-result, not even for its pure steps, the refusal in the
// denial log once, and the canary gets nothing.
func TestRunWorkflowOverTheGateway(t *testing.T) {
	var hits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer canary.Close()
	rt, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	v := newTestViewer(t, func(c *Config) {
		policy := mediator.NewPolicy(c.App.Store(), mediator.PolicyOptions{})
		fetch, err := agentfetch.New(agentfetch.Config{Store: c.App.Store(), Fetcher: netproxy.New(netproxy.Config{}), Authorizer: policy,
			LogDenial: func(ctx context.Context, d mediator.Denial) { c.App.Store().LogDenial(ctx, d) }})
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
	v.api("PUT", "/api/sessions/s1/settings", `{"settings":{"permissionLevel":"medium"}}`, 200, nil)
	c := v.browserWS()
	readWS(t, c, "hello", 5*time.Second)
	wf := `{"id":"wf-gw","tasks":[
		{"id":"a","code":{"op":"code:expr","expr":"'x'"}},
		{"id":"post","dependsOn":["a"],"call":{"agentId":"poster","operation":"network.fetch","method":"POST","url":"` + canary.URL + `/","body":"x"}},
		{"id":"after","dependsOn":["post"],"code":{"op":"code:access","expr":"r.post.status"}},
		{"id":"side","dependsOn":["a"],"code":{"op":"code:case","expr":"r.a.upperAscii()"}}
	]}`
	if err := c.WriteJSON(map[string]any{"type": "run-workflow", "runId": "w1", "sessionId": "s1", "workflow": jsonRaw(wf)}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	c.SetReadDeadline(time.Now().Add(3 * time.Minute)) // a guard: a first compile under -race on a loaded machine
	for {
		var m struct {
			Type  string
			RunID string `json:"runId"`
			Task  *struct{ Task, Status string }
			Code  string
			Error string
		}
		if err := c.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m.RunID != "w1" {
			continue // the live tail
		}
		if m.Type == "task-result" {
			got[m.Task.Task] = m.Task.Status
			continue
		}
		if m.Type != "error" || m.Code != string(mediator.CodeConfirmRequired) || !strings.Contains(m.Error, `"post"`) {
			t.Fatalf("%s %s %s", m.Type, m.Code, m.Error)
		}
		break
	}
	if len(got) != 0 {
		t.Fatalf("tasks ran before the plan was refused: %v", got)
	}
	page, err := v.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "poster"})
	if err != nil || len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodeConfirmRequired || page.Denials[0].AuditSeq == 0 {
		t.Fatalf("%v denial log %+v", err, page.Denials)
	}
	if hits.Load() != 0 {
		t.Fatalf("the canary got %d requests", hits.Load())
	}
}

// jsonRaw sends s as JSON, not as a string.
type jsonRaw string

func (j jsonRaw) MarshalJSON() ([]byte, error) { return []byte(j), nil }
