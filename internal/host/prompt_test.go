package host

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// promptScript answers prompts with the next answer and keeps what the
// prompts showed.
type promptScript struct {
	mu        sync.Mutex
	answers   []string // "late" answers allow-once only after the prompt was withdrawn; "mismatched" with another prompt's digest
	shown     []map[string]any
	withdrawn []map[string]any // the prompt-cancel messages
	cancelled map[string]chan struct{}
}

func (p *promptScript) handle(typ string, msg json.RawMessage) map[string]any {
	var m map[string]any
	json.Unmarshal(msg, &m)
	p.mu.Lock()
	if typ == "prompt-cancel" {
		p.withdrawn = append(p.withdrawn, m)
		if ch := p.cancelled[fmt.Sprint(m["id"])]; ch != nil {
			close(ch)
		}
		p.mu.Unlock()
		return nil
	}
	p.shown = append(p.shown, m)
	if typ != "prompt" || len(p.answers) == 0 {
		p.mu.Unlock()
		return map[string]any{"answer": "deny"}
	}
	a := p.answers[0]
	p.answers = p.answers[1:]
	if a == "mismatched" {
		p.mu.Unlock()
		return map[string]any{"answer": "allow-once", "shown": strings.Repeat("0", 64)}
	}
	if a != "late" {
		p.mu.Unlock()
		return map[string]any{"answer": a}
	}
	// "late": wait until the host withdraws this prompt, then allow it,
	// as a person clicking just as the window closes would.
	if p.cancelled == nil {
		p.cancelled = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	p.cancelled[fmt.Sprint(m["id"])] = ch
	p.mu.Unlock()
	<-ch
	return map[string]any{"answer": "allow-once"}
}

func (p *promptScript) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.shown)
}

// TestPostAsksAndAlwaysAnswersAreRemembered drives the whole loop through
// the protocol: a POST needs confirmation, the "extension" answers, and
// the remembered answer decides the next call without a prompt.
func TestPostAsksAndAlwaysAnswersAreRemembered(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "posted")
	}))
	defer web.Close()
	for _, c := range []struct {
		answer string
		want   mediator.Code // "" succeeds
	}{
		{"allow-once", ""},
		{"deny", mediator.CodeUserDenied},
		{"always-allow", ""},
		{"always-block", mediator.CodeBlockedByUser},
		{"allow-24h", ""},
		{"allow-and-log", ""},
		// A network-fetch from the extension has no session: "for this
		// session" is not offered, and a forged one is refused.
		{"allow-session", mediator.CodeAnswerNotOffered},
		{"maybe", mediator.CodeAnswerNotOffered}, // not an answer
	} {
		t.Run(c.answer, func(t *testing.T) {
			hits.Store(0)
			h := newHarness(t, true)
			script := &promptScript{answers: []string{c.answer, c.answer}}
			h.client.SetHostHandler(script.handle)
			h.install("poster", []string{"network.fetch"}, true, hostPort(web.URL))
			post := map[string]any{"agentId": "poster", "url": web.URL + "/submit",
				"options": map[string]any{"method": "POST", "body": "secret form contents"}}
			for call := 1; call <= 2; call++ {
				r := h.call("network-fetch", post)
				if c.want == "" && !r.Success || c.want != "" && r.Code != string(c.want) {
					t.Fatalf("call %d: success=%v code=%s error=%s; want %q", call, r.Success, r.Code, r.Error, c.want)
				}
			}
			remembered := mediator.Answer(c.answer).Remembered() && c.want != mediator.CodeAnswerNotOffered
			if want := map[bool]int{true: 1, false: 2}[remembered]; script.count() != want {
				t.Fatalf("%d prompts; want %d", script.count(), want)
			}
			shown := script.shown[0]
			raw, _ := json.Marshal(shown)
			if strings.Contains(string(raw), "secret form contents") {
				t.Fatalf("the prompt carried the request body: %s", raw)
			}
			target, _ := shown["target"].(map[string]any)
			if shown["class"] != "REQUIRES_CONFIRMATION" || target["method"] != "POST" || target["url"] != web.URL+"/submit" || target["textLength"] != float64(20) ||
				shown["rememberAs"] != "POST "+web.URL || fmt.Sprint(shown["offers"]) != "[allow-once allow-24h always-allow allow-and-log deny always-block]" {
				t.Fatalf("prompt showed %s", raw)
			}
			wantHits := map[mediator.Code]int64{"": 2}[c.want]
			if hits.Load() != wantHits {
				t.Fatalf("server hit %d times; want %d", hits.Load(), wantHits)
			}
			var prefs struct{ Preferences []mediator.Preference }
			h.mustOK("list-preferences", map[string]any{"agentId": "poster"}, &prefs)
			if remembered != (len(prefs.Preferences) == 1) {
				t.Fatalf("preferences %+v", prefs.Preferences)
			}
			if remembered {
				p := prefs.Preferences[0]
				if p.Operation != mediator.OpNetworkFetch || p.Target != "POST "+web.URL || string(p.Answer) != c.answer {
					t.Fatalf("preference %+v", p)
				}
				var rv struct{ Revoked bool }
				h.mustOK("revoke-preference", map[string]any{"preferenceId": p.ID}, &rv)
				if !rv.Revoked {
					t.Fatal("revoke-preference did not revoke")
				}
				h.call("network-fetch", post)
				if script.count() != 2 {
					t.Fatal("no prompt after the preference was revoked")
				}
			}
			var audit store.AuditPage
			h.mustOK("list-audit", map[string]any{"limit": 100}, &audit)
			if len(audit.Records) == 0 || strings.Contains(string(mustJSON(t, audit)), "secret form contents") {
				t.Fatalf("audit %d records (or holds the body)", len(audit.Records))
			}
		})
	}
}

