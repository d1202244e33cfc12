package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestAgentProgramsReachOnlyTheirHosts: at a high session an agent's
// shell runs a program in the sandbox, and the program's connections are
// the agent's: to a host of its allowedHosts, through the run's proxy,
// each decided as a fetch (network.fetch, POST) and recorded before the
// dial; to another loopback port, refused with host_not_allowed, in the
// denial log, while the canary server behind it is reached by nothing.
// Below high the same line is shell_not_allowed.
func TestAgentProgramsReachOnlyTheirHosts(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from-an-allowed-host") }))
	defer web.Close()
	can := newCanary(t)
	h := newHarness(t, true)
	h.mustOK("install-agent", map[string]any{"profile": pyProfile("py-curl", []string{"shell", "workspace.read", "workspace.write", "network.fetch"}, hostPort(web.URL)), "module": pySource}, nil)
	for _, s := range []struct{ id, level string }{{"lab", "high"}, {"desk", "medium"}} {
		if _, err := h.st.UpdateSessionSettings(context.Background(), s.id, []byte(`{"permissionLevel":"`+s.level+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	open := func(session string) string {
		var out struct {
			RunID string `json:"runId"`
		}
		h.mustOK("python-run", map[string]any{"agentId": "py-curl", "sessionId": session}, &out)
		return out.RunID
	}
	lab, desk := open("lab"), open("desk")
	for _, c := range []struct {
		name, run, line string
		code            mediator.Code
		want            string
	}{
		{"an allowed host", lab, "curl -sS " + web.URL + "/x", "", "from-an-allowed-host"},
		{"another loopback port", lab, "curl -sS -f " + can.URL + "/x", mediator.CodeExitNonZero, ""},
		{"around the proxy", lab, "curl -sS --noproxy '*' " + can.URL + "/x", mediator.CodeExitNonZero, ""},
		{"below high", desk, "curl -sS " + web.URL + "/x", mediator.CodeShellNotAllowed, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.call("agent-call", map[string]any{"runId": c.run, "agentId": "py-curl", "operation": "shell", "params": map[string]any{"command": c.line}})
			if c.code != "" {
				h.wantCode(r, c.code)
				return
			}
			var out struct {
				Output string `json:"output"`
			}
			r.Decode(&out)
			if !r.Success || out.Output != c.want {
				t.Fatalf("%v %s: %q; want %q", r.Success, r.Error, out.Output, c.want)
			}
		})
	}
	if n := can.Hits.Load(); n != 0 {
		t.Fatalf("the canary was reached %d times", n)
	}
	page, err := h.st.ListAudit(context.Background(), 0, 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range page.Records {
		if rec.Kind == mediator.AuditDecision && (rec.Operation.Name == mediator.OpNetworkFetch || rec.Operation.Name == mediator.OpShellProgram) {
			got = append(got, rec.Operation.Name+" "+rec.Operation.Method+" "+rec.Operation.URL+" "+string(rec.Code))
		}
	}
	want := []string{
		"shell.program   allowed", "network.fetch POST " + web.URL + "/ allowed",
		"shell.program   allowed", "network.fetch POST " + can.URL + "/ host_not_allowed",
		"shell.program   allowed",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("decisions\n%q\nwant\n%q", got, want)
	}
	dp, err := h.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "py-curl", Code: mediator.CodeHostNotAllowed})
	if err != nil {
		t.Fatal(err)
	}
	if len(dp.Denials) != 1 || !strings.Contains(dp.Denials[0].Context.URL, hostPort(can.URL)) {
		b, _ := json.Marshal(dp.Denials)
		t.Fatalf("denials %s", b)
	}
}
