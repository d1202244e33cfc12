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
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/testwasm"
)

// twoSites is two loopback servers, so two origins: the page a run is
// started on (A) and the page it ends up showing (B).
type twoSites struct {
	a, b   *counter
	landed chan struct{} // closed once B's page has loaded in a tab
}

// serveTwoSites serves A's page at /a.html and B's at /b.html. B's page
// reports that it loaded, which closes landed; A answers /wait once that
// happened, so an agent's fetch of it waits for the navigation. With
// leaveOnWrite, A's page goes to B by itself as soon as its heading is
// written.
func serveTwoSites(t *testing.T, leaveOnWrite bool) *twoSites {
	t.Helper()
	s := &twoSites{landed: make(chan struct{})}
	var once sync.Once
	s.b = serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/b.html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><title>site B</title><h1>B heading</h1><script>fetch('/landed')</script>`)
		case "/landed":
			once.Do(func() { close(s.landed) })
		}
	})
	leave := ""
	if leaveOnWrite {
		leave = fmt.Sprintf(`<script>new MutationObserver(() => setTimeout(() => { location.href = %q }, 0))
  .observe(document.querySelector('h1'), {childList: true, characterData: true, subtree: true})</script>`, s.b.URL+"/b.html")
	}
	s.a = serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><title>site A</title><h1>A heading</h1>`+leave)
		case "/wait":
			// Bounded, so that a failing test cannot hold the server's Close.
			select {
			case <-s.landed:
				io.WriteString(w, "landed")
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
				http.Error(w, "B never loaded", http.StatusGatewayTimeout)
			}
		}
	})
	return s
}

// waitLanded waits until B's page has loaded.
func (s *twoSites) waitLanded(t *testing.T) {
	t.Helper()
	select {
	case <-s.landed:
	case <-time.After(20 * time.Second):
		t.Fatal("the tab never loaded site B")
	}
}

// probeAgent installs the probe agent (its input lines are commands) with
// every grant it imports, domAccess full, and network access to hosts.
func probeAgent(t *testing.T, ext context.Context, id string, hosts ...string) {
	t.Helper()
	module, err := testwasm.Probe()
	if err != nil {
		t.Fatal(err)
	}
	installAgent(t, ext, map[string]any{
		"agentId":     id,
		"permissions": map[string]any{"required": []string{"console.log", "page.read", "page.write", "clipboard.read", "clipboard.write", "network.fetch"}},
		"capabilities": map[string]any{"networkAccess": len(hosts) > 0, "allowedHosts": hosts, "domAccess": "full",
			"maxMemory": 33554432, "executionTimeout": 60000},
	}, module)
}

// headingOf returns the tab's heading and the origin of the document it
// shows now.
func headingOf(t *testing.T, tab context.Context) string {
	t.Helper()
	return eval[string](t, tab, `document.querySelector('h1').textContent + ' @ ' + location.origin`)
}

// A run is bound to the document it was started on. Here the page takes
// the first write, which the user allows always for its origin, and then
// goes to another origin by itself: the agent's next write, which the
// remembered answer lets through, must reach nothing.
func TestPageThatLeavesAfterAlwaysAllowIsNotWritten(t *testing.T) {
	sites := serveTwoSites(t, true)
	ext := page(t, extURL("options.html"))
	probeAgent(t, ext, "e2e-bound-always", hostOf(sites.a.URL))
	tab := page(t, sites.a.URL+"/a.html")
	tabID := grantActiveTab(t, ext, sites.a.URL+"/a.html")
	input := strings.Join([]string{"write h1 first", "fetch " + sites.a.URL + "/wait", "write h1 second"}, "\n")
	status, out := runInPopup(t, tabID, "e2e-bound-always", input, func() { answerPrompt(t, "always-allow") })
	if status != "ok" || !strings.Contains(out, "fetched 200 landed") || !strings.Contains(out, "write: error page_changed") {
		t.Fatalf("%s:\n%s", status, out)
	}
	if h := headingOf(t, tab); h != "B heading @ "+sites.b.URL {
		t.Fatalf("the page the tab went to now shows %q", h)
	}
	// The write got as far as the browser because the answer for A was
	// remembered; the refusal is in the denial log, from the extension.
	prefs := string(hostCall(t, ext, "list-preferences", map[string]any{"agentId": "e2e-bound-always"}).Data)
	if !strings.Contains(prefs, `"target":"`+sites.a.URL+`"`) || !strings.Contains(prefs, `"answer":"always-allow"`) {
		t.Fatalf("preferences: %s", prefs)
	}
	waitForDenial(t, ext, "e2e-bound-always", `"code":"page_changed"`)
}

// The prompt shows the origin of the document the run is bound to, and an
// answer given after the tab went to another site writes nothing there.
func TestPromptAnsweredAfterThePageLeftWritesNothing(t *testing.T) {
	sites := serveTwoSites(t, false)
	ext := page(t, extURL("options.html"))
	probeAgent(t, ext, "e2e-bound-prompt")
	tab := page(t, sites.a.URL+"/a.html")
	tabID := grantActiveTab(t, ext, sites.a.URL+"/a.html")
	status, out := runInPopup(t, tabID, "e2e-bound-prompt", "write h1 owned", func() {
		tg := nextPrompt(t)
		if origin := promptOrigin(t, tg.URL); origin != sites.a.URL {
			t.Errorf("the prompt shows origin %q; the run is bound to %s", origin, sites.a.URL)
		}
		eval[bool](t, tab, fmt.Sprintf(`(setTimeout(() => { location.href = %q }, 0), true)`, sites.b.URL+"/b.html"))
		sites.waitLanded(t)
		clickPrompt(t, tg, "allow-once")
	})
	if status != "ok" || !strings.Contains(out, "write: error page_changed") {
		t.Fatalf("%s:\n%s", status, out)
	}
	if h := headingOf(t, tab); h != "B heading @ "+sites.b.URL {
		t.Fatalf("the page the tab went to now shows %q", h)
	}
	waitForDenial(t, ext, "e2e-bound-prompt", `"code":"page_changed"`)
}

// promptOrigin returns the page origin a prompt window shows.
func promptOrigin(t *testing.T, promptURL string) string {
	t.Helper()
	u, err := url.Parse(promptURL)
	if err != nil {
		t.Fatal(err)
	}
	var details struct {
		Target struct{ Origin string }
	}
	if err := json.Unmarshal([]byte(u.Fragment), &details); err != nil {
		t.Fatalf("prompt details %q: %v", u.Fragment, err)
	}
	return details.Target.Origin
}
