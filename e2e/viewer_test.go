package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// viewerRun runs the fetcher agent as agentID with `nmhost run` in its own
// process on dataDir, so that each URL, none allowed, leaves a
// host_not_allowed denial in that data dir's log.
func viewerRun(t *testing.T, dataDir, agentID string, urls ...string) {
	t.Helper()
	profile := filepath.Join(t.TempDir(), "profile.json")
	b, _ := json.Marshal(fetcherProfile(agentID, "allowed.invalid"))
	if err := os.WriteFile(profile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(t.TempDir(), "fetcher.wasm")
	if err := os.WriteFile(module, modules["fetcher"], 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nmhostBin, "run", "--profile", profile, "--input", strings.Join(urls, "\n"), module)
	cmd.Env = append(os.Environ(), "NMHOST_DATA_DIR="+dataDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nmhost run as %s: %v\n%s", agentID, err, out)
	}
}

// startViewer starts `nmhost serve --port 0` on dataDir and returns the
// URL of its first stdout line.
func startViewer(t *testing.T, dataDir string) string {
	t.Helper()
	cmd := exec.Command(nmhostBin, "serve", "--port", "0")
	cmd.Env = append(os.Environ(), "NMHOST_DATA_DIR="+dataDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	first := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		first <- strings.TrimSpace(line)
	}()
	select {
	case line := <-first:
		if !strings.HasPrefix(line, "http://127.0.0.1:") || !strings.Contains(line, "/?token=") {
			cmd.Process.Kill()
			cmd.Wait() // stderr is complete only after Wait
			t.Fatalf("nmhost serve printed %q first, not http://127.0.0.1:PORT/?token=TOKEN; stderr:\n%s", line, stderr.String())
		}
		return line
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait() // stderr is complete only after Wait
		t.Fatalf("nmhost serve printed no URL in 20 s; stderr:\n%s", stderr.String())
	}
	return ""
}

func TestViewerShowsFiltersAndTailsDenials(t *testing.T) {
	data := t.TempDir()
	canary := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	viewerRun(t, data, "viewer-seed", canary.URL+"/a", canary.URL+"/b")
	viewerRun(t, data, "viewer-other", canary.URL+"/c")

	view := page(t, startViewer(t, data))
	// The token leaves the address bar for a cookie.
	if href := eval[string](t, view, `location.href`); strings.Contains(href, "token=") {
		t.Errorf("the token stayed in the URL: %s", href)
	}
	waitFor(t, view, `document.querySelectorAll('#denials tbody tr[data-id][data-agent]').length === 3`)
	waitFor(t, view, `document.getElementById('live-status').textContent.trim() === 'live'`)
	waitFor(t, view, `document.getElementById('chart')`)

	// Filter by agent, as a person types it.
	eval[bool](t, view, `(() => { const f = document.getElementById('filter-agent'); f.value = 'viewer-seed';
		f.dispatchEvent(new Event('input', {bubbles: true})); f.dispatchEvent(new Event('change', {bubbles: true})); return true })()`)
	waitFor(t, view, `(() => { const rows = [...document.querySelectorAll('#denials tbody tr[data-id]')];
		return rows.length === 2 && rows.every(r => r.dataset.agent === 'viewer-seed') })()`)

	// A denial written by another process shows up while the filter holds.
	viewerRun(t, data, "viewer-seed", canary.URL+"/d")
	written := time.Now()
	eval[bool](t, view, `new Promise((ok, fail) => { const end = Date.now() + 1000;
		const w = () => document.querySelectorAll('#denials tbody tr[data-agent="viewer-seed"]').length === 3 ? ok(true)
			: Date.now() > end ? fail(new Error('the new denial did not appear within a second')) : setTimeout(w, 20); w() })`)
	t.Logf("the new denial appeared %v after its process exited", time.Since(written).Round(time.Millisecond))
	if n := eval[int](t, view, `document.querySelectorAll('#denials tbody tr[data-agent="viewer-other"]').length`); n != 0 {
		t.Errorf("the agent filter shows %d rows of another agent", n)
	}
	screenshot(t, view, "viewer")

	// The export follows the filter.
	for _, format := range []string{"jsonl", "csv"} {
		body := eval[string](t, view, fmt.Sprintf(`fetch(document.getElementById('export-%s').href).then(r => r.text())`, format))
		if strings.Count(body, "viewer-seed") != 3 || strings.Contains(body, "viewer-other") {
			t.Errorf("the %s export of the filtered view:\n%s", format, body)
		}
	}
	// A denial leads to the agent's profile and the grant behind it, and
	// the grant can be revoked there (a second click confirms).
	eval[bool](t, view, `(() => { document.querySelector('#denials tbody tr[data-agent="viewer-seed"] button').click(); return true })()`)
	waitFor(t, view, `document.querySelector('#agent-grants tr.behind[data-permission="network.fetch"] button.revoke') !== null`)
	screenshot(t, view, "viewer-agent")
	for range 2 {
		eval[bool](t, view, `(() => { document.querySelector('#agent-grants tr[data-permission="network.fetch"] button.revoke').click(); return true })()`)
	}
	waitFor(t, view, `document.querySelector('#agent-grants tr[data-permission="network.fetch"]') === null`)
	grants := eval[string](t, view, `fetch('/api/agents/viewer-seed').then(r => r.json()).then(a => a.grants.map(g => g.permission).join(','))`)
	if strings.Contains(grants, "network.fetch") {
		t.Errorf("after revoking from the viewer the store still grants: %s", grants)
	}
	if canary.hits.Load() != 0 {
		t.Errorf("the canary was hit %d times", canary.hits.Load())
	}
}

// TestViewerShowsHostileTextAsText: agent ids, URLs and reasons in the log
// are chosen by whoever caused the denial; the page must show them as text,
// never run or render them.
func TestViewerShowsHostileTextAsText(t *testing.T) {
	data := t.TempDir()
	st, err := store.Open(data, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hostile := `<img src=x onerror="window.pwned=1">`
	_, err = st.LogDenial(context.Background(), mediator.Denial{AgentID: hostile, Permission: "network.fetch", Code: mediator.CodeUnknownAgent,
		Context: mediator.DenialContext{URL: `javascript:window.pwned=2`, Reason: `<script>window.pwned=3</script><b>bold</b>`}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	view := page(t, startViewer(t, data))
	waitFor(t, view, `document.querySelectorAll('#denials tbody tr[data-id]').length === 1`)
	// Open the agent panel too: it renders the id again.
	eval[bool](t, view, `(() => { document.querySelector('#denials tbody tr[data-id] button').click(); return true })()`)
	waitFor(t, view, `document.getElementById('agent-message').textContent !== ''`)
	got := eval[string](t, view, `JSON.stringify({
		pwned: window.pwned || 0,
		imgs: document.querySelectorAll('#denials img, #agent-panel img').length,
		bold: document.querySelectorAll('#denials b').length,
		links: document.querySelectorAll('#denials a').length,
		agent: document.querySelector('#denials tbody tr').dataset.agent,
		text: document.querySelector('#denials tbody tr').textContent,
		title: document.getElementById('agent-title').textContent })`)
	var r struct {
		Pwned, Imgs, Bold, Links int
		Agent, Text, Title       string
	}
	if err := json.Unmarshal([]byte(got), &r); err != nil {
		t.Fatal(err)
	}
	if r.Pwned != 0 || r.Imgs != 0 || r.Bold != 0 || r.Links != 0 {
		t.Fatalf("hostile text became markup: %+v", r)
	}
	if r.Agent != hostile || r.Title != hostile || !strings.Contains(r.Text, "<script>window.pwned=3</script>") {
		t.Fatalf("hostile text not shown verbatim: %+v", r)
	}
}
