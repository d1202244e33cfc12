//go:build linux && e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The manifest asks for the least the extension uses; the table in
// extension/README.md says what uses each permission. Widening it is a
// decision made there and here, never a side effect.
func TestManifestAsksForTheLeast(t *testing.T) {
	raw, err := os.ReadFile("../extension/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var perms []string
	if err := json.Unmarshal(m["permissions"], &perms); err != nil {
		t.Fatal(err)
	}
	slices.Sort(perms)
	want := []string{"activeTab", "nativeMessaging", "offscreen", "scripting", "storage"}
	if !slices.Equal(perms, want) {
		t.Errorf("permissions %v; want %v", perms, want)
	}
	// What only some agents need is asked for when the person grants it
	// to one (chromeperms.js).
	var optional []string
	if err := json.Unmarshal(m["optional_permissions"], &optional); err != nil {
		t.Fatal(err)
	}
	slices.Sort(optional)
	if want := []string{"clipboardRead", "clipboardWrite", "notifications"}; !slices.Equal(optional, want) {
		t.Errorf("optional_permissions %v; want %v", optional, want)
	}
	for _, key := range []string{"host_permissions", "optional_host_permissions", "content_scripts", "externally_connectable", "web_accessible_resources"} {
		if _, ok := m[key]; ok {
			t.Errorf("the manifest has %q", key)
		}
	}
}

// The extension reaches a page only after the user clicked its action on
// it, and only while the tab shows that site: no content script in every
// page, no host permissions, no "tabs" to read every tab's URL.
func TestExtensionReachesOnlyThePageItWasInvokedOn(t *testing.T) {
	sites := serveTwoSites(t, false)
	ext := page(t, extURL("options.html"))
	tab := page(t, sites.a.URL+"/a.html")
	if seen := eval[bool](t, ext, fmt.Sprintf(`chrome.tabs.query({}).then(ts => ts.some(x => (x.url || '').startsWith(%q)))`, sites.a.URL)); seen {
		t.Fatal("the extension reads the URL of a tab it was not invoked on")
	}
	tabID := grantActiveTab(t, ext, sites.a.URL+"/a.html")
	// The tab goes to another origin: the grant ends with it.
	eval[bool](t, tab, fmt.Sprintf(`(setTimeout(() => { location.href = %q }, 0), true)`, sites.b.URL+"/b.html"))
	sites.waitLanded(t)
	if u := eval[string](t, ext, fmt.Sprintf(`chrome.tabs.get(%d).then(x => String(x.url))`, tabID)); u != "undefined" {
		t.Errorf("after the tab left the site the extension still reads its URL: %s", u)
	}
	inject := eval[string](t, ext, fmt.Sprintf(`chrome.scripting.executeScript({target: {tabId: %d}, func: () => location.href}).then(JSON.stringify, e => 'refused: ' + e.message)`, tabID))
	if !strings.HasPrefix(inject, "refused: ") {
		t.Errorf("the extension scripted a page it was not invoked on: %s", inject)
	}
	// Nothing of the extension listens in the new page.
	call := eval[string](t, ext, fmt.Sprintf(`chrome.tabs.sendMessage(%d, {type: 'agentgate-call', call: 'page.read.getPageText', agentId: 'e2e-nobody', domAccess: 'full', origin: %q, params: {}}).then(JSON.stringify, e => 'unreachable: ' + e.message)`, tabID, sites.b.URL))
	if !strings.HasPrefix(call, "unreachable: ") {
		t.Errorf("a page the extension was not invoked on answered a page call: %s", call)
	}
}

// TestOptionalPermissionIsAskedFirst: notifications is an optional Chrome
// permission. While Chrome has not given it, the options page offers the
// person a button that asks for it beside the agent's grant, and the
// bundled notifier's prompt says that allowing also asks Chrome. An Allow
// that Chrome refuses (here: a click that is no person's gesture) answers
// nothing, and the window says why; it never lets the call through to
// fail with permission_not_granted (issue 43, item 3).
func TestOptionalPermissionIsAskedFirst(t *testing.T) {
	ext := page(t, extURL("options.html"))
	installExamples(t, "notifier")
	if held := eval[bool](t, ext, `chrome.permissions.contains({permissions: ['notifications']})`); held {
		t.Fatal("Chrome gave notifications without a person asking")
	}
	click(t, ext, "refresh")
	waitFor(t, ext, `document.querySelector('#agents button.chrome-allow[data-agent="notifier"][data-permission="notifications"]')`)
	_, tabID := openTestPage(t, ext)
	status, out := runInPopup(t, tabID, "notifier", "hello", func() {
		tg := nextPrompt(t)
		copyTab := promptCopy(t, tg)
		waitFor(t, copyTab, promptShown)
		if says := eval[string](t, copyTab, `document.getElementById('chrome-needs')?.hidden === false ? document.getElementById('chrome-needs').textContent : ''`); !strings.Contains(says, "notifications") {
			t.Errorf("the prompt does not say allowing asks Chrome for notifications: %q", says)
		}
		waitFor(t, copyTab, `!document.getElementById('allow-once').disabled`)
		eval[bool](t, copyTab, `(document.getElementById('allow-once').click(), true)`)
		waitFor(t, copyTab, `document.getElementById('chrome-problem').hidden === false`)
		screenshot(t, copyTab, "prompt-chrome-refused")
		clickPrompt(t, tg, "deny")
	})
	if strings.Contains(out, "permission_not_granted") || !strings.Contains(out, "user_denied") {
		t.Fatalf("notifier without Chrome's permission: status %s, output %q", status, out)
	}
}
