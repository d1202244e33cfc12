//go:build linux

package e2e

import (
	"context"
	"fmt"
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

func installPython(t *testing.T, ext context.Context, profile map[string]any, source string) {
	t.Helper()
	if r := hostCall(t, ext, "install-agent", map[string]any{"profile": profile, "module": source}); !r.Success {
		t.Fatalf("install-agent %v: %s %s", profile["agentId"], r.Code, r.Error)
	}
}

// runPythonInPopup runs a Python agent from the popup opened for the tab
// and waits for the end of the run, Pyodide's load included.
func runPythonInPopup(t *testing.T, tabID int, agent, input string, answer func()) (status, output, timings string) {
	t.Helper()
	popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
	waitFor(t, popup, fmt.Sprintf(`document.querySelector('#agent option[value=%q]')`, agent))
	eval[bool](t, popup, fmt.Sprintf(`(document.getElementById('agent').value = %q, document.getElementById('input').value = %q, true)`, agent, input))
	click(t, popup, "run")
	if answer != nil {
		answer()
	}
	waitLong(t, popup, `document.getElementById('output').dataset.status`)
	return eval[string](t, popup, `document.getElementById('output').dataset.status`),
		eval[string](t, popup, `document.getElementById('output').textContent`),
		eval[string](t, popup, `document.getElementById('output').dataset.timings || ''`)
}

// waitLong is waitFor with room for Pyodide's first load.
func waitLong(t *testing.T, ctx context.Context, cond string) {
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
