package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/internal/app/selfcheck"
	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/mediator"
)

// TestSessionAnswerStaysInItsSession: over the protocol, a Python agent's
// POST answered "for this session" is not asked about again in that
// session, and is asked about in another; the prompt offered the scope
// because the call belongs to a session.
func TestSessionAnswerStaysInItsSession(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	}))
	defer web.Close()
	h := newHarness(t, true)
	script := &promptScript{answers: []string{"allow-session", "deny"}}
	h.client.SetHostHandler(script.handle)
	h.mustOK("install-agent", map[string]any{"profile": pyProfile("py-sess", []string{"network.fetch"}, hostPort(web.URL)), "module": pySource}, nil)
	for _, id := range []string{"one", "two"} {
		h.mustOK("set-session", map[string]any{"sessionId": id, "level": "medium"}, nil)
	}
	post := func(session string) nmclient.Reply {
		t.Helper()
		var out struct{ RunID string }
		h.mustOK("python-run", map[string]any{"agentId": "py-sess", "sessionId": session}, &out)
		defer h.call("python-run-end", map[string]any{"runId": out.RunID, "agentId": "py-sess", "status": "ok"})
		return h.call("agent-call", map[string]any{"runId": out.RunID, "agentId": "py-sess", "operation": "fetch",
			"params": map[string]any{"url": web.URL + "/p", "options": map[string]any{"method": "POST", "body": "x"}}})
	}
	for i, c := range []struct {
		session string
		code    mediator.Code
		prompts int
	}{
		{"one", "", 1},
		{"one", "", 1}, // the session answer decides: no prompt
		{"two", mediator.CodeUserDenied, 2},
	} {
		r := post(c.session)
		if r.Success != (c.code == "") || (c.code != "" && r.Code != string(c.code)) || script.count() != c.prompts {
			t.Fatalf("call %d in %s: success=%v %s %s after %d prompts; want %q after %d", i, c.session, r.Success, r.Code, r.Error, script.count(), c.code, c.prompts)
		}
	}
	offers := fmt.Sprint(script.shown[0]["offers"])
	if !strings.Contains(offers, "allow-session") {
		t.Fatalf("a session's call was offered %s", offers)
	}
	if hits.Load() != 2 {
		t.Fatalf("the server got %d requests; want 2", hits.Load())
	}
	var prefs struct{ Preferences []mediator.Preference }
	h.mustOK("list-preferences", map[string]any{"agentId": "py-sess"}, &prefs)
	if len(prefs.Preferences) != 1 || prefs.Preferences[0].SessionID != "one" || prefs.Preferences[0].Scope != mediator.ScopeSession ||
		prefs.Preferences[0].Uses != 1 || prefs.Preferences[0].ModuleSHA256 == "" {
		t.Fatalf("preferences %+v", prefs.Preferences)
	}
}

// TestAllowAndLogDigest: allow-and-log asks once, allows every later use
// without asking, and preference-digest counts each use.
func TestAllowAndLogDigest(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer web.Close()
	h := newHarness(t, true)
	script := &promptScript{answers: []string{"allow-and-log"}}
	h.client.SetHostHandler(script.handle)
	h.install("logged", []string{"network.fetch"}, true, hostPort(web.URL))
	for i := range 3 {
		r := h.call("network-fetch", map[string]any{"agentId": "logged", "url": web.URL + "/p", "options": map[string]any{"method": "POST", "body": "x"}})
		if !r.Success {
			t.Fatalf("call %d: %s %s", i, r.Code, r.Error)
		}
	}
	if script.count() != 1 {
		t.Fatalf("%d prompts; want 1", script.count())
	}
	var out struct {
		Digest []struct {
			AgentID, Operation string
			Count              int64
			Latest             []mediator.PreferenceUse
		}
	}
	h.mustOK("preference-digest", map[string]any{"agentId": "logged"}, &out)
	if len(out.Digest) != 1 || out.Digest[0].Count != 3 || len(out.Digest[0].Latest) != 3 || out.Digest[0].Operation != "network.fetch" {
		t.Fatalf("digest %+v", out.Digest)
	}
	for _, u := range out.Digest[0].Latest {
		rec, err := h.st.ListAudit(context.Background(), u.AuditSeq-1, 1, false)
		if err != nil || len(rec.Records) != 1 || !strings.HasPrefix(rec.Records[0].DecidedBy, "pref:allow-and-log:") {
			t.Fatalf("use %+v: its audit record %+v %v", u, rec.Records, err)
		}
	}
}

