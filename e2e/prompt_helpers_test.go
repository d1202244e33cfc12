//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// The extension's prompt windows: finding the next one, answering it as a
// person would, and keeping what it showed.

// answered holds the prompt windows already answered: a window closes a
// moment after its answer, and must not be answered twice.
var answered = map[target.ID]bool{}

// answerPrompt waits for a new prompt window of the extension, takes a
// screenshot of it, and clicks answer.
func answerPrompt(t testing.TB, answer string) {
	t.Helper()
	clickPrompt(t, nextPrompt(t), answer)
}

// nextPrompt waits for a prompt window not handled yet and marks it handled.
func nextPrompt(t testing.TB) *target.Info {
	t.Helper()
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		if tg := unansweredPrompt(); tg != nil {
			answered[tg.TargetID] = true
			return tg
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no prompt window appeared")
	return nil
}

// unansweredPrompt is a prompt window open now and not answered yet, or nil.
func unansweredPrompt() *target.Info {
	targets, _ := chromedp.Targets(browser)
	for _, tg := range targets {
		if isPrompt(tg) && !answered[tg.TargetID] {
			return tg
		}
	}
	return nil
}

// screenshotCopy is the prompt id of screenshotPrompt's copies.
const screenshotCopy = "screenshot-copy"

// isPrompt tells a prompt window of the extension from other targets,
// including screenshotPrompt's and promptCopy's copies.
func isPrompt(tg *target.Info) bool {
	return tg.Type == "page" && strings.HasPrefix(tg.URL, extURL("prompt.html")) && !strings.Contains(tg.URL, "id="+screenshotCopy) &&
		!strings.Contains(tg.URL, "copy=1") // promptCopy's tabs
}

func clickPrompt(t testing.TB, tg *target.Info, answer string) {
	t.Helper()
	// The extension closes the window itself once answered.
	attach := func() (context.Context, context.CancelFunc) {
		return chromedp.NewContext(browser, chromedp.WithTargetID(tg.TargetID), chromedp.WithDetachOnCancel())
	}
	// One evaluation waits and clicks: in headless Chromium a second
	// evaluation in a chrome.windows.create popup went unanswered in our
	// runs, and so did a screenshot of it (see screenshotPrompt).
	// The click is deferred a little: it closes the window, and a close
	// that beats the evaluation's reply fails it with "target detached"
	// although the answer was given (seen under load).
	// The buttons are inert for a moment after the window shows (and
	// again when it regains focus): the condition waits that out, and the
	// click is repeated until one lands on a live button.
	// The window may still hold the about:blank it starts with: the
	// condition holds off there, and an evaluation that its navigation to
	// prompt.html cut short is made again in the new document.
	// A remembered answer is two steps, as for a person: picked under
	// More…, then confirmed.
	cond := fmt.Sprintf("location.href.startsWith('chrome-extension:') && document.readyState === 'complete' && %s && !document.getElementById(%q).disabled && (setInterval(() => { %s }, 50), true)", promptShown, answer, pressAnswer(answer))
	// Under load an evaluation in the popup has gone unanswered (45 s,
	// with two busy loops and the race-built suite beside the browser),
	// and once unanswered, every later one through the same attachment
	// was too (the window swaps its about:blank for the extension's
	// page, in another process, as it opens): each try is bounded and
	// attaches afresh, until the guard is out.
	deadline := time.Now().Add(guard)
	for attempt := 0; ; attempt++ {
		try := time.Now().Add(20 * time.Second)
		if try.After(deadline) {
			try = deadline
		}
		ctx, detach := attach()
		c, cancelEval := context.WithDeadline(ctx, try)
		_, err := evalErr[bool](c, fmt.Sprintf(`new Promise(r => { const w = () => (%s) ? r(true) : setTimeout(w, 50); w() })`, cond))
		cancelEval()
		if err == nil {
			detach()
			break
		}
		again := strings.Contains(err.Error(), "context was destroyed") || errors.Is(err, context.DeadlineExceeded)
		if again && time.Now().Before(deadline) {
			detach()
			continue
		}
		state := promptState(answer, attach)
		detach()
		t.Fatalf("answering the prompt %s (%d tries): %v; the window then: %s", answer, attempt+1, err, state)
	}
	screenshotPrompt(t, tg.URL)
}

// pressAnswer is JavaScript that gives answer in a prompt window whose
// buttons are live: Allow once and Deny by their button, a remembered
// answer by More…, its button, then Confirm.
func pressAnswer(answer string) string {
	switch answer {
	case "allow-once", "deny":
		return fmt.Sprintf("const b = document.getElementById(%q); if (!b.disabled) b.click()", answer)
	}
	return fmt.Sprintf(`const b = document.getElementById(%q); if (b.disabled) return;
		if (document.getElementById('more-answers').hidden) document.getElementById('more').click();
		b.click(); const c = document.getElementById('remember-confirm'); if (!c.disabled) c.click()`, answer)
}

// promptState is what a prompt window shows when an answer could not be
// given: where it is, whether its question is filled in, the button's
// state and the window's focus, read through a new attachment in 5 s at
// most (an evaluation there may go unanswered too, which it then says).
func promptState(answer string, attach func() (context.Context, context.CancelFunc)) string {
	ctx, detach := attach()
	defer detach()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	state, err := evalErr[string](c, fmt.Sprintf(`JSON.stringify({href: location.href.slice(0, 60), ready: document.readyState, shown: !!%s, disabled: document.getElementById(%q)?.disabled, inert: document.body?.dataset.inert, focus: document.hasFocus(), visibility: document.visibilityState})`, promptShown, answer))
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return state
}

// promptShown is true once the prompt page has filled in its question:
// one operation's agent, or a workflow's name (its tasks are filled in
// by the same script run).
const promptShown = "(document.getElementById('agent')?.textContent || document.getElementById('workflow')?.textContent)"

// screenshotPrompt saves what the prompt window showed. Headless Chromium
// does not composite a chrome.windows.create popup, so capturing the window
// itself hangs; the same URL in a tab renders the same page (with a prompt
// id nothing waits on, so its buttons do nothing).
func screenshotPrompt(t testing.TB, promptURL string) {
	t.Helper()
	u, err := url.Parse(promptURL)
	if err != nil {
		t.Fatal(err)
	}
	u.RawQuery = "id=" + screenshotCopy
	copyTab := page(t, u.String())
	waitFor(t, copyTab, promptShown)
	name := "prompt"
	if strings.Contains(u.Fragment, `"tasks"`) {
		name = "workflow-layer-prompt"
	}
	screenshot(t, copyTab, name)
}

// noPromptWithin fails when a prompt window shows up in d.
func noPromptWithin(t testing.TB, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if unansweredPrompt() != nil {
			t.Fatal("a prompt appeared where a remembered answer should have decided")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitInPrompt waits until cond holds in the prompt window tg, and
// returns what expr then says there. An evaluation in a
// chrome.windows.create popup has gone unanswered under load (see
// clickPrompt): each try is bounded and attaches afresh.
func waitInPrompt(t testing.TB, tg *target.Info, cond, expr string) string {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		try := min(time.Until(deadline), 20*time.Second)
		ctx, detach := chromedp.NewContext(browser, chromedp.WithTargetID(tg.TargetID), chromedp.WithDetachOnCancel())
		c, cancel := context.WithTimeout(ctx, try)
		v, err := evalErr[string](c, fmt.Sprintf(`new Promise(r => { const w = () => (location.href.startsWith('chrome-extension:') && (%s)) ? r(String(%s)) : setTimeout(w, 50); w() })`, cond, expr))
		cancel()
		detach()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("in the prompt window %s, %s never held: %v", tg.URL[:min(len(tg.URL), 120)], cond, err)
		}
	}
}

// promptDetails is the prompt a window shows, as the service worker gave
// it (the URL's fragment), and the window's prompt id.
func promptDetails(t testing.TB, tg *target.Info) (details map[string]any, promptID string) {
	t.Helper()
	u, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(u.Fragment), &details); err != nil {
		t.Fatalf("the prompt window's fragment %q: %v", u.Fragment, err)
	}
	return details, u.Query().Get("id")
}
