//go:build linux && e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// confirmed holds the examples this test binary installed through their
// sheet: every other bundled example must still be uninstalled.
var (
	confirmedMu sync.Mutex
	confirmed   = map[string]bool{}
)

// bundledIDs is every example the extension bundles (agents/index.json).
func bundledIDs(t testing.TB, ext context.Context) []string {
	t.Helper()
	raw := eval[string](t, ext, `fetch('/agents/index.json').then(r => r.json()).then(ix => Promise.all(ix.agents.map(a =>
		fetch('/agents/' + a.profile).then(r => r.json()).then(p => p.agentId)))).then(JSON.stringify)`)
	var ids []string
	if err := json.Unmarshal([]byte(raw), &ids); err != nil || len(ids) == 0 {
		t.Fatalf("examples: %s (%v)", raw, err)
	}
	return ids
}

// installedIDs is the host's installed agents, by id, with their modules' hashes.
func installedIDs(t testing.TB, ext context.Context) map[string]string {
	t.Helper()
	var list struct {
		Agents []struct {
			Profile      struct{ AgentID string }
			ModuleSha256 string
		}
	}
	if err := json.Unmarshal(hostCall(t, ext, "list-agents", nil).Data, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range list.Agents {
		got[a.Profile.AgentID] = a.ModuleSha256
	}
	return got
}

// installExamples installs bundled examples as a person does: on the
// options page, Install… opens the example's sheet, which says what it
// will be able to do, and its Install button confirms. An example
// installed already is left as it is.
func installExamples(t testing.TB, ids ...string) {
	t.Helper()
	opts := page(t, extURL("options.html"))
	for _, id := range ids {
		sel := fmt.Sprintf(`#examples li[data-agent=%q]`, id)
		waitFor(t, opts, fmt.Sprintf(`document.querySelector(%q)`, sel))
		if eval[bool](t, opts, fmt.Sprintf(`document.querySelector(%q).dataset.installed === 'true'`, sel)) {
			continue
		}
		eval[bool](t, opts, fmt.Sprintf(`(document.querySelector('%s button.install').click(), true)`, sel))
		waitFor(t, opts, `document.getElementById('install-sheet')?.open && document.getElementById('sheet-install')`)
		confirmedMu.Lock()
		confirmed[id] = true
		confirmedMu.Unlock()
		click(t, opts, "sheet-install")
		waitFor(t, opts, fmt.Sprintf(`!document.getElementById('install-sheet').open && document.querySelector(%q)?.dataset.installed === 'true'`, sel))
	}
	// The module installed is the one built for this run.
	got := installedIDs(t, opts)
	for _, id := range ids {
		if m, ok := modules[id]; ok {
			sum := sha256.Sum256(m)
			if got[id] != hex.EncodeToString(sum[:]) {
				t.Fatalf("%s installed with module %q, want %x", id, got[id], sum)
			}
		}
	}
}

// waitForBundledAgents installs every bundled example through its sheet.
func waitForBundledAgents(t *testing.T, ext context.Context) {
	t.Helper()
	installExamples(t, bundledIDs(t, ext)...)
}

// TestExamplesArriveUninstalledAndInstallOnlyOnConfirm: the extension's
// start installs no bundled example and grants nothing. Each example is
// listed with what it asks for; its sheet says in plain words what it
// will be able to do; Cancel installs nothing, and only Install does,
// with the grants its profile asks for.
func TestExamplesArriveUninstalledAndInstallOnlyOnConfirm(t *testing.T) {
	opts := page(t, extURL("options.html"))
	waitFor(t, opts, `document.getElementById('status').textContent.startsWith('updated')`)
	ids := bundledIDs(t, opts)
	got := installedIDs(t, opts)
	confirmedMu.Lock()
	for _, id := range ids {
		if _, ok := got[id]; ok && !confirmed[id] {
			t.Errorf("the bundled example %s is installed, and nobody confirmed it", id)
		}
	}
	confirmedMu.Unlock()
	if t.Failed() {
		return
	}
	const id = "page-reader"
	if _, ok := got[id]; ok {
		// An earlier test installed it (under a -run that orders it first).
		if r := hostCall(t, opts, "uninstall-agent", map[string]any{"agentId": id}); !r.Success {
			t.Fatalf("uninstall-agent: %s %s", r.Code, r.Error)
		}
		click(t, opts, "refresh")
	}
	sel := fmt.Sprintf(`#examples li[data-agent=%q]`, id)
	waitFor(t, opts, fmt.Sprintf(`document.querySelector(%q)?.dataset.installed === 'false'`, sel))
	chipText := eval[string](t, opts, fmt.Sprintf(`document.querySelector('%s .chips').textContent`, sel))
	if !strings.Contains(chipText, "page.write") {
		t.Errorf("chips of %s: %q", id, chipText)
	}
	open := func() string {
		eval[bool](t, opts, fmt.Sprintf(`(document.querySelector('%s button.install').click(), true)`, sel))
		waitFor(t, opts, `document.getElementById('install-sheet')?.open`)
		return eval[string](t, opts, `document.getElementById('install-sheet').innerText`)
	}
	text := open()
	for _, want := range []string{"Install “Page reader”?", "Read the text of the page you run it on", "Change what the page you run it on shows"} {
		if !strings.Contains(text, want) {
			t.Errorf("the sheet does not say %q:\n%s", want, text)
		}
	}
	// Cancel has the focus: an Enter typed as the sheet opens installs nothing.
	if f := eval[string](t, opts, `document.activeElement.id`); f != "sheet-cancel" {
		t.Errorf("focus on %q as the sheet opens, want sheet-cancel", f)
	}
	screenshot(t, opts, "install-sheet")
	click(t, opts, "sheet-cancel")
	waitFor(t, opts, `!document.getElementById('install-sheet').open`)
	if _, ok := installedIDs(t, opts)[id]; ok {
		t.Fatal("Cancel installed the agent")
	}
	open()
	confirmedMu.Lock()
	confirmed[id] = true
	confirmedMu.Unlock()
	click(t, opts, "sheet-install")
	waitFor(t, opts, fmt.Sprintf(`document.querySelector(%q)?.dataset.installed === 'true'`, sel))
	var info struct {
		Grants []struct{ Permission string }
	}
	r := hostCall(t, opts, "getAgentInfo", map[string]any{"agentId": id})
	if err := json.Unmarshal(r.Data, &info); err != nil {
		t.Fatalf("getAgentInfo: %s %s %s", r.Code, r.Error, r.Data)
	}
	var perms []string
	for _, g := range info.Grants {
		perms = append(perms, g.Permission)
	}
	slices.Sort(perms)
	if !slices.Equal(perms, []string{"page.read", "page.write"}) {
		t.Errorf("grants after confirming: %v", perms)
	}
}
