package viewer

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

func TestEveryAPIRequestNeedsTheToken(t *testing.T) {
	v := newTestViewer(t, nil)
	good := v.token.String()
	near := nearToken(good)
	cases := []struct {
		name string
		path string
		opts []reqOpt
	}{
		{"no token api", "/api/denials", nil},
		{"no token export", "/api/denials/export?format=csv", nil},
		{"no token unknown api", "/api/nothing", nil},
		{"no token unknown path", "/favicon.ico", nil},
		{"no token ws", "/ws", nil},
		{"dot-dot out of static", "/static/../api/denials", nil},
		{"wrong bearer", "/api/denials", []reqOpt{bearer(near)}},
		{"token prefix", "/api/denials", []reqOpt{bearer(good[:10])}},
		{"token twice as long", "/api/denials", []reqOpt{bearer(good + good)}},
		{"basic auth", "/api/denials", []reqOpt{header("Authorization", "Basic "+good)}},
		{"bearer lowercase scheme", "/api/denials", []reqOpt{header("Authorization", "bearer "+good)}},
		// What a sibling port could replay, or an old browser session
		// still holds: neither a cookie nor a query admits anyone.
		{"the old cookie", "/api/denials", []reqOpt{cookie(v.oldCookieName(), good)}},
		{"query token", "/api/denials", []reqOpt{query("token=" + good)}},
		{"query token with bearer", "/api/denials", []reqOpt{bearer(good), query("token=" + good)}},
		{"query token on the page", "/", []reqOpt{query("token=" + good)}},
		{"wrong query token on the page", "/", []reqOpt{query("token=" + near)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, resp := v.do("GET", c.path, "", c.opts...)
			wantRefusal(t, status, body, http.StatusUnauthorized, mediator.CodeUnauthorized)
			if len(resp.Header.Values("Set-Cookie")) != 0 {
				t.Errorf("a refused request got a cookie: %v", resp.Header.Values("Set-Cookie"))
			}
			if strings.Contains(body, good) {
				t.Errorf("the refusal leaks the token")
			}
		})
	}
	t.Run("accepted bearer", func(t *testing.T) {
		var p store.DenialPage
		v.api("GET", "/api/denials", "", 200, &p)
	})
}

// TestPageAndAssetsNeedNoToken: the page gets its token from the URL
// fragment, which the browser never sends, so the page and its files are
// served to anyone who passes the Host check. They are the same in every
// build and hold nothing secret.
func TestPageAndAssetsNeedNoToken(t *testing.T) {
	v := newTestViewer(t, nil)
	for path, want := range map[string]string{
		"/":                   `id="denials"`,
		"/static/viewer.js":   "Authorization",
		"/static/viewer.css":  "#denials",
		"/static/index.html/": "",
	} {
		status, body, resp := v.do("GET", path, "")
		if want == "" {
			if status != http.StatusNotFound {
				t.Errorf("GET %s: %d; want 404", path, status)
			}
			continue
		}
		if status != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s without a token: %d %.100s", path, status, body)
		}
		if strings.Contains(body, v.token.String()) {
			t.Errorf("GET %s: the public page holds the token", path)
		}
		if len(resp.Header.Values("Set-Cookie")) != 0 {
			t.Errorf("GET %s set a cookie", path)
		}
	}
	// A foreign Host still gets nothing, page included.
	status, body, _ := v.do("GET", "/", "", hostHeader("evil.example:80"))
	wantRefusal(t, status, body, http.StatusForbidden, mediator.CodeUnauthorized)
}

