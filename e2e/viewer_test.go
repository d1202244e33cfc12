//go:build linux && e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

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
// URL of its first stdout line, http://127.0.0.1:PORT/#token=TOKEN.
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
		if !strings.HasPrefix(line, "http://127.0.0.1:") || !strings.Contains(line, "/#token=") {
			cmd.Process.Kill()
			cmd.Wait() // stderr is complete only after Wait
			t.Fatalf("nmhost serve printed %q first, not http://127.0.0.1:PORT/#token=TOKEN; stderr:\n%s", line, stderr.String())
		}
		return line
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		cmd.Wait() // stderr is complete only after Wait
		t.Fatalf("nmhost serve printed no URL in 20 s; stderr:\n%s", stderr.String())
	}
	return ""
}

// splitViewerURL returns the viewer's base URL and its token.
func splitViewerURL(t *testing.T, link string) (base, token string) {
	t.Helper()
	base, token, ok := strings.Cut(link, "/#token=")
	if !ok || token == "" {
		t.Fatalf("%q is not http://127.0.0.1:PORT/#token=TOKEN", link)
	}
	return base, token
}

// viewerGet is a program's GET of the viewer's API, with the token.
func viewerGet(t *testing.T, link, path string) []byte {
	t.Helper()
	base, token := splitViewerURL(t, link)
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return b
}

// download clicks the button with id in the viewer's tab and returns what
// the browser saved: the export is fetched with the token and saved from a
// Blob URL, so this is the whole path a person's click takes.
func download(t *testing.T, view context.Context, id string) []byte {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(view, 30*time.Second)
	defer cancel()
	progress := chromedp.Events(ctx, cdpbrowser.DownloadProgress)
	events := true
	if _, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &events,
	}); err != nil {
		t.Fatal(err)
	}
	defer chromedp.Call(view, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDefault})
	click(t, view, id)
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("waiting for the download of #%s: %v; the page says %q", id, err,
				eval[string](t, view, `document.getElementById('export-status').textContent`))
		}
		switch ev.State {
		case cdpbrowser.DownloadProgressStateCompleted:
			b, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				t.Fatal(err)
			}
			return b
		case cdpbrowser.DownloadProgressStateCanceled:
			t.Fatalf("the download of #%s was canceled", id)
		}
	}
	t.Fatalf("no download of #%s", id)
	return nil
}

