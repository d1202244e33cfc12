//go:build linux && e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// TestModuleRunFromTheToolbarPopupOutlivesIt (issue 38, finding 4): a
// WebAssembly agent started from the real action popup, whose write needs
// a prompt, goes on after the prompt takes the focus and the popup is
// gone: the allowed write lands, the run's next call reaches the host,
// and the popup opened again shows the run's whole output and its end.
// Before, the run was the popup's and ended with it.
func TestModuleRunFromTheToolbarPopupOutlivesIt(t *testing.T) {
	ext := page(t, extURL("options.html"))
	prof := pageReaderProfile("e2e-wasm-toolbar", "full")
	prof["name"] = "Toolbar page reader"
	installAgent(t, ext, prof, modules["page-reader"])
	tab, tabID := openTestPage(t, ext) // clicks the action: the popup opens
	popup, popupID := actionPopup(t)
	// One evaluation waits and clicks (see clickPrompt).
	waitFor(t, popup, `document.querySelector('#agent option[value="e2e-wasm-toolbar"]') && (document.getElementById('agent').value = 'e2e-wasm-toolbar', document.getElementById('input').value = 'shout', document.getElementById('run').click(), true)`)
	tg := nextPrompt(t)
	if targetOpen(popupID) {
		// Chrome closes an action popup that lost the focus; headless
		// Chromium may keep it: closed here as Chrome does.
		if _, err := chromedp.CallBrowser(browser, target.CloseTarget, target.CloseTargetParams{TargetID: popupID}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for targetOpen(popupID) {
		if time.Now().After(deadline) {
			t.Fatal("the action popup did not close")
		}
		time.Sleep(50 * time.Millisecond)
	}
	clickPrompt(t, tg, "allow-once")
	status, out := lastPythonRun(t, tabID)
	if status != "ok" || !strings.Contains(out, `"E2E page" has 5 words`) || !strings.Contains(out, "heading changed") {
		t.Fatalf("the run started from the closed popup: %s:\n%s", status, out)
	}
	if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "QUIET HEADING" {
		t.Fatalf("the page's heading is %q", h1)
	}
}

// TestModuleRunStopWithdrawsItsPrompt: a module's run waiting on a
// prompt is stopped from the popup: its prompt window closes, a late
// answer is refused as prompt_cancelled, and the page is not written.
func TestModuleRunStopWithdrawsItsPrompt(t *testing.T) {
	ext := page(t, extURL("options.html"))
	prof := pageReaderProfile("e2e-wasm-stop", "full")
	prof["capabilities"].(map[string]any)["executionTimeout"] = 120000
	installAgent(t, ext, prof, modules["page-reader"])
	tab, tabID := openTestPage(t, ext)
	popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
	waitFor(t, popup, `document.querySelector('#agent option[value="e2e-wasm-stop"]')`)
	eval[bool](t, popup, `(document.getElementById('agent').value = 'e2e-wasm-stop', document.getElementById('input').value = 'shout', true)`)
	click(t, popup, "run")
	tg := nextPrompt(t)
	waitFor(t, popup, `!document.getElementById('stop').hidden`)
	click(t, popup, "stop")
	waitPromptGone(t, tg, "the run was stopped")
	waitFor(t, popup, `document.getElementById('output').dataset.status`)
	if status := eval[string](t, popup, `document.getElementById('output').dataset.status`); status == "ok" {
		t.Fatalf("a stopped run ended ok: %s", eval[string](t, popup, `document.getElementById('output').textContent`))
	}
	if r := lateAnswer(t, ext, promptIDOf(t, tg)); r.Success || r.Code != "prompt_cancelled" {
		t.Fatalf("a late answer got %+v; want refused with prompt_cancelled", r)
	}
	if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "quiet heading" {
		t.Fatalf("the page was written after Stop: %q", h1)
	}
}
