//go:build linux && e2e

package e2e

// Issue 38, finding 6: a workflow plan's prompt shows every task's
// operation and target at the size the window opens with.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// promptWidth is the width extension/prompts.js opens a prompt window with.
const promptWidth = 520

// planLayout is what the plan's prompt window measures of itself.
type planLayout struct {
	InnerWidth, ScrollWidth, ClientWidth float64
	// Shown has, for each text looked for, the line boxes of every
	// innermost element holding it.
	Shown map[string][][]struct{ Left, Right float64 }
}

// measurePlan is evaluated in the prompt window: the page's widths and
// where each of texts is drawn. It looks texts up by content, not by
// markup, so it measures any layout of the tasks.
func measurePlan(texts []string) string {
	b, _ := json.Marshal(texts)
	return fmt.Sprintf(`JSON.stringify((() => {
  const de = document.documentElement;
  const shown = {};
  for (const text of %s) {
    const all = [...document.querySelectorAll('#layer *')].filter((el) => el.textContent.includes(text));
    const inner = all.filter((el) => ![...el.children].some((c) => c.textContent.includes(text)));
    shown[text] = inner.map((el) => [...el.getClientRects()].map((r) => ({ left: r.left, right: r.right })));
  }
  return { innerWidth, scrollWidth: de.scrollWidth, clientWidth: de.clientWidth, shown };
})())`, b)
}

// TestPlanPromptShowsEveryTargetWithoutScrolling: a plan of three
// requests with long URLs opens its prompt window; at the 520 px it opens
// with (and 40 px less) the page is no wider than the window, and every
// task's operation and whole target are drawn inside it.
func TestPlanPromptShowsEveryTargetWithoutScrolling(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	ext := page(t, extURL("options.html"))
	installAgent(t, ext, fetcherProfile("e2e-plan-wide", hostOf(web.URL)), nil)
	long := "/reports/2026/quarterly-summary-for-the-regional-offices/" + strings.Repeat("x", 40)
	call := func(id, method, path string, deps ...string) map[string]any {
		return map[string]any{"id": id, "dependsOn": deps, "call": map[string]any{"agentId": "e2e-plan-wide", "operation": "network.fetch",
			"method": method, "url": web.URL + path, "body": "x"}}
	}
	wf := map[string]any{"id": "e2e-plan-wide", "tasks": []map[string]any{
		call("upload-the-quarterly-summary", "POST", long+"/a"),
		call("replace-the-regional-index", "PUT", long+"/b", "upload-the-quarterly-summary"),
		call("announce-it", "POST", long+"/c", "replace-the-regional-index"),
	}}
	b, _ := json.Marshal(map[string]any{"type": "host", "request": map[string]any{"type": "run-workflow", "workflow": wf}})
	result := make(chan string, 1)
	go func() {
		r, err := evalErr[string](ext, fmt.Sprintf("chrome.runtime.sendMessage(%s).then(JSON.stringify)", b))
		if err != nil {
			r = "error: " + err.Error()
		}
		result <- r
	}()
	tg := nextPrompt(t)
	// Headless Chromium opens a popup window at its own default width
	// whatever the extension asked: the window is given the size the
	// extension opens it with (promptWidth), then 40 px less, as a window
	// manager's frame takes, and measured in place.
	win, err := chromedp.CallBrowser(browser, cdpbrowser.GetWindowForTarget, cdpbrowser.GetWindowForTargetParams{TargetID: tg.TargetID})
	if err != nil {
		t.Fatal(err)
	}
	targets := []string{"POST " + web.URL + long + "/a", "PUT " + web.URL + long + "/b", "POST " + web.URL + long + "/c"}
	for _, width := range []int64{promptWidth, promptWidth - 40} {
		t.Run(fmt.Sprintf("%dpx", width), func(t *testing.T) {
			if _, err := chromedp.CallBrowser(browser, cdpbrowser.SetWindowBounds, cdpbrowser.SetWindowBoundsParams{WindowID: win.WindowID, Bounds: &cdpbrowser.Bounds{Width: width, Height: 600}}); err != nil {
				t.Fatal(err)
			}
			raw := waitInPrompt(t, tg, fmt.Sprintf("%s && document.readyState === 'complete' && innerWidth === %d", promptShown, width), measurePlan(append([]string{"network.fetch"}, targets...)))
			var got planLayout
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("the window's measures %q: %v", raw, err)
			}
			t.Logf("window %v px, page %v px wide in %v", got.InnerWidth, got.ScrollWidth, got.ClientWidth)
			if got.ScrollWidth > got.ClientWidth {
				t.Errorf("the plan is %v px wide in a %v px window: the person must scroll sideways", got.ScrollWidth, got.ClientWidth)
			}
			for text, want := range map[string]int{"network.fetch": 3, targets[0]: 1, targets[1]: 1, targets[2]: 1} {
				els := got.Shown[text]
				if len(els) != want {
					t.Errorf("%q is shown in %d places; want %d", text, len(els), want)
				}
				for _, lines := range els {
					if len(lines) == 0 {
						t.Errorf("%q is not drawn", text)
					}
					for _, r := range lines {
						if r.Left < 0 || r.Right > got.ClientWidth {
							t.Errorf("%q is drawn from %v to %v px, outside the %v px window", text, r.Left, r.Right, got.ClientWidth)
						}
					}
				}
			}
		})
	}
	// What the person sees, at the opening width: the same page in a tab
	// (capturing the popup window itself hangs, see screenshotPrompt).
	copyTab := promptCopy(t, tg)
	waitFor(t, copyTab, promptShown)
	if _, err := chromedp.Call(copyTab, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: promptWidth, Height: 600, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	screenshot(t, copyTab, "plan-prompt")
	clickPrompt(t, tg, "deny")
	if r := <-result; !strings.Contains(r, "user_denied") {
		t.Fatalf("run-workflow after deny: %s", r)
	}
}