func TestViewerShowsFiltersAndTailsDenials(t *testing.T) {
	data := t.TempDir()
	canary := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	viewerRun(t, data, "viewer-seed", canary.URL+"/a", canary.URL+"/b")
	viewerRun(t, data, "viewer-other", canary.URL+"/c")

	link := startViewer(t, data)
	view := page(t, link)
	waitFor(t, view, `document.querySelectorAll('#denials tbody tr[data-id][data-agent]').length === 3`)
	waitFor(t, view, `document.getElementById('live-status').textContent.trim() === 'live'`)
	waitFor(t, view, `document.getElementById('chart')`)
	// The chart says what its axes are and how many denials it draws.
	if labels := eval[string](t, view, `[...document.querySelectorAll('#chart text')].map(t => t.textContent).join(' | ')`); !strings.Contains(labels, "denials per") || !strings.Contains(labels, "time") {
		t.Errorf("the chart's labels: %q", labels)
	}
	if aria := eval[string](t, view, `document.getElementById('chart').getAttribute('aria-label')`); !strings.HasPrefix(aria, "3 denials by 2 agents") {
		t.Errorf("the chart's label for a screen reader: %q", aria)
	}

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

	// The export follows the filter, and is a real download.
	for _, format := range []string{"jsonl", "csv"} {
		body := string(download(t, view, "export-"+format))
		if strings.Count(body, "viewer-seed") != 3 || strings.Contains(body, "viewer-other") {
			t.Errorf("the %s export of the filtered view:\n%s", format, body)
		}
		if saved := eval[string](t, view, `document.getElementById('export-status').textContent`); !strings.HasSuffix(saved, "."+format) {
			t.Errorf("after the %s export the page says %q", format, saved)
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
	var rec struct{ Grants []struct{ Permission string } }
	if err := json.Unmarshal(viewerGet(t, link, "/api/agents/viewer-seed"), &rec); err != nil {
		t.Fatal(err)
	}
	for _, g := range rec.Grants {
		if g.Permission == "network.fetch" {
			t.Errorf("after revoking from the viewer the store still grants: %+v", rec.Grants)
		}
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

// TestViewerTokenReachesNoOtherPort: a browser sends cookies to every port
// of 127.0.0.1, so a token kept in a cookie would reach any local server the
// browser visits. The browser opens the viewer as a person does, then a
// page on another port whose image comes from a third: neither listener may
// see the token, in a cookie or anywhere else. The token leaves the address
// bar and stays in the viewer tab's sessionStorage only.
func TestViewerTokenReachesNoOtherPort(t *testing.T) {
	data := t.TempDir()
	link := startViewer(t, data)
	base, token := splitViewerURL(t, link)
	view := page(t, link)
	waitFor(t, view, `document.getElementById('live-status').textContent.trim() === 'live'`)
	if href := eval[string](t, view, `location.href`); href != base+"/" {
		t.Errorf("the address bar holds %s; want %s/ without the token", href, base)
	}
	if kept := eval[string](t, view, `sessionStorage.getItem('nmhost-viewer-token') || ''`); kept != token {
		t.Errorf("sessionStorage holds %q; want the token", kept)
	}

	var mu sync.Mutex
	var seen []string // every request line and header the other ports received
	record := func(r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Method+" "+r.URL.String())
		for k, v := range r.Header {
			seen = append(seen, k+": "+strings.Join(v, ", "))
		}
	}
	listener := serve(t, func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>`)
	})
	other := serve(t, func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><img id="pixel" src="%s/pixel.svg">`, listener.URL)
	})
	for _, u := range []string{listener.URL, other.URL} {
		if !strings.HasPrefix(u, "http://127.0.0.1:") || u == base {
			t.Fatalf("%s is not another port of 127.0.0.1", u)
		}
	}
	visit := page(t, other.URL+"/")
	waitFor(t, visit, `document.getElementById('pixel').complete`)
	if listener.hits.Load() == 0 {
		t.Fatal("the page's image never reached the listener")
	}
	mu.Lock()
	for _, line := range seen {
		if strings.Contains(line, token) || strings.Contains(line, "nmhost_viewer") {
			t.Errorf("another port of 127.0.0.1 received %q", line)
		}
	}
	mu.Unlock()

	// Another tab of the viewer without the fragment has no token: the page
	// says what to open, and the browser held nothing to get in with.
	bare := page(t, base+"/")
	waitFor(t, bare, `document.getElementById('live-status').textContent === 'no token'`)
	if note := eval[string](t, bare, `document.getElementById('table-note').textContent`); !strings.Contains(note, "#token=") {
		t.Errorf("a tab without the token says %q", note)
	}
}

// TestViewerAuditPage: the audit trail's line opens a page of the
// records it vouches for, with the checkpoint that signs them; the page is
// measured and checked as the extension's screens are.
func TestViewerAuditPage(t *testing.T) {
	data := t.TempDir()
	canary := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	viewerRun(t, data, "viewer-audited", canary.URL+"/a")
	link := startViewer(t, data)
	view := page(t, link)
	waitFor(t, view, `document.getElementById('audit-status').className.includes('consistent')`)
	click(t, view, "audit-open")
	waitFor(t, view, `document.querySelector('#audit-records tbody tr[data-seq]') && document.getElementById('audit-summary').textContent.includes('records, signed')`)
	rows := eval[string](t, view, `[...document.querySelectorAll('#audit-records tbody tr')].map(r => r.textContent).join('\n')`)
	if !strings.Contains(rows, "viewer-audited") || !strings.Contains(rows, "network.fetch") {
		t.Errorf("the audit page shows:\n%s", rows)
	}
	checkScreen(t, view, "viewer-audit", 1000, 800, "#audit-close")
	if canary.hits.Load() != 0 {
		t.Errorf("the canary was hit %d times", canary.hits.Load())
	}
}
