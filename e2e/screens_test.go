//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// The extension's screens as a person sees them (issue 43): each at the
// size its window opens with, measured (nothing drawn past the window's
// edges, no sideways scrolling, the primary action visible without
// scrolling), checked by axe-core for accessibility (no serious or
// critical violation), and kept as a screenshot in the artifacts
// directory (logged as the tests start).

// layout is what a screen measures of itself.
type layout struct {
	ScrollWidth, ClientWidth, InnerHeight float64
	// Outside lists the elements drawn past the window's left or right edge.
	Outside []string
	// Primary is where the primary action is drawn; Shown whether all of
	// it is inside the window, with no scrolling.
	Primary struct {
		Found, Shown bool
		Top, Bottom  float64
	}
}

const measureLayout = `JSON.stringify((() => {
  const de = document.documentElement;
  const w = de.clientWidth;
  const out = { scrollWidth: de.scrollWidth, clientWidth: w, innerHeight, outside: [], primary: { found: false, shown: false } };
  for (const el of document.querySelectorAll('body *')) {
    if (!el.getClientRects().length || getComputedStyle(el).visibility === 'hidden') continue;
    // Inside a box that scrolls by design (output, commands): that box is measured, not its lines.
    if (el.closest('pre') && el.tagName !== 'PRE') continue;
    const r = el.getBoundingClientRect();
    if (r.right > w + 0.5 || r.left < -0.5) out.outside.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
  const p = PRIMARY ? document.querySelector(PRIMARY) : null;
  if (p && p.getClientRects().length) {
    const r = p.getBoundingClientRect();
    out.primary = { found: true, shown: r.top >= 0 && r.bottom <= innerHeight && r.left >= 0 && r.right <= w, top: r.top, bottom: r.bottom };
  }
  return out;
})())`

// axeSource is axe-core's script, installed by scripts/fetch-axe.sh at
// the version tools/axe/package-lock.json pins.
var axeSource = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("bash", "../scripts/fetch-axe.sh").Output()
	if err != nil {
		return "", fmt.Errorf("scripts/fetch-axe.sh: %v", err)
	}
	b, err := os.ReadFile(strings.TrimSpace(string(out)))
	return string(b), err
})

// violation is one rule axe-core found broken, with where.
type violation struct {
	ID, Impact, Help string
	Nodes            []string
}

// checkScreen sizes ctx's tab to width x height, measures it, checks it
// with axe-core and keeps a screenshot named name. primary is the CSS
// selector of the action that must be visible without scrolling (” for a
// screen without one).
func checkScreen(t *testing.T, ctx context.Context, name string, width, height int64, primary string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: width, Height: height, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, fmt.Sprintf("innerWidth === %d", width))
	p, _ := json.Marshal(primary)
	var got layout
	if err := json.Unmarshal([]byte(eval[string](t, ctx, strings.Replace(measureLayout, "PRIMARY", string(p), 2))), &got); err != nil {
		t.Fatal(err)
	}
	if got.ScrollWidth > got.ClientWidth {
		t.Errorf("%s: %v px wide in a %v px window: the person must scroll sideways", name, got.ScrollWidth, got.ClientWidth)
	}
	for _, o := range got.Outside {
		t.Errorf("%s: drawn past the window's edge: %s", name, o)
	}
	if primary != "" && !got.Primary.Shown {
		t.Errorf("%s: the primary action %s is not visible without scrolling (found %v, %v..%v px in %v)", name, primary, got.Primary.Found, got.Primary.Top, got.Primary.Bottom, got.InnerHeight)
	}
	src, err := axeSource()
	if err != nil {
		t.Fatal(err)
	}
	if !eval[bool](t, ctx, fmt.Sprintf("(() => { if (!window.axe) { %s\n }; return !!window.axe })()", src)) {
		t.Fatal("axe-core did not load")
	}
	raw := eval[string](t, ctx, `axe.run(document, { resultTypes: ['violations'] }).then(r => JSON.stringify(r.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ')) }))))`)
	var vs []violation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("%s: axe-core: %s (%s): %s at %v", name, v.ID, v.Impact, v.Help, v.Nodes)
		} else {
			t.Logf("%s: axe-core, %s: %s (%s) at %v", name, v.Impact, v.ID, v.Help, v.Nodes)
		}
	}
	screenshot(t, ctx, "screen-"+name)
}

// promptURL is a prompt window's page for details, as the service worker
// opens it (who: the agent's name), with a prompt id nothing waits on.
func promptURL(details map[string]any, who string) string {
	b, _ := json.Marshal(details)
	q := url.Values{"id": {screenshotCopy}}
	if who != "" {
		q.Set("who", who)
	}
	return extURL("prompt.html?" + q.Encode() + "#" + url.PathEscape(string(b)))
}

