//go:build linux && e2e

package e2e

// Issue 30, "Prompts a person can trust, and checkpoints the extension
// keeps fresh": one test per finding, each named after it.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/agentgate/nmhost/internal/store"
)

// promptIDOf is the prompt id in a prompt window's URL.
func promptIDOf(t testing.TB, tg *target.Info) string {
	t.Helper()
	u, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("id")
}

// promptCopy opens the prompt window's page in a tab, with the same
// prompt id: its answers count as the window's would, and, unlike the
// window in headless Chromium, it takes many evaluations and key events.
func promptCopy(t testing.TB, tg *target.Info) context.Context {
	t.Helper()
	u, err := url.Parse(tg.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("copy", "1")
	u.RawQuery = q.Encode()
	return page(t, u.String())
}

// openPromptWindows counts the prompt windows open now.
func openPromptWindows(t testing.TB) int {
	t.Helper()
	targets, err := chromedp.Targets(browser)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tg := range targets {
		if isPrompt(tg) {
			n++
		}
	}
	return n
}

// waitPromptGone waits until the window tg is closed.
func waitPromptGone(t testing.TB, tg *target.Info, why string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		targets, _ := chromedp.Targets(browser)
		open := false
		for _, x := range targets {
			if x.TargetID == tg.TargetID {
				open = true
			}
		}
		if !open {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prompt window is still open 10 s after %s", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lateAnswer sends the answer a person would give in the withdrawn window.
func lateAnswer(t testing.TB, ext context.Context, promptID string) reply {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"type": "prompt-answer", "promptId": promptID, "answer": "allow-once"})
	return eval[reply](t, ext, fmt.Sprintf("chrome.runtime.sendMessage(%s)", b))
}

// TestPromptOutlivesTheRunsExecutionTimeout (issue 43): a run's clock
// stands still while its prompt waits for the person (mediator.RunClock;
// a Python run's deadline and the extension's timers too), so a person
// who reads for longer than the agent's whole executionTimeout still has
// their answer count, for WebAssembly and Python alike. Before, the run
// ended at its executionTimeout and withdrew the prompt. A run that is
// stopped still withdraws it (TestModuleRunStopWithdrawsItsPrompt,
// TestPythonStopWithdrawsTheRunsPrompt).
func TestPromptOutlivesTheRunsExecutionTimeout(t *testing.T) {
	ext := page(t, extURL("options.html"))
	// The person reads for longer than the agent's whole executionTimeout.
	read := func(t *testing.T, tg *target.Info) {
		t.Helper()
		<-time.After(4 * time.Second)
		if !targetOpen(tg.TargetID) {
			t.Fatal("the prompt closed with the run's executionTimeout")
		}
		clickPrompt(t, tg, "allow-once")
	}
	t.Run("wasm", func(t *testing.T) {
		prof := pageReaderProfile("e2e-late-wasm", "full")
		prof["capabilities"].(map[string]any)["executionTimeout"] = 3000
		installAgent(t, ext, prof, modules["page-reader"])
		tab, tabID := openTestPage(t, ext)
		status, out := runInPopup(t, tabID, "e2e-late-wasm", "shout", func() { read(t, nextPrompt(t)) })
		if status != "ok" || !strings.Contains(out, "heading changed") {
			t.Fatalf("%s:\n%s", status, out)
		}
		if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "QUIET HEADING" {
			t.Fatalf("the allowed write did not land: %q", h1)
		}
	})
	t.Run("python", func(t *testing.T) {
		prof := pythonProfile("e2e-late-py", "full", []string{"page.write"})
		prof["capabilities"].(map[string]any)["executionTimeout"] = 3000
		installPython(t, ext, prof, "print('asking to write')\nawait restricted_api.setElementText('h1', 'LATE')\nprint('written')\n")
		tab, tabID := openTestPage(t, ext)
		status, out, _ := runPythonInPopup(t, tabID, "e2e-late-py", "", func(popup context.Context) {
			waitLong(t, popup, `document.getElementById('output').textContent.includes('asking to write')`)
			read(t, nextPrompt(t))
		})
		if status != "ok" || !strings.Contains(out, "written") {
			t.Fatalf("%s:\n%s", status, out)
		}
		if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "LATE" {
			t.Fatalf("the allowed write did not land: %q", h1)
		}
	})
}

// startInPopup starts agent from a popup page for the tab and returns the
// popup without waiting for the run's end.
func startInPopup(t testing.TB, tabID int, agent string) context.Context {
	t.Helper()
	popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
	waitFor(t, popup, fmt.Sprintf(`document.querySelector('#agent option[value=%q]')`, agent))
	eval[bool](t, popup, fmt.Sprintf(`(document.getElementById('agent').value = %q, true)`, agent))
	click(t, popup, "run")
	return popup
}

// closeTab closes the tab of ctx, as a person closing the popup does.
func closeTab(t testing.TB, ctx context.Context) {
	t.Helper()
	id := chromedp.FromContext(ctx).Target.TargetID
	if _, err := chromedp.CallBrowser(browser, target.CloseTarget, target.CloseTargetParams{TargetID: id}); err != nil {
		t.Fatal(err)
	}
}

// keptSize is the size of the checkpoint the extension keeps.
func keptSize(t testing.TB, ext context.Context) int64 {
	t.Helper()
	return eval[int64](t, ext, `chrome.storage.local.get('auditCheckpoint').then(x => x.auditCheckpoint ? x.auditCheckpoint.size : -1)`)
}

// restartChain starts a new chain from the options page, so later tests
// find the trail consistent.
func restartChain(t testing.TB) {
	t.Helper()
	opts := page(t, extURL("options.html"))
	waitFor(t, opts, `document.getElementById('audit-status').dataset.state && document.getElementById('audit-status').dataset.state !== 'unknown'`)
	if eval[string](t, opts, `document.getElementById('audit-status').dataset.state`) == "broken" {
		click(t, opts, "audit-restart")
	}
	waitFor(t, opts, `document.getElementById('audit-status').dataset.state === 'consistent'`)
}

// TestFinding2RollbackAfterTheLastCheckShowsBroken: the extension takes a
// checkpoint after the requests it relays, so a rollback to the state
// before two fetches (their records gone) shows as a break in the popup
// and the options page, without waiting for a browser restart.
func TestFinding2RollbackAfterTheLastCheckShowsBroken(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fetched") })
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-rollback", hostOf(web.URL)), nil)
	waitFor(t, ext, `document.getElementById('audit-status').dataset.state === 'consistent'`)
	defer restartChain(t)
	// The state a copy of the data dir would hold: everything up to now.
	ctx := context.Background()
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, copied, _, err := st.AuditCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := hostCall(t, ext, "network-fetch", map[string]any{"agentId": "e2e-rollback", "url": web.URL + "/x"}); !r.Success {
			t.Fatalf("fetch: %s %s", r.Code, r.Error)
		}
	}
	_, after, _, err := st.AuditCheckpoint(ctx)
	if err != nil || after <= copied {
		t.Fatalf("the fetches left no records: %d then %d (%v)", copied, after, err)
	}
	// The extension checks by itself after the requests it relayed.
	deadline := time.Now().Add(15 * time.Second)
	for keptSize(t, ext) < after {
		if time.Now().After(deadline) {
			t.Fatalf("the extension keeps a checkpoint of %d records 15 s after the log reached %d", keptSize(t, ext), after)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The copy comes back: the fetches' records are gone.
	db, err := sql.Open("sqlite", filepath.Join(dataDir, "nmhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM audit WHERE seq > ?; DELETE FROM audit_tree WHERE seq > ?`, copied, copied); err != nil {
		t.Fatal(err)
	}
	popup := page(t, extURL("popup.html"))
	waitFor(t, popup, `document.getElementById('audit-status').dataset.state === 'broken'`)
	if code := eval[string](t, popup, `document.getElementById('audit-status').dataset.code`); code != "audit_truncated" {
		t.Fatalf("the popup says %q (%s)", eval[string](t, popup, `document.getElementById('audit-status').textContent`), code)
	}
	screenshot(t, popup, "popup-audit-broken")
	opts := page(t, extURL("options.html"))
	waitFor(t, opts, `document.getElementById('audit-status').dataset.state === 'broken'`)
}

// TestFinding3KeystrokesMeantForAFormDoNotAnswer: a person typing in a
// form when the prompt opens (Tab, then Space, then Enter) answers
// nothing: no button is a default, and the buttons are inert for a
// moment after the prompt shows and again when it regains focus.
func TestFinding3KeystrokesMeantForAFormDoNotAnswer(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "posted") })
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-keys", hostOf(web.URL)), nil)
	ch := asyncHostCall(ext, "network-fetch", map[string]any{"agentId": "e2e-keys", "url": web.URL + "/form",
		"options": map[string]any{"method": "POST", "body": "x"}})
	tg := nextPrompt(t)
	copyTab := promptCopy(t, tg)
	if err := chromedp.Do(copyTab, chromedp.KeyEvent("\t"), chromedp.KeyEvent(" "), chromedp.KeyEvent("\r")); err != nil {
		// The page went away under the keys: an answer closed it.
		select {
		case r := <-ch:
			t.Fatalf("the keystrokes answered the prompt (%v): the POST got %+v", err, r)
		case <-time.After(10 * time.Second):
			t.Fatal(err)
		}
	}
	// Once the inert moment is over: nothing was answered, nothing holds
	// the focus, and a return of focus makes the buttons inert again.
	waitFor(t, copyTab, `!document.getElementById('deny').disabled`)
	if web.hits.Load() != 0 {
		t.Fatal("the keystrokes allowed the POST")
	}
	if focused := eval[string](t, copyTab, `document.activeElement ? document.activeElement.id : ''`); focused == "allow-once" || focused == "always-allow" {
		t.Fatalf("%s holds the focus", focused)
	}
	if !eval[bool](t, copyTab, `(window.dispatchEvent(new Event('focus')), document.getElementById('allow-once').disabled)`) {
		t.Fatal("the buttons stay live when the prompt regains focus")
	}
	waitFor(t, copyTab, `!document.getElementById('deny').disabled`)
	eval[bool](t, copyTab, `(document.getElementById('deny').click(), true)`)
	if r := <-ch; r.Code != "user_denied" {
		t.Fatalf("the POST got %+v; want user_denied from the click on deny", r)
	}
	if web.hits.Load() != 0 {
		t.Fatal("a denied POST reached the server")
	}
	waitPromptGone(t, tg, "its answer")
}

