//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

const testPage = `<!doctype html><html><head><title>E2E page</title></head>
<body><h1>quiet heading</h1><p>three more words</p></body></html>`

// openTestPage serves the test page on loopback, opens it in a tab, clicks
// the extension's action on it (the activeTab grant a run needs) and
// returns the tab's context and id.
func openTestPage(t testing.TB, ext context.Context) (context.Context, int) {
	t.Helper()
	web := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, testPage)
	})
	tab := page(t, web.URL+"/page.html")
	return tab, grantActiveTab(t, ext, web.URL+"/page.html")
}

// runInPopup runs an agent from the popup, opened as a page for the tab,
// and returns once the run is over: its status and output.
func runInPopup(t testing.TB, tabID int, agent, input string, answer func()) (status, output string) {
	t.Helper()
	popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
	waitFor(t, popup, fmt.Sprintf(`document.querySelector('#agent option[value=%q]')`, agent))
	eval[bool](t, popup, fmt.Sprintf(`(document.getElementById('agent').value = %q, document.getElementById('input').value = %q, true)`, agent, input))
	click(t, popup, "run")
	if answer != nil {
		answer()
	}
	waitFor(t, popup, `document.getElementById('output').dataset.status`)
	return eval[string](t, popup, `document.getElementById('output').dataset.status`),
		eval[string](t, popup, `document.getElementById('output').textContent`)
}

func pageReaderProfile(id, dom string) map[string]any {
	return map[string]any{
		"agentId":      id,
		"permissions":  map[string]any{"required": []string{"page.read", "page.write"}},
		"capabilities": map[string]any{"domAccess": dom, "maxMemory": 33554432, "executionTimeout": 20000},
	}
}

func TestAgentReadsAndWritesThePage(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, pageReaderProfile("e2e-page-full", "full"), modules["page-reader"])
	tab, tabID := openTestPage(t, ext)
	// Writing the page needs confirmation: the prompt shows, we allow once.
	status, out := runInPopup(t, tabID, "e2e-page-full", "shout", func() { answerPrompt(t, "allow-once") })
	if status != "ok" || !strings.Contains(out, `"E2E page" has 5 words`) || !strings.Contains(out, "heading changed") {
		t.Fatalf("%s:\n%s", status, out)
	}
	if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "QUIET HEADING" {
		t.Fatalf("the page's heading is %q", h1)
	}
}

func TestReadOnlyAgentCannotWriteThePage(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, pageReaderProfile("e2e-page-ro", "read-only"), modules["page-reader"])
	tab, tabID := openTestPage(t, ext)
	status, out := runInPopup(t, tabID, "e2e-page-ro", "shout", nil)
	if status != "ok" || !strings.Contains(out, "heading: quiet heading") || !strings.Contains(out, "cannot change the heading: permission_not_granted") {
		t.Fatalf("%s:\n%s", status, out)
	}
	if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "quiet heading" {
		t.Fatalf("a read-only agent changed the heading to %q", h1)
	}
	r := hostCall(t, ext, "list-denials", map[string]any{"agentId": "e2e-page-ro"})
	if !strings.Contains(string(r.Data), `"permission_not_granted"`) {
		t.Fatalf("denial not in the log: %s", r.Data)
	}
}

func TestClipboardRoundTripThroughTheOffscreenDocument(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, map[string]any{
		"agentId":      "e2e-clip",
		"permissions":  map[string]any{"required": []string{"clipboard.write", "clipboard.read"}},
		"capabilities": map[string]any{"maxMemory": 33554432, "executionTimeout": 30000},
	}, modules["clipboard-note"])
	_, tabID := openTestPage(t, ext)
	status, out := runInPopup(t, tabID, "e2e-clip", "hello clipboard", func() {
		answerPrompt(t, "allow-once") // clipboard.write
		answerPrompt(t, "allow-once") // clipboard.read: always asks
	})
	if status != "ok" || !strings.Contains(out, `clipboard holds "hello clipboard"`) {
		t.Fatalf("%s:\n%s", status, out)
	}
}

// asyncHostCall runs a host call that will wait for a prompt.
func asyncHostCall(ext context.Context, typ string, params map[string]any) <-chan reply {
	ch := make(chan reply, 1)
	go func() {
		req := map[string]any{"type": typ}
		for k, v := range params {
			req[k] = v
		}
		b, _ := json.Marshal(map[string]any{"type": "host", "request": req})
		var r reply
		c, cancel := context.WithTimeout(ext, 90*time.Second)
		defer cancel()
		if v, err := evalErr[reply](c, fmt.Sprintf("chrome.runtime.sendMessage(%s)", b)); err != nil {
			r = reply{Code: "e2e_error", Error: err.Error()}
		} else {
			r = v
		}
		ch <- r
	}()
	return ch
}