// TestScreensAsAPersonSeesThem: the popup, the prompt (its sentence, More…
// open, a workflow's layer), the options page and the install sheet.
func TestScreensAsAPersonSeesThem(t *testing.T) {
	ext := page(t, extURL("options.html"))
	prof := pageReaderProfile("e2e-screens", "full")
	prof["name"] = "Page reader"
	prof["description"] = "Counts the words of the page and reads its heading; 'shout' rewrites the heading."
	installAgent(t, ext, prof, modules["page-reader"])
	_, tabID := openTestPage(t, ext)

	t.Run("popup", func(t *testing.T) {
		popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
		waitFor(t, popup, `document.querySelector('#agent option[value="e2e-screens"]')`)
		eval[bool](t, popup, `(document.getElementById('agent').value = 'e2e-screens', document.getElementById('agent').dispatchEvent(new Event('change')), true)`)
		waitFor(t, popup, `document.getElementById('agent-description').textContent.includes('Counts the words')`)
		if opt := eval[string](t, popup, `document.getElementById('agent').selectedOptions[0].textContent`); !strings.HasPrefix(opt, "Page reader") {
			t.Errorf("the picker shows %q; want the agent's name", opt)
		}
		if chips := eval[string](t, popup, `document.getElementById('agent-chips').textContent`); !strings.Contains(chips, "page.write") {
			t.Errorf("the agent's permission chips: %q", chips)
		}
		checkScreen(t, popup, "popup", 404, 600, "#run")
	})
	single := map[string]any{"id": "h:demo:1", "agentId": "e2e-screens", "operation": "page.write.setElementText", "permission": "page.write",
		"class": "REQUIRES_CONFIRMATION", "reason": "it changes what the page shows", "permissionSet": "mcp-standard", "timeoutMs": 60000,
		"target":     map[string]any{"selector": "h1", "origin": "http://127.0.0.1:8931", "textLength": 13},
		"rememberAs": "http://127.0.0.1:8931", "preview": "Hello, \u202eworld",
		"offers": []string{"allow-once", "allow-session", "allow-24h", "always-allow", "allow-and-log", "deny", "always-block"}}
	t.Run("prompt", func(t *testing.T) {
		p := page(t, promptURL(single, "Page reader"))
		waitFor(t, p, promptShown)
		if q := eval[string](t, p, `document.getElementById('question').textContent`); q != "Page reader wants to change the heading of http://127.0.0.1:8931" {
			t.Errorf("the prompt's sentence: %q", q)
		}
		// What the write carries, its start, escaped: the bidi override
		// is shown, not obeyed.
		if pv := eval[string](t, p, `document.getElementById('preview-line').hidden ? '' : document.getElementById('preview').textContent`); !strings.HasPrefix(pv, "Hello, ") || strings.Contains(pv, "\u202e") {
			t.Errorf("the prompt's preview: %q", pv)
		}
		if n := eval[int](t, p, `[...document.querySelectorAll('.answers button')].filter(b => !b.hidden).length`); n != 3 {
			t.Errorf("%d answers show at first; want Allow once, Deny, More…", n)
		}
		checkScreen(t, p, "prompt", promptWidth, 420, "#allow-once")
		waitFor(t, p, `!document.getElementById('more').disabled`)
		eval[bool](t, p, `(document.getElementById('more').click(), document.getElementById('always-allow').click(), document.getElementById('details').open = true, true)`)
		checkScreen(t, p, "prompt-more", promptWidth, 700, "#remember-confirm")
	})
	t.Run("workflow layer prompt", func(t *testing.T) {
		layer := map[string]any{"id": "h:demo:2", "workflow": "weekly-report", "layer": 2, "timeoutMs": 60000, "offers": []string{"allow-once", "deny"},
			"tasks": []map[string]any{{"layer": 2, "task": "post-summary", "agentId": "fetcher", "operation": "network.fetch", "class": "REQUIRES_CONFIRMATION",
				"target": map[string]any{"method": "POST", "url": "http://127.0.0.1:8931/reports/2026/quarterly-summary-for-the-regional-offices"}}}}
		p := page(t, promptURL(layer, ""))
		waitFor(t, p, promptShown)
		checkScreen(t, p, "layer-prompt", promptWidth, 600, "#allow-once")
	})
	t.Run("options", func(t *testing.T) {
		opts := page(t, extURL("options.html"))
		waitFor(t, opts, `document.getElementById('status').textContent.startsWith('updated') && document.querySelector('#examples li')`)
		checkScreen(t, opts, "options", 1000, 800, "")
	})
	t.Run("install sheet", func(t *testing.T) {
		// An example not installed: earlier tests may have installed
		// them all, so one is taken out and put back through its sheet.
		const id = "clipboard-note"
		opts := page(t, extURL("options.html"))
		if _, ok := installedIDs(t, opts)[id]; ok {
			if r := hostCall(t, opts, "uninstall-agent", map[string]any{"agentId": id}); !r.Success {
				t.Fatalf("uninstall-agent: %s %s", r.Code, r.Error)
			}
			t.Cleanup(func() { installExamples(t, id) })
			click(t, opts, "refresh")
		}
		sel := fmt.Sprintf(`#examples li[data-agent=%q][data-installed="false"] button.install`, id)
		waitFor(t, opts, fmt.Sprintf(`document.querySelector(%q)`, sel))
		eval[bool](t, opts, fmt.Sprintf(`(document.querySelector(%q).click(), true)`, sel))
		waitFor(t, opts, `document.getElementById('install-sheet')?.open`)
		checkScreen(t, opts, "install-sheet", 1000, 800, "#sheet-install")
		click(t, opts, "sheet-cancel")
	})
}

