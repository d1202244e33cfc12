//go:build linux && e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The offscreen document holds the clipboard for the service worker, which
// asks only after the host decided the call. Any other context of the
// extension gets the same runtime messages; a page's content script and an
// extension page asking it directly must be refused, for reads and writes.
func TestOffscreenClipboardAnswersOnlyTheServiceWorker(t *testing.T) {
	const secret = "e2e clipboard secret"
	ext := page(t, extURL("options.html"))
	probeAgent(t, ext, "e2e-clip-guard")
	_, tabID := openTestPage(t, ext)
	// Through the host and the service worker: the clipboard holds the
	// secret, and the offscreen document exists.
	if status, out := runInPopup(t, tabID, "e2e-clip-guard", "clipw "+secret, func() { answerPrompt(t, "allow-once") }); status != "ok" || strings.Contains(out, "error") {
		t.Fatalf("%s:\n%s", status, out)
	}
	ask := func(call, text string) string {
		return fmt.Sprintf(`chrome.runtime.sendMessage({target: 'offscreen', call: %q, text: %q}).then(r => JSON.stringify(r === undefined ? null : r), e => JSON.stringify({code: 'e2e_error', error: e.message}))`, call, text)
	}
	for _, c := range []struct{ name, call, text string }{{"read", "clipboard.read", ""}, {"write", "clipboard.write", "owned"}} {
		answers := map[string]string{
			// A content script in the page (the extension's isolated world).
			"content script": eval[string](t, ext, fmt.Sprintf(`chrome.scripting.executeScript({target: {tabId: %d}, func: () => %s}).then(r => r[0].result)`, tabID, ask(c.call, c.text))),
			"extension page": eval[string](t, ext, ask(c.call, c.text)),
		}
		for from, raw := range answers {
			var r reply
			if err := json.Unmarshal([]byte(raw), &r); err != nil {
				t.Fatalf("%s %s: %s: %v", from, c.name, raw, err)
			}
			if r.Success || r.Code != "permission_not_granted" || strings.Contains(raw, secret) {
				t.Errorf("%s asked the offscreen document to %s: %s", from, c.name, raw)
			}
		}
	}
	// The refused write changed nothing; the service worker still gets it.
	status, out := runInPopup(t, tabID, "e2e-clip-guard", "clipr", func() { answerPrompt(t, "allow-once") })
	if status != "ok" || !strings.Contains(out, fmt.Sprintf("clipboard %q", secret)) {
		t.Fatalf("%s:\n%s", status, out)
	}
}