// TestNoCookieCarriesTheToken: cookies ignore ports, so a cookie the viewer
// set would go along with every request the browser makes to any other
// port of 127.0.0.1, where whoever listens could replay it. A browser (a
// cookie jar, which shares cookies across ports as browsers do) uses the
// viewer every way there is, old URL shape included, then loads something
// from a listener on another loopback port: the listener must learn
// nothing, and the viewer must never have set a cookie.
func TestNoCookieCarriesTheToken(t *testing.T) {
	v := newTestViewer(t, nil)
	tok := v.token.String()
	seedDenials(t, v.st, 2, "alpha")

	var seen []string // every header line and URL the listener received
	var mu sync.Mutex
	listener := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.URL.String())
		for k, vals := range r.Header {
			seen = append(seen, k+": "+strings.Join(vals, ", "))
		}
	}))
	defer listener.Close()
	if !strings.HasPrefix(listener.URL, "http://127.0.0.1:") || listener.URL == v.base {
		t.Fatalf("the listener %s is not another port of 127.0.0.1", listener.URL)
	}

	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	get := func(path string, h http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", v.base+path, nil)
		for k, vals := range h {
			req.Header[k] = vals
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
			t.Errorf("GET %s set cookies %v", path, sc)
		}
		return resp
	}
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	get("/#token="+tok, nil) // the printed URL; the client drops the fragment as browsers do
	get("/static/viewer.js", nil)
	get("/?token="+tok, nil) // the old URL shape, from a bookmark or history
	get("/api/denials", auth)
	get("/api/denials/export?format=csv", auth)
	get("/api/denials", http.Header{"Authorization": {"Bearer " + nearToken(tok)}})
	h := http.Header{"Origin": {v.base}, "Sec-Websocket-Protocol": {wsProtocols(tok)}}
	ws, resp, err := (&websocket.Dialer{Jar: jar, HandshakeTimeout: 5 * time.Second}).Dial("ws://"+v.host+"/ws", h)
	if err != nil {
		t.Fatalf("dial /ws: %v", err)
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("the websocket upgrade set cookies %v", sc)
	}
	readWS(t, ws, "hello", 5*time.Second)
	ws.Close()

	for _, u := range []string{v.base + "/", "http://localhost:" + strings.TrimPrefix(v.base, "http://127.0.0.1:") + "/"} {
		if u2, _ := url.Parse(u); len(jar.Cookies(u2)) != 0 {
			t.Errorf("the browser holds cookies for %s: %v", u, jar.Cookies(u2))
		}
	}
	lresp, err := browser.Get(listener.URL + "/pixel.gif")
	if err != nil {
		t.Fatal(err)
	}
	lresp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the listener received nothing")
	}
	for _, line := range seen {
		if strings.Contains(line, tok) || strings.HasPrefix(line, "Cookie:") {
			t.Errorf("the listener on another port received %q", line)
		}
	}
}

func TestForeignHostHeadersAreRefused(t *testing.T) {
	v := newTestViewer(t, nil)
	_, port, _ := strings.Cut(v.host, ":")
	for _, h := range []string{
		"evil.example:" + port, // DNS rebinding: the page's own name
		"evil.example",         // no port
		"127.0.0.1",            // no port
		"127.0.0.1:1",          // another port
		"localhost.evil.example:" + port,
		"127.0.0.1.nip.io:" + port,
		"10.0.0.1:" + port,
		"0.0.0.0:" + port,
		"[::ffff:127.0.0.1]:" + port, // the same address, spelt otherwise: not a name we serve
		"127.1:" + port,
	} {
		t.Run(h, func(t *testing.T) {
			status, body, _ := v.do("GET", "/api/denials", "", bearer(v.token.String()), hostHeader(h))
			wantRefusal(t, status, body, http.StatusForbidden, mediator.CodeUnauthorized)
		})
	}
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port} {
		t.Run("accepted "+h, func(t *testing.T) {
			v.api("GET", "/api/denials", "", 200, nil, hostHeader(h))
		})
	}
}

