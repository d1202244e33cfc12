//go:build linux && e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// counter is a loopback server that counts its hits.
type counter struct {
	*httptest.Server
	hits atomic.Int64
}

func serve(t testing.TB, h http.HandlerFunc) *counter {
	c := &counter{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(c.Close)
	return c
}

func hostOf(u string) string { return strings.TrimPrefix(u, "http://") }

func fetcherProfile(id string, hosts ...string) map[string]any {
	return map[string]any{
		"agentId":      id,
		"permissions":  map[string]any{"required": []string{"network.fetch"}},
		"capabilities": map[string]any{"networkAccess": true, "allowedHosts": hosts},
	}
}

// fetchInOptions uses the options page's "try a fetch as an agent" form,
// as a person would, and returns the result element's state.
func fetchInOptions(t testing.TB, agent, url string) (done, length, text string) {
	t.Helper()
	opts := page(t, extURL("options.html"))
	waitFor(t, opts, fmt.Sprintf(`document.querySelector('#fetch-agent option[value=%q]')`, agent))
	eval[bool](t, opts, fmt.Sprintf(`(() => { document.getElementById('fetch-agent').value = %q; document.getElementById('fetch-url').value = %q; document.getElementById('fetch-go').click(); return true })()`, agent, url))
	waitFor(t, opts, `document.getElementById('fetch-result').dataset.done`)
	done = eval[string](t, opts, `document.getElementById('fetch-result').dataset.done`)
	length = eval[string](t, opts, `document.getElementById('fetch-result').dataset.length`)
	text = eval[string](t, opts, `document.getElementById('fetch-result').textContent`)
	return done, length, text
}

func TestFetchFromAnAllowedHostShowsTheBody(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the allowed host") })
	opts := page(t, extURL("options.html"))
	installAgent(t, opts, fetcherProfile("e2e-fetch-ok", hostOf(web.URL)), nil)
	done, _, text := fetchInOptions(t, "e2e-fetch-ok", web.URL+"/x")
	if done != "ok" || !strings.Contains(text, "hello from the allowed host") {
		t.Fatalf("result %s: %s", done, text)
	}
}

func TestFetchToAnUnlistedHostIsDeniedLoggedAndNeverSent(t *testing.T) {
	allowed := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	canary := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	opts := page(t, extURL("options.html"))
	installAgent(t, opts, fetcherProfile("e2e-fetch-denied", hostOf(allowed.URL)), nil)
	// Same address, other port: a different host:port entry, so not allowed.
	done, _, _ := fetchInOptions(t, "e2e-fetch-denied", canary.URL+"/steal")
	if done != "host_not_allowed" {
		t.Fatalf("result %s; want host_not_allowed", done)
	}
	// The denial shows in the options page's log.
	click(t, opts, "refresh")
	waitFor(t, opts, `document.querySelector('#denials tbody tr[data-code="host_not_allowed"]')`)
	screenshot(t, opts, "options")
	if canary.hits.Load() != 0 {
		t.Fatalf("the canary was hit %d times", canary.hits.Load())
	}
}

func TestRedirectToADisallowedHostIsDenied(t *testing.T) {
	canary := serve(t, func(w http.ResponseWriter, r *http.Request) {})
	allowed := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, canary.URL+"/stolen", http.StatusFound)
	})
	opts := page(t, extURL("options.html"))
	installAgent(t, opts, fetcherProfile("e2e-redirect", hostOf(allowed.URL)), nil)
	done, _, _ := fetchInOptions(t, "e2e-redirect", allowed.URL+"/go")
	if done != "host_not_allowed" || allowed.hits.Load() != 1 || canary.hits.Load() != 0 {
		t.Fatalf("result %s, allowed hits %d, canary hits %d", done, allowed.hits.Load(), canary.hits.Load())
	}
}

func TestThreeMegabyteResponseArrivesIntact(t *testing.T) {
	body := strings.Repeat("0123456789abcdef", 3<<20/16)
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) })
	opts := page(t, extURL("options.html"))
	installAgent(t, opts, fetcherProfile("e2e-big", hostOf(web.URL)), nil)
	r := hostCall(t, opts, "network-fetch", map[string]any{"agentId": "e2e-big", "url": web.URL})
	if !r.Success {
		t.Fatalf("%s %s", r.Code, r.Error)
	}
	if !strings.Contains(string(r.Data), body) {
		t.Fatalf("the 3 MiB body did not arrive intact (%d bytes of reply)", len(r.Data))
	}
	done, length, _ := fetchInOptions(t, "e2e-big", web.URL)
	if done != "ok" || length != fmt.Sprint(len(body)) {
		t.Fatalf("options page: %s, %s characters", done, length)
	}
}

func TestHostKilledMidSessionReconnects(t *testing.T) {
	opts := page(t, extURL("options.html"))
	waitForBundledAgents(t, opts)
	if r := hostCall(t, opts, "hello", nil); !r.Success {
		t.Fatalf("hello: %s %s", r.Code, r.Error)
	}
	killed := killHosts(t)
	if killed == 0 {
		t.Fatal("no nmhost process was running for the extension")
	}
	// The port notices the dead host when it notices: until then a call
	// may still meet it (host_disconnected). Poll until a new host
	// answers, with a deadline, rather than sleep for the port.
	deadline := time.Now().Add(guard)
	for {
		r := hostCall(t, opts, "hello", nil)
		if r.Success {
			break
		}
		if r.Code != "host_disconnected" || time.Now().After(deadline) {
			t.Fatalf("hello after kill -9: %s %s", r.Code, r.Error)
		}
	}
}

func TestRevokeInTheOptionsPageStopsTheAgent(t *testing.T) {
	web := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	opts := page(t, extURL("options.html"))
	installAgent(t, opts, fetcherProfile("e2e-revoke", hostOf(web.URL)), nil)
	click(t, opts, "refresh")
	button := `document.querySelector('#agents button.revoke[data-agent="e2e-revoke"][data-permission="network.fetch"]')`
	waitFor(t, opts, button)
	eval[bool](t, opts, "("+button+".click(), true)")
	waitFor(t, opts, `document.querySelector('#agents tr[data-agent="e2e-revoke"]') && !`+button)
	r := hostCall(t, opts, "network-fetch", map[string]any{"agentId": "e2e-revoke", "url": web.URL})
	if r.Code != "revoked_by_user" || web.hits.Load() != 0 {
		t.Fatalf("fetch after revoke: %s %s; server hits %d", r.Code, r.Error, web.hits.Load())
	}
	// The options page offers the revoked permission back; granting it
	// from there lets the next fetch through.
	regrant := `document.querySelector('#agents button.regrant[data-agent="e2e-revoke"][data-permission="network.fetch"]')`
	waitFor(t, opts, regrant)
	eval[bool](t, opts, "("+regrant+".click(), true)")
	waitFor(t, opts, button)
	if r := hostCall(t, opts, "network-fetch", map[string]any{"agentId": "e2e-revoke", "url": web.URL}); !r.Success || web.hits.Load() != 1 {
		t.Fatalf("fetch after granting again: %s %s; server hits %d", r.Code, r.Error, web.hits.Load())
	}
}