func TestPromptWithNobodyAnsweringDenies(t *testing.T) {
	h := newHarness(t, true)
	// No host handler: the prompt is never answered. The policy's timeout
	// is a minute; closing the connection must end the wait at once.
	web := newCanary(t)
	h.install("poster", []string{"network.fetch"}, true, hostPort(web.URL))
	asked, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		close(asked)
		<-release
		return nil
	})
	res := make(chan error, 1)
	go func() {
		r, err := h.client.Call(t.Context(), "network-fetch", map[string]any{"agentId": "poster", "url": web.URL, "options": map[string]any{"method": "DELETE"}})
		if err == nil && r.Code != string(mediator.CodeNoBrowser) {
			err = fmt.Errorf("reply %+v; want no_browser", r)
		}
		res <- err
	}()
	<-asked
	h.in.Close()
	<-h.done
	// The reply may or may not make it out before the pipe closes; if it
	// does, it must say no_browser.
	if err := <-res; err != nil && !strings.Contains(err.Error(), "host closed") {
		t.Fatal(err)
	}
	if web.Hits.Load() != 0 {
		t.Fatal("an unanswered DELETE reached the server")
	}
	page, _ := h.st.ListDenials(t.Context(), store.DenialFilter{AgentID: "poster"})
	if len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodeNoBrowser {
		t.Fatalf("denials %+v; want one no_browser", page.Denials)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPromptTargetNamesFiles: a prompt about a workspace write names its
// file, and one about a shell command names every path the command
// reads and writes; never what it writes.
func TestPromptTargetNamesFiles(t *testing.T) {
	w := targetOf(mediator.Operation{Name: mediator.OpWorkspaceWrite, Path: "notes/a.txt", TextLength: 12})
	if w.Path != "notes/a.txt" || w.TextLength != 12 || w.Paths != nil {
		t.Fatalf("workspace write: %+v", w)
	}
	op := mediator.ShellOp("a", mediator.LevelHigh, mediator.ShellStep{Command: "cp", ReadsOutside: true, Writes: true, Paths: []string{"/tmp/sample.txt", "imported.txt"}})
	s := targetOf(op)
	if len(s.Paths) != 2 || s.Paths[0] != "/tmp/sample.txt" || s.Paths[1] != "imported.txt" {
		t.Fatalf("shell: %+v", s)
	}
}

// TestCancelRequestWithdrawsItsPrompt: cancel-request ends a request in
// progress (the extension sends it when the page that asked is gone):
// its prompt is withdrawn, the operation refused and never performed.
func TestCancelRequestWithdrawsItsPrompt(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer web.Close()
	h := newHarness(t, true)
	h.install("poster", []string{"network.fetch"}, true, hostPort(web.URL))
	script := &promptScript{answers: []string{"late"}}
	h.client.SetHostHandler(script.handle)
	raw, _ := json.Marshal(map[string]any{"id": "from-a-closed-popup", "type": "network-fetch", "agentId": "poster",
		"url": web.URL + "/form", "options": map[string]any{"method": "POST", "body": "x"}})
	if err := h.client.Send(raw); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return script.count() == 1 })
	for _, c := range []struct {
		name      string
		requestID string
		cancelled bool
	}{
		{"the request in progress", "from-a-closed-popup", true},
		{"no such request", "never-sent", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out struct {
				Cancelled bool `json:"cancelled"`
			}
			h.mustOK("cancel-request", map[string]any{"requestId": c.requestID}, &out)
			if out.Cancelled != c.cancelled {
				t.Fatalf("cancelled = %v; want %v", out.Cancelled, c.cancelled)
			}
		})
	}
	select {
	case r := <-h.client.Unmatched:
		if r.Success || r.Code != string(mediator.CodePromptTimeout) {
			t.Fatalf("the cancelled fetch got %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled request was not answered")
	}
	waitUntil(t, func() bool {
		script.mu.Lock()
		defer script.mu.Unlock()
		return len(script.withdrawn) == 1
	})
	if n := hits.Load(); n != 0 {
		t.Fatalf("a cancelled POST reached the server %d times", n)
	}
}