// TestFinding4AbsentFunctionTouchesAreCountedAndRecordedOnce: touching a
// function the agent was not given counts against the run's call limit,
// and is recorded once per name per run, with how many times.
func TestFinding4AbsentFunctionTouchesAreCountedAndRecordedOnce(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-probe", "none", []string{"console.log"}),
		"n = 0\nfor i in range(12000):\n    try:\n        restricted_api.getPageText\n    except AttributeError:\n        n += 1\nprint('touched', n)\n")
	_, tabID := openTestPage(t, ext)
	status, out, _ := runPythonInPopup(t, tabID, "e2e-py-probe", "", nil)
	if status != "call_limit" {
		t.Fatalf("%s:\n%.2000s", status, out)
	}
	waitForDenial(t, ext, "e2e-py-probe", `"import_not_granted"`)
	r := hostCall(t, ext, "list-denials", map[string]any{"agentId": "e2e-py-probe", "limit": 100})
	var page struct {
		Denials []struct {
			Code    string `json:"code"`
			Context struct {
				Details map[string]string `json:"details"`
			} `json:"context"`
		} `json:"denials"`
	}
	if err := json.Unmarshal(r.Data, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Denials) != 1 || page.Denials[0].Code != "import_not_granted" || page.Denials[0].Context.Details["count"] != "10000" {
		t.Fatalf("want one import_not_granted denial counting 10000 touches; got %d: %.1000s", len(page.Denials), r.Data)
	}
}

