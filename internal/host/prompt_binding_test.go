package host

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/internal/shown"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// promptIDs is the shape of a host's request id: its process's instance
// (64 random bits) and the request's number.
var promptIDs = regexp.MustCompile(`^h:[0-9a-f]{16}:([0-9]+)$`)

// firstPrompt makes h send one prompt (a POST by poster to web) and
// returns it as the extension received it; the prompt is never answered.
// The fetch's reply comes on the returned channel.
func firstPrompt(t *testing.T, h *harness, web string) (json.RawMessage, <-chan struct{}) {
	t.Helper()
	got := make(chan json.RawMessage, 1)
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		if typ == "prompt" {
			got <- msg
		}
		<-t.Context().Done() // this process's prompt stays open until it ends
		return nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.client.Call(t.Context(), "network-fetch", map[string]any{"agentId": "poster", "url": web + "/first",
			"options": map[string]any{"method": "POST", "body": "x"}})
	}()
	return <-got, done
}

func idOf(t *testing.T, msg json.RawMessage) string {
	t.Helper()
	var m struct{ ID string }
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// TestPromptIDsDifferAcrossProcesses: two host processes number their
// prompts alike, and still never send the same id: each id carries its
// process's instance.
func TestPromptIDsDifferAcrossProcesses(t *testing.T) {
	web := newCanary(t)
	var ids []string
	for range 2 {
		h := newHarness(t, true)
		h.install("poster", []string{"network.fetch"}, true, hostPort(web.URL))
		msg, _ := firstPrompt(t, h, web.URL)
		ids = append(ids, idOf(t, msg))
		h.in.Close()
		<-h.done
	}
	for _, id := range ids {
		if m := promptIDs.FindStringSubmatch(id); m == nil || m[1] != "1" {
			t.Fatalf("prompt id %q; want h:INSTANCE:1", id)
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("two processes sent the same prompt id %s", ids[0])
	}
	if web.Hits.Load() != 0 {
		t.Fatal("an unanswered POST reached the server")
	}
}

// TestAnswerFromBeforeARestartIsRefused: a prompt of one host process
// is answered "always allow" after that process ended, and the answer
// reaches the next process over the same data dir, whose first prompt
// has the same number. It must not count for that prompt: refused with
// answer_mismatch and recorded under the old id; the new prompt is
// decided by its own answer; nothing is remembered or sent.
func TestAnswerFromBeforeARestartIsRefused(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); io.WriteString(w, "ok") }))
	defer web.Close()
	before := newHarness(t, true)
	before.install("poster", []string{"network.fetch"}, true, hostPort(web.URL))
	oldPrompt, _ := firstPrompt(t, before, web.URL)
	oldID := idOf(t, oldPrompt)
	before.in.Close() // the process ends with its prompt's window still open
	<-before.done

	after := newHarnessStore(t, true, before.st)
	var newID atomic.Value
	after.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		newID.Store(idOf(t, msg))
		// The old window's answer, as the old extension code sent it on
		// whichever port was current: the old id, "always allow".
		stale, _ := json.Marshal(map[string]any{"id": oldID, "type": "prompt-result", "answer": "always-allow"})
		after.client.Send(stale)
		// The new prompt's own window answers deny.
		return map[string]any{"answer": "deny"}
	})
	r := after.call("network-fetch", map[string]any{"agentId": "poster", "url": web.URL + "/second",
		"options": map[string]any{"method": "POST", "body": "x"}})
	after.wantCode(r, mediator.CodeUserDenied)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server got %d requests; want none", n)
	}
	var prefs struct{ Preferences []mediator.Preference }
	after.mustOK("list-preferences", map[string]any{"agentId": "poster"}, &prefs)
	if len(prefs.Preferences) != 0 {
		t.Fatalf("the old answer was remembered: %+v", prefs.Preferences)
	}
	// The same number, another identity.
	if m := promptIDs.FindStringSubmatch(newID.Load().(string)); m == nil || m[1] != "1" || newID.Load() == oldID {
		t.Fatalf("the new process's prompt id %v (the old one %s); want its first, h:INSTANCE:1, of another instance", newID.Load(), oldID)
	}
	page, err := after.st.ListDenials(t.Context(), store.DenialFilter{Code: mediator.CodeAnswerMismatch})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Denials) != 1 || page.Denials[0].Context.Details["promptId"] != oldID ||
		page.Denials[0].Context.Details["answer"] != "always-allow" || page.Denials[0].AuditSeq == 0 {
		t.Fatalf("denials %+v; want the old answer refused under %s, with its audit record", page.Denials, oldID)
	}
}

