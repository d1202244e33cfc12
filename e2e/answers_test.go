//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestSessionAnswerFromThePromptPage: the prompt page offers "for this
// session" to a call that belongs to a session; clicked, the next call of
// the agent in that session is not asked about, and a call in another
// session is. The calls are a Python agent's, made as the offscreen
// document makes them (python-run, agent-call), so no Pyodide is needed.
func TestSessionAnswerFromThePromptPage(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Method+" done") })
	ext := page(t, extURL("options.html"))
	prof := pythonProfile("e2e-session-answer", "none", []string{"network.fetch"}, hostOf(web.URL))
	prof["permissionSet"] = "network-api"
	installPython(t, ext, prof, "print('x')\n")
	for _, s := range []string{"e2e-sess-a", "e2e-sess-b"} {
		if r := hostCall(t, ext, "set-session", map[string]any{"sessionId": s, "level": "medium"}); !r.Success {
			t.Fatalf("set-session %s: %s %s", s, r.Code, r.Error)
		}
	}
	open := func(session string) string {
		t.Helper()
		r := hostCall(t, ext, "python-run", map[string]any{"agentId": "e2e-session-answer", "sessionId": session})
		var out struct{ RunID string }
		if !r.Success || json.Unmarshal(r.Data, &out) != nil || out.RunID == "" {
			t.Fatalf("python-run in %s: %s %s", session, r.Code, r.Error)
		}
		t.Cleanup(func() {
			hostCall(t, ext, "python-run-end", map[string]any{"runId": out.RunID, "agentId": "e2e-session-answer", "status": "ok"})
		})
		return out.RunID
	}
	post := func(runID string) <-chan reply {
		return asyncHostCall(ext, "agent-call", map[string]any{"runId": runID, "agentId": "e2e-session-answer", "operation": "fetch",
			"params": map[string]any{"url": web.URL + "/form", "options": map[string]any{"method": "POST", "body": "x"}}})
	}

	runA := open("e2e-sess-a")
	ch := post(runA)
	tg := nextPrompt(t)
	shown, err := url.PathUnescape(tg.URL[strings.Index(tg.URL, "#")+1:])
	if err != nil || !strings.Contains(shown, `"allow-session"`) {
		t.Fatalf("the prompt did not offer the session: %s (%v)", shown, err)
	}
	clickPrompt(t, tg, "allow-session")
	if r := <-ch; !r.Success {
		t.Fatalf("first POST: %s %s", r.Code, r.Error)
	}
	ch = post(runA)
	noPromptWithin(t, 1500*time.Millisecond)
	if r := <-ch; !r.Success {
		t.Fatalf("second POST in the same session: %s %s", r.Code, r.Error)
	}

	runB := open("e2e-sess-b")
	ch = post(runB)
	answerPrompt(t, "deny")
	if r := <-ch; r.Code != "user_denied" {
		t.Fatalf("POST in another session: %s %s; want asked and user_denied", r.Code, r.Error)
	}
	if web.hits.Load() != 2 {
		t.Fatalf("the server got %d requests; want 2", web.hits.Load())
	}
	r := hostCall(t, ext, "list-preferences", map[string]any{"agentId": "e2e-session-answer"})
	if !strings.Contains(string(r.Data), `"scope":"session"`) || !strings.Contains(string(r.Data), `"sessionId":"e2e-sess-a"`) {
		t.Fatalf("preferences: %s", r.Data)
	}
	// The options page lists it with its scope and end.
	eval[bool](t, ext, `(document.getElementById('refresh').click(), true)`)
	waitFor(t, ext, `document.querySelector('#prefs tbody tr[data-scope="session"]') !== null`)
}

// TestOptionsPageSelfTest: the options page's self-test button runs the
// host's check of the agent and shows one line per rule and the verdict.
func TestOptionsPageSelfTest(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-selftest", "example.com"), nil)
	eval[bool](t, ext, `(document.getElementById('refresh').click(), true)`)
	waitFor(t, ext, `document.querySelector('button.selftest[data-agent="e2e-selftest"]') !== null`)
	eval[bool](t, ext, `(document.querySelector('button.selftest[data-agent="e2e-selftest"]').click(), true)`)
	waitLong(t, ext, `document.getElementById('selftest-verdict').dataset.pass !== undefined`)
	verdict := eval[string](t, ext, `document.getElementById('selftest-verdict').dataset.pass + ' ' + document.getElementById('selftest-verdict').textContent`)
	rows := eval[float64](t, ext, `document.querySelectorAll('#selftest-results tbody tr[data-ok="ok"]').length`)
	fails := eval[float64](t, ext, `document.querySelectorAll('#selftest-results tbody tr[data-ok="FAIL"]').length`)
	if !strings.HasPrefix(verdict, "true pass:") || rows < 10 || fails != 0 {
		t.Fatalf("self-test: %q, %v rules ok, %v failed", verdict, rows, fails)
	}
	screenshot(t, ext, "options-self-test")
}