// TestFinding5GatheredCallsShareOnePromptWindow: six calls gathered at
// once open one window; the others wait behind it, and it says how many.
func TestFinding5GatheredCallsShareOnePromptWindow(t *testing.T) {
	ext := page(t, extURL("options.html"))
	prof := pythonProfile("e2e-py-six", "full", []string{"page.write"})
	prof["capabilities"].(map[string]any)["executionTimeout"] = 90000
	// Inference is unsure of a gathered call: the set is named.
	prof["permissionSet"] = "mcp-standard"
	// Each call in a task of its own: a call made at the top level is
	// synchronous since issue 25 (docs/python.md), so six of them in a
	// list would be made one after another, not gathered.
	installPython(t, ext, prof, `import asyncio
print("asking six")
async def one(i):
    return await restricted_api.setElementText("h1", f"x{i}")
rs = await asyncio.gather(*[one(i) for i in range(6)], return_exceptions=True)
print("results", " ".join(getattr(r, "code", str(r)) for r in rs))
`)
	tab, tabID := openTestPage(t, ext)
	status, out, _ := runPythonInPopup(t, tabID, "e2e-py-six", "", func(popup context.Context) {
		waitLong(t, popup, `document.getElementById('output').textContent.includes('asking six')`)
		for i := range 6 {
			tg := nextPrompt(t)
			copyTab := promptCopy(t, tg)
			want := 5 - i
			waitFor(t, copyTab, fmt.Sprintf(`document.getElementById('queue').dataset.waiting === '%d'`, want))
			if want > 0 && !strings.Contains(eval[string](t, copyTab, `document.getElementById('queue').textContent`), fmt.Sprint(want)) {
				t.Fatalf("the prompt does not say %d more wait", want)
			}
			if n := openPromptWindows(t); n != 1 {
				t.Fatalf("prompt %d: %d prompt windows are open; want 1", i+1, n)
			}
			clickPrompt(t, tg, "deny")
			waitPromptGone(t, tg, "its answer")
		}
	})
	if status != "ok" || strings.Count(out, "user_denied") != 6 {
		t.Fatalf("%s:\n%s", status, out)
	}
	if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "quiet heading" {
		t.Fatalf("denied writes changed the heading to %q", h1)
	}
}