// TestAnswerCountsOnlyWithTheDigestOfItsPrompt: an answer with the
// prompt's id counts only with the digest of that prompt as its window
// received it (the window computes it, the host kept its own); any
// other, or none, is refused with answer_mismatch and nothing is
// remembered or sent.
func TestAnswerCountsOnlyWithTheDigestOfItsPrompt(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); io.WriteString(w, "ok") }))
	defer web.Close()
	for _, c := range []struct {
		name  string
		shown func(t *testing.T, msg json.RawMessage) any
		want  mediator.Code // "" allows
	}{
		{"the prompt's own digest", func(t *testing.T, msg json.RawMessage) any { return mustShown(t, msg) }, ""},
		{"the digest of another prompt", func(t *testing.T, msg json.RawMessage) any {
			var m map[string]any
			json.Unmarshal(msg, &m)
			m["target"] = map[string]any{"method": "POST", "url": "http://127.0.0.2/elsewhere"}
			d, err := shown.Of(m)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}, mediator.CodeAnswerMismatch},
		{"the digest of the prompt without its id", func(t *testing.T, msg json.RawMessage) any {
			var m map[string]any
			json.Unmarshal(msg, &m)
			delete(m, "id")
			d, _ := shown.Of(m)
			return d
		}, mediator.CodeAnswerMismatch},
		{"an empty digest", func(*testing.T, json.RawMessage) any { return "" }, mediator.CodeAnswerMismatch},
		{"null", func(*testing.T, json.RawMessage) any { return nil }, mediator.CodeAnswerMismatch},
	} {
		t.Run(c.name, func(t *testing.T) {
			hits.Store(0)
			h := newHarness(t, true)
			h.install("poster", []string{"network.fetch"}, true, hostPort(web.URL))
			h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
				return map[string]any{"answer": "always-allow", "shown": c.shown(t, msg)}
			})
			r := h.call("network-fetch", map[string]any{"agentId": "poster", "url": web.URL + "/form",
				"options": map[string]any{"method": "POST", "body": "x"}})
			var prefs struct{ Preferences []mediator.Preference }
			h.mustOK("list-preferences", map[string]any{"agentId": "poster"}, &prefs)
			if c.want == "" {
				if !r.Success || hits.Load() != 1 || len(prefs.Preferences) != 1 {
					t.Fatalf("reply %+v, %d requests, preferences %+v; want allowed, sent once, remembered", r, hits.Load(), prefs.Preferences)
				}
				return
			}
			h.wantCode(r, c.want)
			if hits.Load() != 0 || len(prefs.Preferences) != 0 {
				t.Fatalf("%d requests, preferences %+v; want none", hits.Load(), prefs.Preferences)
			}
			page, err := h.st.ListDenials(t.Context(), store.DenialFilter{Code: c.want, AgentID: "poster"})
			if err != nil || len(page.Denials) != 1 || page.Denials[0].AuditSeq == 0 {
				t.Fatalf("denials %+v (%v); want one with its audit record", page.Denials, err)
			}
		})
	}
}

func mustShown(t *testing.T, msg json.RawMessage) string {
	t.Helper()
	d, err := shown.Digest(msg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestPromptShowsWhatAWriteCarries: a prompt about a page write carries
// the start of the text the agent will write, so the person sees what
// they allow, and the decision's record does not: it holds the length.
func TestPromptShowsWhatAWriteCarries(t *testing.T) {
	h := newHarness(t, true)
	script := &promptScript{answers: []string{"deny"}}
	h.client.SetHostHandler(script.handle)
	prof := pyProfile("py-writer", []string{"page.write"})
	prof["capabilities"].(map[string]any)["domAccess"] = "full"
	h.mustOK("install-agent", map[string]any{"profile": prof, "module": pySource}, nil)
	var run struct{ RunID string }
	h.mustOK("python-run", map[string]any{"agentId": "py-writer", "origin": "http://page.test"}, &run)
	text := "Transfer approved \u202e" + strings.Repeat("x", 300)
	r := h.call("agent-call", map[string]any{"runId": run.RunID, "agentId": "py-writer", "operation": "setElementText",
		"params": map[string]any{"selector": "h1", "text": text}})
	h.wantCode(r, mediator.CodeUserDenied)
	script.mu.Lock()
	shown := script.shown
	script.mu.Unlock()
	if len(shown) != 1 {
		t.Fatalf("%d prompts", len(shown))
	}
	if p, _ := shown[0]["preview"].(string); p != mediator.PreviewOf(text) || !strings.HasPrefix(p, "Transfer approved") || !strings.HasSuffix(p, "…") {
		t.Fatalf("the prompt's preview %q", p)
	}
	page, err := h.st.ListAudit(context.Background(), 0, 100, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range page.Records {
		if b, _ := json.Marshal(rec); strings.Contains(string(b), "Transfer approved") {
			t.Fatalf("the trail holds the text: %s", b)
		}
	}
	h.call("python-run-end", map[string]any{"runId": run.RunID, "agentId": "py-writer", "status": "ok"})
}