func TestRememberedAnswers(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Method+" done") })
	ext := page(t, extURL("options.html"))
	// Two agents: an answer is remembered per agent, operation and host
	// (not per method), so one agent's "always allow" for a POST would
	// also let its DELETE to that host through.
	installAgent(t, ext, fetcherProfile("e2e-remember", hostOf(web.URL)), nil)
	installAgent(t, ext, fetcherProfile("e2e-remember-block", hostOf(web.URL)), nil)
	post := map[string]any{"agentId": "e2e-remember", "url": web.URL + "/form", "options": map[string]any{"method": "POST", "body": "x"}}
	del := map[string]any{"agentId": "e2e-remember-block", "url": web.URL + "/thing", "options": map[string]any{"method": "DELETE"}}

	t.Run("always allow", func(t *testing.T) {
		ch := asyncHostCall(ext, "network-fetch", post)
		tg := nextPrompt(t)
		// The prompt says what "always" would cover: the method and the
		// canonical origin, port written out.
		shown, err := url.PathUnescape(tg.URL[strings.Index(tg.URL, "#")+1:])
		if err != nil || !strings.Contains(shown, `"rememberAs":"POST `+web.URL+`"`) {
			t.Fatalf("prompt details %s (%v); want rememberAs POST %s", shown, err, web.URL)
		}
		clickPrompt(t, tg, "always-allow")
		if r := <-ch; !r.Success {
			t.Fatalf("first POST: %s %s", r.Code, r.Error)
		}
		ch = asyncHostCall(ext, "network-fetch", post)
		noPromptWithin(t, 1500*time.Millisecond)
		if r := <-ch; !r.Success {
			t.Fatalf("second POST: %s %s", r.Code, r.Error)
		}
	})
	t.Run("always block", func(t *testing.T) {
		before := web.hits.Load()
		ch := asyncHostCall(ext, "network-fetch", del)
		answerPrompt(t, "always-block")
		if r := <-ch; r.Code != "blocked_by_user" {
			t.Fatalf("first DELETE: %s %s", r.Code, r.Error)
		}
		ch = asyncHostCall(ext, "network-fetch", del)
		noPromptWithin(t, 1500*time.Millisecond)
		if r := <-ch; r.Code != "blocked_by_user" {
			t.Fatalf("second DELETE: %s %s", r.Code, r.Error)
		}
		if web.hits.Load() != before {
			t.Fatal("a blocked DELETE reached the server")
		}
	})
	for agent, answer := range map[string]string{"e2e-remember": "always-allow", "e2e-remember-block": "always-block"} {
		r := hostCall(t, ext, "list-preferences", map[string]any{"agentId": agent})
		if !strings.Contains(string(r.Data), `"answer":"`+answer+`"`) {
			t.Errorf("preferences of %s: %s", agent, r.Data)
		}
	}
}

func TestExtensionPagesHaveNoConsoleErrors(t *testing.T) {
	// page() fails the test on any exception or console.error of an
	// extension page; open each page a person sees, with data in it.
	ext := page(t, extURL("options.html"))
	waitFor(t, ext, `document.getElementById('status').textContent.startsWith('updated')`)
	screenshot(t, ext, "options-page")
	page(t, extURL("popup.html"))
	page(t, extURL("prompt.html?id=none#%7B%22agentId%22%3A%22demo%22%7D"))
}

// injectMediator injects the page mediator into the tab as a run's binding
// does, and returns the document id and origin it reports.
func injectMediator(t testing.TB, ext context.Context, tabID int) (documentID, origin string) {
	t.Helper()
	var res []struct {
		DocumentID string `json:"documentId"`
		Result     string `json:"result"`
	}
	raw := eval[string](t, ext, fmt.Sprintf(`chrome.scripting.executeScript({target: {tabId: %d}, files: ['content.js']}).then(JSON.stringify)`, tabID))
	if err := json.Unmarshal([]byte(raw), &res); err != nil || len(res) != 1 || res[0].DocumentID == "" || res[0].Result == "" {
		t.Fatalf("injection reported %s (%v)", raw, err)
	}
	return res[0].DocumentID, res[0].Result
}

