package viewer

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

func TestEveryRequestNeedsTheToken(t *testing.T) {
	v := newTestViewer(t, nil)
	good := v.token.String()
	// Same length as the real token, one character off: the compare must
	// not stop at a prefix.
	last := "A"
	if good[len(good)-1] == 'A' {
		last = "B"
	}
	near := good[:len(good)-1] + last
	cases := []struct {
		name string
		path string
		opts []reqOpt
	}{
		{"no token page", "/", nil},
		{"no token api", "/api/denials", nil},
		{"no token static", "/static/viewer.js", nil},
		{"no token ws", "/ws", nil},
		{"wrong query token", "/?token=" + near, nil},
		{"empty query token", "/?token=", nil},
		{"token prefix", "/api/denials?token=" + good[:10], nil},
		{"token twice as long", "/api/denials?token=" + good + good, nil},
		{"wrong cookie", "/api/denials", []reqOpt{cookie(v.cookieName(), near)}},
		{"cookie of another port", "/api/denials", []reqOpt{cookie("nmhost_viewer_1", good)}},
		{"wrong bearer", "/api/denials", []reqOpt{bearer(near)}},
		{"basic auth", "/api/denials", []reqOpt{header("Authorization", "Basic "+good)}},
		{"bearer lowercase scheme", "/api/denials", []reqOpt{header("Authorization", "bearer "+good)}},
		// A wrong header is not rescued by a right cookie.
		{"wrong bearer right cookie", "/api/denials", []reqOpt{bearer(near), cookie(v.cookieName(), good)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, resp := v.do("GET", c.path, "", c.opts...)
			wantRefusal(t, status, body, http.StatusUnauthorized, mediator.CodeUnauthorized)
			if len(resp.Cookies()) != 0 {
				t.Errorf("a refused request got a cookie: %v", resp.Cookies())
			}
			if strings.Contains(body, good) {
				t.Errorf("the refusal leaks the token")
			}
		})
	}
	for name, opt := range map[string]reqOpt{"bearer": bearer(good), "cookie": cookie(v.cookieName(), good)} {
		t.Run("accepted "+name, func(t *testing.T) {
			var p store.DenialPage
			v.api("GET", "/api/denials", "", 200, &p, opt)
		})
	}
}

func TestFirstVisitMovesTheTokenToACookie(t *testing.T) {
	v := newTestViewer(t, nil)
	status, _, resp := v.do("GET", "/?token="+v.token.String()+"&x=1", "")
	if status != http.StatusSeeOther {
		t.Fatalf("status %d; want 303", status)
	}
	if loc := resp.Header.Get("Location"); strings.Contains(loc, "token") || loc != "/?x=1" {
		t.Errorf("redirect to %q; want the same page without the token", loc)
	}
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %v", cs)
	}
	c := cs[0]
	if c.Name != v.cookieName() || c.Value != v.token.String() || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("cookie %+v; want HttpOnly, SameSite=Strict, Path=/", c)
	}
	status, body, _ := v.do("GET", "/", "", cookie(c.Name, c.Value))
	if status != 200 || !strings.Contains(body, `id="denials"`) {
		t.Fatalf("the page with the cookie: %d %.200s", status, body)
	}
	// The API takes the query token as is: no redirect for programs.
	status, _, _ = v.do("GET", "/api/denials?token="+v.token.String(), "")
	if status != 200 {
		t.Errorf("api with query token: %d", status)
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
		{"page", "/", []reqOpt{cookie(v.cookieName(), v.token.String())}},
		{"script", "/static/viewer.js", []reqOpt{cookie(v.cookieName(), v.token.String())}},
		{"api", "/api/denials", []reqOpt{bearer(v.token.String())}},
		{"refusal", "/", nil},
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
	body := `{"settings":{"permission_level":"low"}}`
	path := "/api/sessions/s1/settings"
	_, port, _ := strings.Cut(v.host, ":")
	refused := []struct {
		name string
		opts []reqOpt
	}{
		{"cookie without origin", []reqOpt{cookie(v.cookieName(), tok)}},
		{"cookie from another port", []reqOpt{cookie(v.cookieName(), tok), header("Origin", "http://127.0.0.1:1")}},
		{"cookie from another scheme", []reqOpt{cookie(v.cookieName(), tok), header("Origin", "https://127.0.0.1:"+port)}},
		{"cookie from null origin", []reqOpt{cookie(v.cookieName(), tok), header("Origin", "null")}},
		{"cookie cross-site fetch", []reqOpt{cookie(v.cookieName(), tok), header("Origin", v.base), header("Sec-Fetch-Site", "same-site")}},
		{"bearer from a page of another origin", []reqOpt{bearer(tok), header("Origin", "http://evil.example")}},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			status, b, _ := v.do("PUT", path, body, c.opts...)
			wantRefusal(t, status, b, http.StatusForbidden, mediator.CodeUnauthorized)
			if _, err := v.st.SessionSettings(t.Context(), "s1"); mediator.CodeOf(err) != mediator.CodeUnknownSession {
				t.Fatalf("a refused request created the session: %v", err)
			}
		})
	}
	t.Run("form post content type", func(t *testing.T) {
		status, b, _ := v.do("PUT", path, body, cookie(v.cookieName(), tok), header("Origin", v.base), header("Content-Type", "text/plain"))
		wantRefusal(t, status, b, http.StatusBadRequest, mediator.CodeBadRequest)
	})
	t.Run("own page", func(t *testing.T) {
		v.api("PUT", path, body, 200, nil, header("Authorization", ""), cookie(v.cookieName(), tok), header("Origin", v.base), header("Sec-Fetch-Site", "same-origin"))
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
