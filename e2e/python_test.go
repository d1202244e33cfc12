//go:build linux && e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pythonProfile is a Python agent's profile: Pyodide needs more memory
// than the 16 MiB default a module gets.
func pythonProfile(id, dom string, perms []string, hosts ...string) map[string]any {
	return map[string]any{
		"agentId": id, "runtime": "python",
		"permissions": map[string]any{"required": perms},
		"capabilities": map[string]any{"domAccess": dom, "networkAccess": len(hosts) > 0, "allowedHosts": hosts,
			"maxMemory": 268435456, "executionTimeout": 20000},
	}
}

func installPython(t testing.TB, ext context.Context, profile map[string]any, source string) {
	t.Helper()
	if r := hostCall(t, ext, "install-agent", map[string]any{"profile": profile, "module": source}); !r.Success {
		t.Fatalf("install-agent %v: %s %s", profile["agentId"], r.Code, r.Error)
	}
}

// runPythonInPopup runs a Python agent from the popup opened for the tab
// and waits for the end of the run, Pyodide's load included.
func runPythonInPopup(t testing.TB, tabID int, agent, input string, answer func(popup context.Context)) (status, output, timings string) {
	t.Helper()
	popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
	waitFor(t, popup, fmt.Sprintf(`document.querySelector('#agent option[value=%q]')`, agent))
	eval[bool](t, popup, fmt.Sprintf(`(document.getElementById('agent').value = %q, document.getElementById('input').value = %q, true)`, agent, input))
	click(t, popup, "run")
	if answer != nil {
		answer(popup)
	}
	waitLong(t, popup, `document.getElementById('output').dataset.status`)
	return eval[string](t, popup, `document.getElementById('output').dataset.status`),
		eval[string](t, popup, `document.getElementById('output').textContent`),
		eval[string](t, popup, `document.getElementById('output').dataset.timings || ''`)
}

// waitLong is waitFor with room for Pyodide's first load.
func waitLong(t testing.TB, ctx context.Context, cond string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 150*time.Second)
	defer cancel()
	if _, err := chromedp.Run(c, chromedp.Evaluate[bool](fmt.Sprintf(`new Promise(r => { const w = () => (%s) ? r(true) : setTimeout(w, 50); w() })`, cond), chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("waiting for %s: %v", cond, err)
	}
}

const pyReader = `text = await restricted_api.getPageText()
print(f"{len(text.split())} words")
h = await restricted_api.querySelector("h1")
restricted_api.log("heading:", h.get("text"))
try:
    await restricted_api.setElementText("h1", "CHANGED")
    print("heading changed")
except RestrictedAPIError as e:
    print("cannot change the heading:", e.code)
`

func TestPythonAgentReadsThePageAndIsRefusedAWrite(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-reader", "read-only", []string{"page.read", "page.write", "console.log"}), pyReader)
	tab, tabID := openTestPage(t, ext)
	status, out, timings := runPythonInPopup(t, tabID, "e2e-py-reader", "", nil)
	t.Logf("timings %s", timings)
	if status != "ok" || !strings.Contains(out, "5 words") || !strings.Contains(out, "heading: quiet heading") ||
		!strings.Contains(out, "cannot change the heading: permission_not_granted") {
		t.Fatalf("%s:\n%s", status, out)
	}
	if h1 := eval[string](t, tab, `document.querySelector('h1').textContent`); h1 != "quiet heading" {
		t.Fatalf("a read-only Python agent changed the heading to %q", h1)
	}
	waitForDenial(t, ext, "e2e-py-reader", `"permission_not_granted"`)
}

func TestPythonAgentFetchesOnlyAllowedHosts(t *testing.T) {
	canary := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	allowed := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go" {
			http.Redirect(w, r, canary.URL+"/stolen", http.StatusFound)
			return
		}
		io.WriteString(w, `{"greeting": "hello from the allowed host"}`)
	})
	src := fmt.Sprintf(`r = await restricted_api.fetch(%q)
print("allowed:", r.status, r.json()["greeting"])
for url in (%q, %q):
    try:
        await restricted_api.fetch(url)
        print("fetched", url)
    except RestrictedAPIError as e:
        print("denied:", e.code)
`, allowed.URL+"/data.json", canary.URL+"/steal", allowed.URL+"/go")
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-fetch", "none", []string{"network.fetch"}, hostOf(allowed.URL)), src)
	_, tabID := openTestPage(t, ext)
	status, out, _ := runPythonInPopup(t, tabID, "e2e-py-fetch", "", nil)
	if status != "ok" || !strings.Contains(out, "allowed: 200 hello from the allowed host") || strings.Count(out, "denied: host_not_allowed") != 2 {
		t.Fatalf("%s:\n%s", status, out)
	}
	if canary.hits.Load() != 0 || allowed.hits.Load() != 2 {
		t.Fatalf("canary hits %d (want 0), allowed hits %d (want 2)", canary.hits.Load(), allowed.hits.Load())
	}
	waitForDenial(t, ext, "e2e-py-fetch", `"host_not_allowed"`)
}

const pyClipboard = `print("asking for the clipboard")
ok = await restricted_api.writeToClipboard("note from python")
print("written:", ok)
try:
    restricted_api.readFromClipboard
    print("readFromClipboard is present")
except AttributeError as e:
    print("absent:", e)
`

