//go:build linux && e2e

package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestTypingNeverAnswersAPrompt (issue 38, finding 2): a person who keeps
// typing when a prompt opens answers nothing, also after the inert
// moment: no answer button is reached by Tab, Enter and Space press none,
// and the keyboard gesture that turns keyboard answers on counts only
// after the keys before it stopped. The POST the prompt asks about never
// reaches its server; a click then answers.
func TestTypingNeverAnswersAPrompt(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "posted") })
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-typist", hostOf(web.URL)), nil)
	ch := asyncHostCall(ext, "network-fetch", map[string]any{"agentId": "e2e-typist", "url": web.URL + "/form",
		"options": map[string]any{"method": "POST", "body": "x"}})
	tg := nextPrompt(t)
	copyTab := promptCopy(t, tg)
	// Past the inert moment: the buttons are live.
	waitFor(t, copyTab, `!document.getElementById('deny').disabled`)
	var keys []chromedp.Action[chromedp.Void]
	for range 12 {
		keys = append(keys, chromedp.KeyEvent("ab\t \t\r \t"),
			// The gesture typed among other keys: refused.
			chromedp.KeyEvent("K", chromedp.KeyModifiers(kb.ModifierAlt, kb.ModifierShift)))
	}
	if err := chromedp.Do(copyTab, keys...); err != nil {
		select {
		case r := <-ch:
			t.Fatalf("the keystrokes answered the prompt (%v): the POST got %+v", err, r)
		case <-time.After(10 * time.Second):
			t.Fatal(err)
		}
	}
	state := eval[string](t, copyTab, `JSON.stringify({focus: document.activeElement?.id || '', keyboard: document.body.dataset.keyboard, withdrawn: !!document.body.dataset.withdrawn})`)
	select {
	case r := <-ch:
		t.Fatalf("typing answered the prompt: the POST got %+v (window: %s)", r, state)
	default:
	}
	if web.hits.Load() != 0 {
		t.Fatalf("typing allowed the POST (window: %s)", state)
	}
	if strings.Contains(state, `"keyboard":"true"`) || strings.Contains(state, `"focus":"allow`) {
		t.Fatalf("typing reached the answers: %s", state)
	}
	screenshot(t, copyTab, "prompt-after-typing")
	clickPrompt(t, tg, "deny")
	if r := <-ch; r.Code != "user_denied" {
		t.Fatalf("the POST got %+v; want user_denied from the click on deny", r)
	}
	if web.hits.Load() != 0 {
		t.Fatal("a denied POST reached the server")
	}
}