// TestFinding6RightToLeftOverrideIsShownEscaped: a selector carrying
// U+202E is shown with the character escaped (\u202e), the agent's text
// isolated in a <bdi>, and a long target cut in the middle with the whole
// of it on demand.
func TestFinding6RightToLeftOverrideIsShownEscaped(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-rlo", "full", []string{"page.write"}),
		"print('asking')\nsel = 'h2, [data-x=\"\\u202emoc.elpmaxe.live//:sptth\"], [data-y=\"' + 'a' * 300 + '\"]'\ntry:\n    await restricted_api.setElementText(sel, 'x')\nexcept RestrictedAPIError as e:\n    print('refused', e.code)\n")
	_, tabID := openTestPage(t, ext)
	status, out, _ := runPythonInPopup(t, tabID, "e2e-py-rlo", "", func(popup context.Context) {
		waitLong(t, popup, `document.getElementById('output').textContent.includes('asking')`)
		tg := nextPrompt(t)
		copyTab := promptCopy(t, tg)
		waitFor(t, copyTab, promptShown)
		target := eval[string](t, copyTab, `document.getElementById('target').textContent`)
		if strings.ContainsRune(target, '\u202e') || !strings.Contains(target, `\u202e`) {
			t.Errorf("the target line holds %q; want U+202E escaped as \\u202e", target)
		}
		if !eval[bool](t, copyTab, `getComputedStyle(document.querySelector('#target bdi')).unicodeBidi === 'isolate'`) {
			t.Error("the target is not isolated")
		}
		shown := eval[string](t, copyTab, `document.querySelector('#target bdi').textContent`)
		if len(shown) > 200 || !strings.Contains(shown, "…") {
			t.Errorf("a 370-character target is shown whole: %q", shown)
		}
		if full := eval[string](t, copyTab, `document.querySelector('#target details bdi').textContent`); !strings.Contains(full, strings.Repeat("a", 300)) {
			t.Errorf("the full target is not on demand: %q", full)
		}
		screenshot(t, copyTab, "prompt-escaped")
		clickPrompt(t, tg, "deny")
	})
	if status != "ok" || !strings.Contains(out, "refused user_denied") {
		t.Fatalf("%s:\n%s", status, out)
	}
}