// TestCheckAgentMessage: the options page's self-test runs nmhost check's
// corpus through the host, and refuses what it cannot check.
func TestCheckAgentMessage(t *testing.T) {
	h := newHarness(t, true)
	h.install("checked", []string{"network.fetch"}, true, "example.com")
	for _, c := range []struct {
		name   string
		params map[string]any
		code   mediator.Code
	}{
		{"an installed agent", map[string]any{"agentId": "checked"}, ""},
		{"at high", map[string]any{"agentId": "checked", "level": "high"}, ""},
		{"unknown agent", map[string]any{"agentId": "nobody"}, mediator.CodeUnknownAgent},
		{"bad level", map[string]any{"agentId": "checked", "level": "root"}, mediator.CodeInvalidLevel},
		{"unknown field", map[string]any{"agentId": "checked", "verbose": true}, mediator.CodeBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.call("check-agent", c.params)
			if c.code != "" {
				if r.Success || r.Code != string(c.code) {
					t.Fatalf("success=%v %s %s; want %s", r.Success, r.Code, r.Error, c.code)
				}
				return
			}
			var rep selfcheck.Report
			if !r.Success || json.Unmarshal(r.Data, &rep) != nil {
				t.Fatalf("success=%v %s %s", r.Success, r.Code, r.Error)
			}
			if !rep.Pass || rep.Failed != 0 || rep.Fired < 10 || len(rep.Results) != rep.Fired+rep.Skipped || rep.AgentID != "checked" {
				t.Fatalf("report %+v", rep)
			}
		})
	}
	// The check wrote nothing of the person's: the only records are the
	// refusals of the three refused requests.
	page, _ := h.st.ListAudit(context.Background(), 0, 100, false)
	for _, r := range page.Records {
		if r.Allowed || r.DecidedBy != "request:check-agent" {
			t.Fatalf("the check wrote the audit trail: %+v", r)
		}
	}
	if len(page.Records) != 3 {
		t.Fatalf("%d audit records; want the 3 refusals", len(page.Records))
	}
}

// TestOutsideReadOffersTheSessionAtMost: a Python agent's shell read
// outside its workspace (a high session) offers once, this session, deny
// and block; answered for the session, the same read in that session is
// not asked about again; a forged "always" is refused.
func TestOutsideReadOffersTheSessionAtMost(t *testing.T) {
	h := newHarness(t, true)
	script := &promptScript{answers: []string{"always-allow", "allow-session"}}
	h.client.SetHostHandler(script.handle)
	prof := pyProfile("py-outside", []string{"shell", "workspace.read", "workspace.write"})
	prof["permissionSet"] = "filesystem"
	h.mustOK("install-agent", map[string]any{"profile": prof, "module": "await restricted_api.shell('ls')\n"}, nil)
	if _, err := h.st.UpdateSessionSettings(context.Background(), "deep", []byte(`{"permissionLevel":"high"}`)); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.txt")
	if err := os.WriteFile(outside, []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	var run struct{ RunID string }
	h.mustOK("python-run", map[string]any{"agentId": "py-outside", "sessionId": "deep"}, &run)
	read := func() nmclient.Reply {
		return h.call("agent-call", map[string]any{"runId": run.RunID, "agentId": "py-outside", "operation": "shell",
			"params": map[string]any{"command": "cat " + outside}})
	}
	if r := read(); r.Success || r.Code != string(mediator.CodeAnswerNotOffered) {
		t.Fatalf("a forged always: success=%v %s %s", r.Success, r.Code, r.Error)
	}
	if got := fmt.Sprint(script.shown[0]["offers"]); got != "[allow-once allow-session deny always-block]" {
		t.Fatalf("an outside read offered %s", got)
	}
	for i := range 2 {
		if r := read(); !r.Success || script.count() != 2 {
			t.Fatalf("read %d: success=%v %s %s after %d prompts", i, r.Success, r.Code, r.Error, script.count())
		}
	}
}