func TestPythonClipboardPromptAndAbsentFunction(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-clip", "none", []string{"clipboard.write"}), pyClipboard)
	_, tabID := openTestPage(t, ext)
	status, out, _ := runPythonInPopup(t, tabID, "e2e-py-clip", "", func(popup context.Context) {
		// Pyodide loads first: the prompt comes once the agent runs.
		waitLong(t, popup, `document.getElementById('output').textContent.includes('asking for the clipboard')`)
		answerPrompt(t, "allow-once")
	})
	if status != "ok" || !strings.Contains(out, "written: True") || !strings.Contains(out, "absent: restricted_api has no 'readFromClipboard'") {
		t.Fatalf("%s:\n%s", status, out)
	}
	waitForDenial(t, ext, "e2e-py-clip", `"import_not_granted"`)
	r := hostCall(t, ext, "list-audit", map[string]any{"tail": true, "limit": 50})
	if !strings.Contains(string(r.Data), `"e2e-py-clip"`) || !strings.Contains(string(r.Data), `"clipboard.write"`) {
		t.Fatalf("the clipboard write is not in the audit trail: %.2000s", r.Data)
	}
	// The denial shows in the viewer with the agent's id, like any other.
	view := page(t, startViewer(t, dataDir))
	waitFor(t, view, `document.querySelector('#denials tbody tr[data-agent="e2e-py-clip"]') !== null`)
	screenshot(t, view, "viewer-python")
}

func TestPythonInfiniteLoopIsStoppedAndTheNextRunWorks(t *testing.T) {
	ext := page(t, extURL("options.html"))
	prof := pythonProfile("e2e-py-loop", "none", []string{})
	prof["capabilities"].(map[string]any)["executionTimeout"] = 3000
	installPython(t, ext, prof, "if agent_input == 'loop':\n    while True:\n        pass\nprint('fine')\n")
	_, tabID := openTestPage(t, ext)
	status, out, timings := runPythonInPopup(t, tabID, "e2e-py-loop", "loop", nil)
	if status != "timeout" || !strings.Contains(out, "executionTimeout of 3000 ms") {
		t.Fatalf("%s:\n%s", status, out)
	}
	t.Logf("stopped run: %s", timings)
	status, out, timings = runPythonInPopup(t, tabID, "e2e-py-loop", "", nil)
	if status != "ok" || !strings.Contains(out, "fine") {
		t.Fatalf("the run after a stopped one: %s:\n%s", status, out)
	}
	t.Logf("next run: %s", timings)
}

// pyEscape tries, for each thing the sandbox must not offer, every way
// Python has to the JavaScript world: the js module, the Pyodide API
// object, code run as JavaScript, and the Function constructor.
const pyEscape = `import js
names = ["chrome", "fetch", "XMLHttpRequest", "WebSocket", "importScripts"]
tricks = {
    "js": lambda n: getattr(js, n),
    "from js import": lambda n: __import__("js", fromlist=[n]).__dict__[n],
}
try:
    import pyodide_js
    tricks["pyodide_js"] = lambda n: getattr(pyodide_js, n)
    tricks["pyodide_js._module"] = lambda n: getattr(pyodide_js._module, n)
    tricks["Function constructor"] = lambda n: pyodide_js.loadPackage.constructor("return typeof " + n + " === 'undefined' ? undefined : " + n)()
except Exception as e:
    print("no pyodide_js:", type(e).__name__)
try:
    from pyodide.code import run_js
    tricks["run_js"] = lambda n: run_js(n)
except Exception as e:
    print("no run_js:", type(e).__name__)
try:
    from pyodide.ffi import create_proxy
    p = create_proxy(lambda: 0)
    tricks["ffi proxy constructor"] = lambda n: p.constructor.constructor("return " + n)()
except Exception as e:
    print("no ffi proxy:", type(e).__name__)
for n in names:
    reached = []
    for trick, f in tricks.items():
        try:
            v = f(n)
            if v is not None and str(v) != "undefined":
                reached.append(trick)
        except BaseException:
            pass
    print(n + ":", "REACHED via " + ", ".join(reached) if reached else "unreachable")
print("tricks:", len(tricks))
`

func TestPythonReachesNothingOfTheBrowser(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-escape", "none", []string{}), pyEscape)
	_, tabID := openTestPage(t, ext)
	status, out, _ := runPythonInPopup(t, tabID, "e2e-py-escape", "", nil)
	t.Logf("%s", out)
	if status != "ok" || strings.Contains(out, "REACHED") || !strings.Contains(out, "tricks: ") {
		t.Fatalf("%s:\n%s", status, out)
	}
	for _, n := range []string{"chrome", "fetch", "XMLHttpRequest", "WebSocket", "importScripts"} {
		t.Run(n, func(t *testing.T) {
			if !strings.Contains(out, n+": unreachable") {
				t.Errorf("%s was not shown unreachable:\n%s", n, out)
			}
		})
	}
}

func TestPythonAgentRunsFromTheOptionsPage(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installPython(t, ext, pythonProfile("e2e-py-options", "read-only", []string{"page.read"}),
		"print('hello from the options page')\ntry:\n    await restricted_api.getPageText()\nexcept RestrictedAPIError as e:\n    print('page:', e.code)\n")
	opts := page(t, extURL("options.html"))
	waitFor(t, opts, `document.querySelector('#py-agent option[value="e2e-py-options"]')`)
	eval[bool](t, opts, `(document.getElementById('py-agent').value = 'e2e-py-options', document.getElementById('py-run').click(), true)`)
	waitLong(t, opts, `document.getElementById('py-output').dataset.status`)
	status := eval[string](t, opts, `document.getElementById('py-output').dataset.status`)
	out := eval[string](t, opts, `document.getElementById('py-output').textContent`)
	// Bound to no tab: the page call is refused ("this run has no tab to act on").
	if status != "ok" || !strings.Contains(out, "hello from the options page") || !strings.Contains(out, "page: bad_request") {
		t.Fatalf("%s:\n%s", status, out)
	}
}