// TestHostMissingBannerSaysWhatToDo: with no host installed (its manifest
// gone), the popup shows one banner with the exact commands that fix it,
// this extension's id in them, and Run is off; no other line repeats
// Chrome's error.
func TestHostMissingBannerSaysWhatToDo(t *testing.T) {
	manifestPath := hostManifest(t)
	original, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	opts := page(t, extURL("options.html"))
	t.Cleanup(func() {
		if err := os.WriteFile(manifestPath, original, 0o644); err != nil {
			t.Errorf("restoring the host manifest: %v", err)
		}
		waitForHost(t, opts, func(r reply) bool { return r.Success })
	})
	if err := os.Remove(manifestPath); err != nil {
		t.Fatal(err)
	}
	killHosts(t)
	waitForHost(t, opts, func(r reply) bool { return r.Code == "host_disconnected" && strings.Contains(r.Error, "not found") })
	popup := page(t, extURL("popup.html"))
	waitFor(t, popup, `document.getElementById('host-problem').dataset.problem === 'host_missing'`)
	banner := eval[string](t, popup, `document.getElementById('host-problem').innerText`)
	for _, want := range []string{"nmhost install --extension-id " + ExtensionID, "nmhost doctor --extension-id " + ExtensionID} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner does not say %q:\n%s", want, banner)
		}
	}
	if !eval[bool](t, popup, `document.getElementById('run').disabled`) {
		t.Error("Run is on with no host")
	}
	if n := eval[int](t, popup, `document.body.innerText.split('not found').length - 1`); n > 1 {
		t.Errorf("Chrome's error shows %d times", n)
	}
	checkScreen(t, popup, "popup-host-missing", 404, 600, "#host-problem")
}

// TestWorkflowFromTheOptionsPage: a person starts a workflow from the
// extension (before, only the devtools console could): its plan is
// asked about in one prompt, and the page shows each task's end and the
// workflow's.
func TestWorkflowFromTheOptionsPage(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	opts := page(t, extURL("options.html"))
	installAgent(t, opts, fetcherProfile("e2e-wf-options", hostOf(web.URL)), nil)
	wf, _ := json.Marshal(map[string]any{"id": "e2e-from-options", "tasks": []map[string]any{
		{"id": "post", "call": map[string]any{"agentId": "e2e-wf-options", "operation": "network.fetch", "method": "POST", "url": web.URL + "/x", "body": "x"}}}})
	waitFor(t, opts, `document.getElementById('wf-json')`)
	eval[bool](t, opts, fmt.Sprintf(`(document.getElementById('wf-json').value = %q, true)`, wf))
	click(t, opts, "wf-run")
	tg := nextPrompt(t)
	if title := waitInPrompt(t, tg, promptShown, "document.title"); strings.Contains(title, "Allow this agent") {
		t.Errorf("the plan's prompt is titled %q", title)
	}
	clickPrompt(t, tg, "allow-once")
	waitFor(t, opts, `document.getElementById('wf-output').dataset.status`)
	if status := eval[string](t, opts, `document.getElementById('wf-output').dataset.status`); status != "ok" {
		t.Fatalf("the workflow: %s: %s", status, eval[string](t, opts, `document.getElementById('wf-output').textContent`))
	}
	if out := eval[string](t, opts, `document.getElementById('wf-output').textContent`); !strings.Contains(out, "post (layer 1): ok") {
		t.Errorf("the page shows %q", out)
	}
	if web.hits.Load() != 1 {
		t.Fatalf("the server got %d requests; want the one allowed POST", web.hits.Load())
	}
	// An agent's script where the graph goes: converted by the host, its
	// pure steps run with no question.
	eval[bool](t, opts, `(document.getElementById('wf-json').value = "const xs: number[] = [1, 2, 3];\nconst total = xs.reduce((s, x) => s + x, 0);\n", delete document.getElementById('wf-output').dataset.status, true)`)
	click(t, opts, "wf-run")
	waitFor(t, opts, `document.getElementById('wf-output').dataset.status`)
	if out := eval[string](t, opts, `document.getElementById('wf-output').textContent`); !strings.Contains(out, "total (layer") || !strings.Contains(out, "ended: ok (0 prompts)") {
		t.Errorf("a script from the options page: %q", out)
	}
}