func TestSecurityHeadersOnEveryReply(t *testing.T) {
	v := newTestViewer(t, nil)
	for _, c := range []struct {
		name, path string
		opts       []reqOpt
	}{
		{"page", "/", nil},
		{"script", "/static/viewer.js", nil},
		{"api", "/api/denials", []reqOpt{bearer(v.token.String())}},
		{"refusal", "/api/denials", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, resp := v.do("GET", c.path, "", c.opts...)
			h := resp.Header
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("CSP %q lacks %s", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
				t.Errorf("CSP %q allows inline or eval", csp)
			}
			for k, want := range map[string]string{
				"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
				"Cross-Origin-Resource-Policy": "same-origin", "Cache-Control": "no-store",
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q; want %q", k, got, want)
				}
			}
			if h.Get("Access-Control-Allow-Origin") != "" {
				t.Errorf("CORS header set")
			}
		})
	}
	// The static directory is not listed.
	status, _, _ := v.do("GET", "/static/", "", bearer(v.token.String()))
	if status != http.StatusNotFound {
		t.Errorf("GET /static/ = %d; want 404", status)
	}
}

func TestStateChangesNeedSameOrigin(t *testing.T) {
	v := newTestViewer(t, nil)
	tok := v.token.String()
	body := `{"settings":{"permissionLevel":"low"}}`
	path := "/api/sessions/s1/settings"
	_, port, _ := strings.Cut(v.host, ":")
	refused := []struct {
		name   string
		opts   []reqOpt
		status int
	}{
		{"from another port", []reqOpt{bearer(tok), header("Origin", "http://127.0.0.1:1")}, 403},
		{"from another scheme", []reqOpt{bearer(tok), header("Origin", "https://127.0.0.1:"+port)}, 403},
		{"from null origin", []reqOpt{bearer(tok), header("Origin", "null")}, 403},
		{"from a page of another origin", []reqOpt{bearer(tok), header("Origin", "http://evil.example")}, 403},
		{"cross-site fetch", []reqOpt{bearer(tok), header("Origin", v.base), header("Sec-Fetch-Site", "same-site")}, 403},
		{"the old cookie with our origin", []reqOpt{cookie(v.oldCookieName(), tok), header("Origin", v.base)}, 401},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			status, b, _ := v.do("PUT", path, body, c.opts...)
			wantRefusal(t, status, b, c.status, mediator.CodeUnauthorized)
			if _, err := v.st.SessionSettings(t.Context(), "s1"); mediator.CodeOf(err) != mediator.CodeUnknownSession {
				t.Fatalf("a refused request created the session: %v", err)
			}
		})
	}
	t.Run("form post content type", func(t *testing.T) {
		status, b, _ := v.do("PUT", path, body, bearer(tok), header("Origin", v.base), header("Content-Type", "text/plain"))
		wantRefusal(t, status, b, http.StatusBadRequest, mediator.CodeBadRequest)
	})
	t.Run("own page", func(t *testing.T) {
		v.api("PUT", path, body, 200, nil, header("Origin", v.base), header("Sec-Fetch-Site", "same-origin"))
	})
	t.Run("program with bearer", func(t *testing.T) {
		v.api("PUT", path, body, 200, nil)
	})
}

// TestUnsafeBindAdmitsOnlyTheBoundAddress: with --unsafe-bind the bound
// address joins the loopback names at the listening port; nothing else does.
func TestUnsafeBindAdmitsOnlyTheBoundAddress(t *testing.T) {
	s := &Server{cfg: Config{UnsafeBindHost: "192.0.2.7"}, port: "8080"}
	for host, want := range map[string]bool{
		"192.0.2.7:8080": true, "127.0.0.1:8080": true, "[::1]:8080": true,
		"192.0.2.7:8081": false, "192.0.2.70:8080": false, "192.0.2.7": false, "evil.example:8080": false,
	} {
		if got := s.hostAllowed(host); got != want {
			t.Errorf("hostAllowed(%q) = %v; want %v", host, got, want)
		}
	}
	if (&Server{cfg: Config{}, port: ""}).hostAllowed("127.0.0.1:") {
		t.Error("a server not yet listening admitted a Host")
	}
}