// TestFinding7StorageIsClosedToContentScripts: the extension's storage
// (the kept checkpoint, the current session) cannot be written from the
// content-script world; and a kept checkpoint that is malformed or gone
// is reported as such, never replaced by a new chain without a person.
func TestFinding7StorageIsClosedToContentScripts(t *testing.T) {
	ext := page(t, extURL("options.html"))
	waitFor(t, ext, `document.getElementById('audit-status').dataset.state === 'consistent'`)
	defer restartChain(t)
	installAgent(t, ext, pageReaderProfile("e2e-storage", "read-only"), modules["page-reader"])
	tab, tabID := openTestPage(t, ext)
	worlds := make(chan runtime.ExecutionContextID, 8)
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*runtime.EventExecutionContextCreated); ok && strings.Contains(e.Context.Origin, ExtensionID) {
			select {
			case worlds <- e.Context.ID:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if status, out := runInPopup(t, tabID, "e2e-storage", "", nil); status != "ok" {
		t.Fatalf("%s:\n%s", status, out)
	}
	var world runtime.ExecutionContextID
	select {
	case world = <-worlds:
	case <-time.After(10 * time.Second):
		t.Fatal("the page mediator's world did not show")
	}
	before := eval[string](t, ext, `chrome.storage.local.get('currentSession').then(x => String(x.currentSession))`)
	res, err := chromedp.Run(tab, chromedp.Evaluate[string](`(async () => {
			try { await chrome.storage.local.set({ currentSession: 'evil' }); await chrome.storage.local.remove('auditCheckpoint'); return 'written'; }
			catch (e) { return 'refused: ' + e.message; }
		})()`, chromedp.EvalAwaitPromise, func(p *runtime.EvaluateParams) { p.ContextID = world }))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res, "refused") {
		t.Fatalf("the content-script world wrote the extension's storage: %s", res)
	}
	if after := eval[string](t, ext, `chrome.storage.local.get('currentSession').then(x => String(x.currentSession))`); after != before {
		t.Fatalf("the current session changed from %q to %q", before, after)
	}

	for _, c := range []struct{ name, spoil, code string }{
		{"malformed", `chrome.storage.local.set({ auditCheckpoint: { checkpoint: 'not one', size: 3 } })`, "checkpoint_malformed"},
		{"missing", `chrome.storage.local.remove('auditCheckpoint')`, "checkpoint_missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eval[any](t, ext, c.spoil+`.then(() => null)`)
			opts := page(t, extURL("options.html"))
			waitFor(t, opts, `document.getElementById('audit-status').dataset.state === 'broken'`)
			if code := eval[string](t, opts, `document.getElementById('audit-status').dataset.code`); code != c.code {
				t.Fatalf("the options page says %q (%s); want %s", eval[string](t, opts, `document.getElementById('audit-status').textContent`), code, c.code)
			}
			if kept := eval[string](t, ext, `chrome.storage.local.get('auditCheckpoint').then(x => JSON.stringify(x.auditCheckpoint ?? null))`); c.name == "malformed" && !strings.Contains(kept, "not one") {
				t.Fatalf("the malformed checkpoint was replaced by %s", kept)
			}
		})
	}
}

// TestFinding8PythonOutputIsCappedAndTheTimeoutHolds: a Python agent
// printing 4 x 48 MiB with a 20 s timeout ends with too_large at the
// 1 MiB output limit, well within its timeout, and the popup stays
// responsive.
func TestFinding8PythonOutputIsCappedAndTheTimeoutHolds(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-flood", "none", []string{}),
		"print('flooding')\nfor i in range(4):\n    print('x' * (48 << 20))\nprint('finished')\n")
	_, tabID := openTestPage(t, ext)
	status, out, timings := runPythonInPopup(t, tabID, "e2e-py-flood", "", nil)
	var tm struct {
		RunMs float64 `json:"runMs"`
	}
	json.Unmarshal([]byte(timings), &tm)
	if status != "too_large" || strings.Contains(out, "finished") {
		t.Fatalf("%s after %v ms:\n%.300s", status, tm.RunMs, out)
	}
	if len(out) > 1<<20+500 {
		t.Fatalf("the popup shows %d bytes of output; the limit is 1 MiB", len(out))
	}
	if tm.RunMs > 20000 {
		t.Fatalf("the run took %v ms; its timeout is 20000", tm.RunMs)
	}
}
