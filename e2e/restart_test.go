//go:build linux && e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// hostIDs is the shape of a host's request id: its process's instance and
// the request's number.
var hostIDs = regexp.MustCompile(`^h:[0-9a-f]{16}:([0-9]+)$`)

// TestAnswerDoesNotCrossAHostRestart (issue 38, finding 1): a prompt of
// one agent is open when its host process is killed; the next process's
// first prompt, another agent's, has the same number. "Always allow"
// given in the old window must not reach the new request: it is refused
// as withdrawn (prompt_cancelled, in the denial log), nothing is
// remembered for either agent, the server never hears of either POST,
// the new prompt is decided by its own window, and the old window says
// it was withdrawn and why.
func TestAnswerDoesNotCrossAHostRestart(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Method+" done") })
	ext := page(t, extURL("options.html"))
	const agent, other = "e2e-restart", "e2e-restart-other"
	installAgent(t, ext, fetcherProfile(agent, hostOf(web.URL)), nil)
	installAgent(t, ext, fetcherProfile(other, hostOf(web.URL)), nil)
	post := func(agent, path string) <-chan reply {
		return asyncHostCall(ext, "network-fetch", map[string]any{"agentId": agent, "url": web.URL + path,
			"options": map[string]any{"method": "POST", "body": "x"}})
	}
	// A fresh host process: its first request to the extension is its
	// number 1.
	killHosts(t)
	waitForHost(t, ext, func(r reply) bool { return r.Success })
	first := post(agent, "/first")
	old := nextPrompt(t)
	t.Cleanup(func() {
		chromedp.CallBrowser(browser, target.CloseTarget, target.CloseTargetParams{TargetID: old.TargetID})
	})
	oldPrompt, oldPromptID := promptDetails(t, old)
	waitInPrompt(t, old, promptShown, "true")

	if n := killHosts(t); n == 0 {
		t.Fatal("no host process to kill")
	}
	if r := <-first; r.Success {
		t.Fatalf("the POST of the killed host succeeded: %+v", r)
	}
	second := post(other, "/second")
	fresh := nextPrompt(t)
	freshPrompt, _ := promptDetails(t, fresh)

	// The old window's "always allow", as its button sends it.
	late := eval[reply](t, ext, fmt.Sprintf(`chrome.runtime.sendMessage({type: 'prompt-answer', promptId: %q, answer: 'always-allow'})`, oldPromptID))
	// The new prompt's own window answers deny.
	clickPrompt(t, fresh, "deny")
	if r := <-second; r.Success || r.Code != "user_denied" {
		t.Fatalf("the new process's POST got success=%v %s %s %s; want user_denied, its own window's answer", r.Success, r.Code, r.Error, r.Data)
	}
	if n := web.hits.Load(); n != 0 {
		t.Fatalf("the server got %d requests; want none", n)
	}
	for _, a := range []string{agent, other} {
		if r := hostCall(t, ext, "list-preferences", map[string]any{"agentId": a}); !r.Success || strings.Contains(string(r.Data), a) {
			t.Fatalf("an answer was remembered for %s: %s %s %s", a, r.Data, r.Code, r.Error)
		}
	}
	if late.Success || late.Code != "prompt_cancelled" || !strings.Contains(late.Error, "ended") {
		t.Fatalf("the old window's answer got %+v; want prompt_cancelled, its host ended", late)
	}
	waitForDenial(t, ext, agent, `"answer":"always-allow"`)

	// The same number, two identities.
	oldID, freshID := fmt.Sprint(oldPrompt["id"]), fmt.Sprint(freshPrompt["id"])
	for _, id := range []string{oldID, freshID} {
		if m := hostIDs.FindStringSubmatch(id); m == nil || m[1] != "1" {
			t.Fatalf("prompt id %q; want h:INSTANCE:1", id)
		}
	}
	if oldID == freshID {
		t.Fatalf("two host processes sent the same id %s", oldID)
	}
	// The old window says it was withdrawn, and why, in place of its
	// buttons.
	said := waitInPrompt(t, old, `document.body.dataset.withdrawn === 'true'`,
		`document.getElementById('withdrawn').textContent + ' | buttons shown: ' + [...document.querySelectorAll('.answers button')].filter(b => !b.hidden).length`)
	if !strings.Contains(said, "nmhost, which asked, ended before you answered") || !strings.HasSuffix(said, "buttons shown: 0") {
		t.Fatalf("the old window says %q", said)
	}
	screenshotWithdrawn(t, old)

	// A window whose prompt the service worker no longer holds (it
	// restarted, and its host process ended with it) is refused the same
	// way, and recorded by what the window says it asked.
	stale := eval[reply](t, ext, fmt.Sprintf(`chrome.runtime.sendMessage({type: 'prompt-answer', promptId: crypto.randomUUID(), answer: 'allow-24h',
		about: {id: %q, agentId: %q, permission: 'network.fetch', operation: 'network.fetch'}})`, oldID, other))
	if stale.Success || stale.Code != "prompt_cancelled" || !strings.Contains(stale.Error, "restarted") {
		t.Fatalf("an answer for a prompt the service worker never held got %+v", stale)
	}
	waitForDenial(t, ext, other, `"answer":"allow-24h"`)
}

// screenshotWithdrawn keeps what a withdrawn prompt window shows: the
// same page in a tab (see screenshotPrompt), which asks the service
// worker for the prompt's state and shows the same line.
func screenshotWithdrawn(t *testing.T, tg *target.Info) {
	t.Helper()
	copyTab := promptCopy(t, tg)
	waitFor(t, copyTab, `document.body.dataset.withdrawn === 'true'`)
	screenshot(t, copyTab, "prompt-withdrawn")
}

// TestShownDigestIsTheHosts: the extension's digest of a prompt
// (shown.js, in Chromium) is the host's (internal/shown) for every value
// of the shared vectors: names past the Basic Multilingual Plane,
// escapes, hidden characters, integers.
func TestShownDigestIsTheHosts(t *testing.T) {
	raw, err := os.ReadFile("../internal/shown/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Name   string          `json:"name"`
		Value  json.RawMessage `json:"value"`
		Digest string          `json:"digest"`
	}
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	ext := page(t, extURL("options.html"))
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			got := eval[string](t, ext, fmt.Sprintf(`import('./shown.js').then(m => m.shownDigest(JSON.parse(%q)))`, string(v.Value)))
			if got != v.Digest {
				t.Fatalf("shown.js: %s; the host: %s", got, v.Digest)
			}
		})
	}
}