// sendToPage sends a page call to the mediator in one document, as the
// service worker does, and returns its answer.
func sendToPage(t testing.TB, ext context.Context, tabID int, documentID string, msg map[string]any) reply {
	t.Helper()
	b, _ := json.Marshal(msg)
	var r reply
	if err := json.Unmarshal([]byte(eval[string](t, ext, fmt.Sprintf("chrome.tabs.sendMessage(%d, %s, {frameId: 0, documentId: %q}).then(JSON.stringify)", tabID, b, documentID))), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The content script enforces domAccess itself (layer 1), whatever the
// host decided: this sends it a write directly, as a confused or
// compromised service worker would, and checks it refuses. It records
// nothing itself: its refusals reach the denial log as its answers to a
// run's calls (TestContentWorldRecordsAreTheRunsAndBounded).
func TestContentScriptRefusesWritesTheProfileForbids(t *testing.T) {
	ext := page(t, extURL("options.html"))
	tab, tabID := openTestPage(t, ext)
	documentID, origin := injectMediator(t, ext, tabID)
	// "" and "FULL" (not the exact word) must deny like "none".
	for i, dom := range []string{"read-only", "none", "", "FULL"} {
		t.Run("domAccess="+dom, func(t *testing.T) {
			agent := fmt.Sprintf("e2e-layer1-%d", i)
			r := sendToPage(t, ext, tabID, documentID, map[string]any{"type": "agentgate-call", "call": "page.write.setElementText", "agentId": agent,
				"domAccess": dom, "origin": origin, "params": map[string]any{"selector": "h1", "text": "owned"}})
			if r.Success || r.Code != "permission_not_granted" {
				t.Fatalf("layer 1 answered %+v", r)
			}
			if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "quiet heading" {
				t.Fatalf("the heading became %q", h1)
			}
		})
	}
	// The page checks the run's origin itself too: a call for another
	// origin is refused even when it reaches this document.
	for _, claimed := range []string{"http://127.0.0.1:1", "", "null"} {
		t.Run("origin="+claimed, func(t *testing.T) {
			r := sendToPage(t, ext, tabID, documentID, map[string]any{"type": "agentgate-call", "call": "page.write.setElementText", "agentId": "e2e-layer1-origin",
				"domAccess": "full", "origin": claimed, "params": map[string]any{"selector": "h1", "text": "owned"}})
			if r.Success || r.Code != "page_changed" {
				t.Fatalf("a call for %q answered %+v", claimed, r)
			}
			if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "quiet heading" {
				t.Fatalf("the heading became %q", h1)
			}
		})
	}
}

// waitForDenial waits until the host's denial log has a denial of agent
// whose JSON contains want.
func waitForDenial(t testing.TB, ext context.Context, agent, want string) {
	t.Helper()
	deadline := time.Now().Add(guard)
	var last string
	for time.Now().Before(deadline) {
		last = string(hostCall(t, ext, "list-denials", map[string]any{"agentId": agent}).Data)
		if strings.Contains(last, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no denial of %s with %s in the log: %s", agent, want, last)
}

func TestClosingThePromptDenies(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-prompt-closed", hostOf(web.URL)), nil)
	ch := asyncHostCall(ext, "network-fetch", map[string]any{"agentId": "e2e-prompt-closed", "url": web.URL + "/form",
		"options": map[string]any{"method": "PUT", "body": "x"}})
	tg := nextPrompt(t)
	if _, err := chromedp.CallBrowser(browser, target.CloseTarget, target.CloseTargetParams{TargetID: tg.TargetID}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.Code != "user_denied" {
			t.Fatalf("closed prompt: %s %s", r.Code, r.Error)
		}
	case <-time.After(10 * time.Second): // the host's own timeout is a minute
		t.Fatal("closing the prompt did not deny at once")
	}
	if web.hits.Load() != 0 {
		t.Fatalf("the PUT reached the server %d times", web.hits.Load())
	}
}

// TestOptionsPageShowsThePermissionSet: an agent installed without a set
// gets the one its module needs, inferred, and the options page shows it
// beside the grants with how sure the host was; one that names a set too
// small for what it requires is refused.
func TestOptionsPageShowsThePermissionSet(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, pageReaderProfile("e2e-set", "full"), modules["page-reader"])
	small := pageReaderProfile("e2e-set-small", "full")
	small["permissionSet"] = "readonly"
	r := hostCall(t, ext, "install-agent", map[string]any{"profile": small})
	if r.Success || r.Code != "permission_outside_set" {
		t.Fatalf("a set below the required permissions was accepted: %+v", r)
	}
	opts := page(t, extURL("options.html"))
	waitFor(t, opts, `document.querySelector('tr[data-agent="e2e-set"] .permission-set')?.textContent === 'mcp-standard (inferred, 1.00)'`)
}
