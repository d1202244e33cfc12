package netproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// echo answers "METHOD path body" and reflects a few request headers.
func echo(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("X-Auth", r.Header.Get("Authorization"))
	w.Header().Set("X-Custom", r.Header.Get("X-Custom"))
	w.Header().Set("X-Proto", r.Proto)
	w.Header().Set("X-Host", r.Host)
	fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RequestURI(), b)
}

func TestFetchAllowedLiteral(t *testing.T) {
	srv := newCanary(t, echo)
	f, _ := newTestFetcher(t, Config{})
	acl := mustACL(t, hostPortOf(srv))
	ctx := context.Background()

	resp, err := f.Fetch(ctx, acl, Request{URL: srv.URL + "/p?q=1", Headers: map[string]string{"X-Custom": "v", "Cookie": "a=b"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || resp.StatusText != "OK" || string(resp.Body) != "GET /p?q=1 " {
		t.Fatalf("resp %d %q %q", resp.Status, resp.StatusText, resp.Body)
	}
	if got := resp.Headers["X-Custom"]; len(got) != 1 || got[0] != "v" {
		t.Fatalf("X-Custom = %v", got)
	}
	if resp.FinalURL != srv.URL+"/p?q=1" || len(resp.Redirects) != 0 {
		t.Fatalf("FinalURL %q Redirects %v", resp.FinalURL, resp.Redirects)
	}

	resp, err = f.Fetch(ctx, acl, Request{URL: srv.URL + "/post", Method: "post", Body: []byte("hello")})
	if err != nil || string(resp.Body) != "POST /post hello" {
		t.Fatalf("POST: %v %q", err, resp.Body)
	}
	resp, err = f.Fetch(ctx, acl, Request{URL: srv.URL + "/", Method: "HEAD"})
	if err != nil || resp.Status != 200 || len(resp.Body) != 0 {
		t.Fatalf("HEAD: %v %+v", err, resp)
	}

	// The IPv4-mapped spelling reaches the same listed address.
	resp, err = f.Fetch(ctx, acl, get("http://[::ffff:127.0.0.1]:"+srv.Port+"/m"))
	if err != nil || string(resp.Body) != "GET /m " {
		t.Fatalf("mapped: %v", err)
	}
	if h := resp.Headers["X-Host"]; len(h) != 1 || h[0] != hostPortOf(srv) {
		t.Fatalf("Host header sent %v, want the canonical %s", h, hostPortOf(srv))
	}
}

func TestFetchLocalhostNeverResolved(t *testing.T) {
	srv := newCanary(t, echo)
	res := newResolver()
	f, _ := newTestFetcher(t, Config{Resolver: res})
	acl := mustACL(t, "localhost:"+srv.Port)
	resp, err := f.Fetch(context.Background(), acl, get("http://localhost:"+srv.Port+"/x"))
	if err != nil || string(resp.Body) != "GET /x " {
		t.Fatalf("%v", err)
	}
	if n := res.lookups.Load(); n != 0 {
		t.Fatalf("localhost was sent to the resolver %d times", n)
	}
}

// TestFetchNameToPrivate: a name entry never reaches a non-public address,
// whatever the resolver says. Every answer points at the canary's machine.
func TestFetchNameToPrivate(t *testing.T) {
	srv := newCanary(t, nil)
	res := newResolver(
		"rebind.test", "127.0.0.1",
		"mapped.test", "::ffff:127.0.0.1",
		"loop6.test", "::1",
		"nat64.test", "64:ff9b::7f00:1",
		"zero.test", "0.0.0.0",
		"mixed.test", "127.0.0.1", "mixed.test", "8.8.8.8",
		"example.com", "127.0.0.1",
		"meta.test", "169.254.169.254",
		"intra.test", "10.1.2.3",
		"cgnat.test", "100.64.0.1",
		"ula.test", "fd00::1",
		"zone.test", "fe80::1%lo",
	)
	f, g := newTestFetcher(t, Config{Resolver: res})
	acl := mustACL(t, "rebind.test", "mapped.test", "loop6.test", "nat64.test", "zero.test",
		"mixed.test", "example.com", "meta.test", "intra.test", "cgnat.test", "ula.test", "zone.test",
		"127.0.0.1:1") // a literal for another port must not help
	for name := range res.m {
		t.Run(name, func(t *testing.T) {
			u := "http://" + name + ":" + srv.Port + "/"
			before := res.lookups.Load()
			_, err := f.Fetch(context.Background(), acl, get(u))
			de := wantDeny(t, err, mediator.CodePrivateAddress, 0)
			if de.URL != u {
				t.Fatalf("DenyError.URL = %q, want %q", de.URL, u)
			}
			if n := res.lookups.Load() - before; n != 1 {
				t.Fatalf("%d lookups, want exactly 1 (the answer checked is the answer used)", n)
			}
		})
	}
	srv.Untouched(t)
	if n := g.count(); n != 0 {
		t.Fatalf("%d dials for denied names", n)
	}
}

// TestFetchDialsCheckedAddress: a public answer is dialled as that address,
// never as the name (the guard stands a loopback server in for it).
func TestFetchDialsCheckedAddress(t *testing.T) {
	srv := newCanary(t, echo)
	res := newResolver("pub.test", "8.8.8.8", "pub.test", "2001:4860:4860::8888")
	f, g := newTestFetcher(t, Config{Resolver: res})
	g.remap[netip.MustParseAddrPort("8.8.8.8:80")] = hostPortOf(srv)
	resp, err := f.Fetch(context.Background(), mustACL(t, "pub.test"), get("http://pub.test/n"))
	if err != nil || string(resp.Body) != "GET /n " {
		t.Fatalf("%v", err)
	}
	if h := resp.Headers["X-Host"]; len(h) != 1 || h[0] != "pub.test" {
		t.Fatalf("Host header %v", h)
	}
	if g.dials[0] != "8.8.8.8:80" {
		t.Fatalf("dialled %v", g.dials)
	}
}

// TestFetchTLS: TLS verifies the name (SNI is the URL's host), also when the
// connection goes to a checked address.
func TestFetchTLS(t *testing.T) {
	srv := newTLSCanary(t, echo)
	res := newResolver("www.example.com", "8.8.4.4", "other.test", "8.8.4.4")
	f, g := newTestFetcher(t, Config{Resolver: res, RootCAs: rootsOf(srv)})
	port := srv.Port
	g.remap[netip.MustParseAddrPort("8.8.4.4:"+port)] = hostPortOf(srv)
	ctx := context.Background()

	resp, err := f.Fetch(ctx, mustACL(t, hostPortOf(srv)), get(srv.URL+"/lit"))
	if err != nil || string(resp.Body) != "GET /lit " {
		t.Fatalf("literal: %v", err)
	}
	if p := resp.Headers["X-Proto"]; len(p) != 1 || p[0] != "HTTP/2.0" {
		t.Fatalf("protocol %v, want HTTP/2.0 over TLS", p)
	}
	resp, err = f.Fetch(ctx, mustACL(t, "example.com"), get("https://www.example.com:"+port+"/name"))
	if err != nil || string(resp.Body) != "GET /name " {
		t.Fatalf("name: %v", err)
	}
	// The certificate does not name other.test: refused although the
	// address and the ACL are fine.
	_, err = f.Fetch(ctx, mustACL(t, "other.test"), get("https://other.test:"+port+"/"))
	wantErr(t, err, mediator.CodeUpstreamError)
	if !strings.Contains(mediator.MessageOf(err), "certificate") {
		t.Fatalf("message %q", mediator.MessageOf(err))
	}
}

// TestFetchStaticDenialsOffline: every URL refused by the static rules is
// refused by Fetch with the same code, before any lookup or dial.
func TestFetchStaticDenialsOffline(t *testing.T) {
	res := newResolver()
	f, g := newTestFetcher(t, Config{Resolver: res})
	acl := mustACL(t, hostileACL...)
	n := 0
	for _, r := range readFixture(t, "hostile_urls.txt", false) {
		if r.word == string(mediator.CodeAllowed) {
			continue
		}
		n++
		t.Run(fmt.Sprintf("line%d", r.line), func(t *testing.T) {
			_, err := f.Fetch(context.Background(), acl, get(r.quoted))
			wantDeny(t, err, mediator.Code(r.word), 0)
		})
	}
	if n == 0 {
		t.Fatal("no rows")
	}
	if l, d := res.lookups.Load(), g.count(); l != 0 || d != 0 {
		t.Fatalf("static denials made %d lookups and %d dials", l, d)
	}
}

// redirector answers /r?to=URL&code=N with that redirect.
func redirector(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/r":
		code := 302
		fmt.Sscan(r.URL.Query().Get("code"), &code)
		n := 0
		fmt.Sscan(r.URL.Query().Get("pad"), &n)
		w.Header()["Location"] = []string{r.URL.Query().Get("to") + strings.Repeat("a", n)}
		w.WriteHeader(code)
	case "/loop":
		http.Redirect(w, r, "/loop", http.StatusFound)
	default:
		echo(w, r)
	}
}

// redirectURL asks the redirector for a redirect to "to"; a "&pad=N"
// suffix on "to" makes it append N bytes (for over-long Locations).
func redirectURL(origin, to string, code int) string {
	v := url.Values{"code": {fmt.Sprint(code)}}
	if i := strings.Index(to, "&pad="); i >= 0 {
		to, v["pad"] = to[:i], []string{to[i+5:]}
	}
	v.Set("to", to)
	return origin + "/r?" + v.Encode()
}

// TestFetchRedirectToHostile: an allowed server redirects to the canary in
// every disguise; each hop is refused with the code the URL gets directly,
// and the canary is never reached.
func TestFetchRedirectToHostile(t *testing.T) {
	origin := newCanary(t, redirector)
	target := newCanary(t, nil)
	res := newResolver("rebind.test", "127.0.0.1")
	f, _ := newTestFetcher(t, Config{Resolver: res})
	acl := mustACL(t, hostPortOf(origin), "rebind.test")
	cp := target.Port
	cases := []struct {
		to   string
		code mediator.Code
	}{
		{"http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed},
		{"//127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed},
		{"http://localhost:" + cp + "/", mediator.CodeHostNotAllowed},
		{"http://[::ffff:127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed},
		{"http://[::1]:" + cp + "/", mediator.CodeHostNotAllowed},
		{"http://0.0.0.0:" + cp + "/", mediator.CodeHostNotAllowed},
		{"http://2130706433:" + cp + "/", mediator.CodeNonCanonicalHost},
		{"http://0x7f.1:" + cp + "/", mediator.CodeNonCanonicalHost},
		{"http://0177.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost},
		{"http://127.1:" + cp + "/", mediator.CodeNonCanonicalHost},
		{"http://\uff11\uff12\uff17.\uff10.\uff10.\uff11:" + cp + "/", mediator.CodeNonCanonicalHost},
		{"http://%31%32%37.0.0.1:" + cp + "/", mediator.CodeNonCanonicalHost},
		{"http://rebind.test:" + cp + "/", mediator.CodePrivateAddress},
		{"http://" + hostPortOf(origin) + "@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL},
		{"http://" + hostPortOf(origin) + "\\@127.0.0.1:" + cp + "/", mediator.CodeInvalidURL},
		{"/\\127.0.0.1:" + cp + "/", mediator.CodeInvalidURL},
		{"http://127.0.0.1:" + cp + "/\tx", mediator.CodeInvalidURL},
		{"file:///etc/passwd", mediator.CodeSchemeNotAllowed},
		{"javascript:alert(1)", mediator.CodeSchemeNotAllowed},
		{"ftp://127.0.0.1:" + cp + "/", mediator.CodeSchemeNotAllowed},
		{"data:,x", mediator.CodeSchemeNotAllowed},
		{"http://127.0.0.1:" + cp + "/&pad=" + fmt.Sprint(MaxURLLen), mediator.CodeTooLarge},
	}
	for _, code := range []int{301, 302, 303, 307, 308} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%d/%s", code, c.to[:min(len(c.to), 60)]), func(t *testing.T) {
				_, err := f.Fetch(context.Background(), acl, Request{URL: redirectURL(origin.URL, c.to, code), Method: "POST", Body: []byte("x")})
				wantDeny(t, err, c.code, 1)
			})
		}
	}
	// Two hops: allowed relative redirect, then the hostile one.
	t.Run("second hop", func(t *testing.T) {
		first := "/r?" + url.Values{"to": {"http://localhost:" + cp + "/"}, "code": {"307"}}.Encode()
		_, err := f.Fetch(context.Background(), acl, get(redirectURL(origin.URL, first, 302)))
		de := wantDeny(t, err, mediator.CodeHostNotAllowed, 2)
		if de.URL != "http://localhost:"+cp+"/" {
			t.Fatalf("URL %q", de.URL)
		}
	})
	target.Untouched(t)
	if origin.Hits.Load() == 0 {
		t.Fatal("origin never asked: the test proves nothing")
	}
}

func TestFetchRedirectAllowed(t *testing.T) {
	a := newCanary(t, redirector)
	b := newCanary(t, echo)
	f, _ := newTestFetcher(t, Config{})
	acl := mustACL(t, hostPortOf(a), hostPortOf(b))
	ctx := context.Background()
	auth := map[string]string{"Authorization": "Bearer s3cret", "Content-Type": "text/plain"}

	t.Run("relative 302 POST becomes GET", func(t *testing.T) {
		resp, err := f.Fetch(ctx, acl, Request{URL: redirectURL(a.URL, "/final", 302), Method: "POST", Body: []byte("b"), Headers: auth})
		if err != nil || string(resp.Body) != "GET /final " {
			t.Fatalf("%v %q", err, resp.Body)
		}
		if resp.FinalURL != a.URL+"/final" || len(resp.Redirects) != 1 || resp.Redirects[0] != a.URL+"/final" {
			t.Fatalf("FinalURL %q Redirects %v", resp.FinalURL, resp.Redirects)
		}
		if h := resp.Headers["X-Auth"]; len(h) != 1 || h[0] != "Bearer s3cret" {
			t.Fatalf("same-origin redirect lost Authorization: %v", h)
		}
	})
	t.Run("307 keeps method and body, drops credentials cross-origin", func(t *testing.T) {
		resp, err := f.Fetch(ctx, acl, Request{URL: redirectURL(a.URL, b.URL+"/x", 307), Method: "PUT", Body: []byte("body"), Headers: auth})
		if err != nil || string(resp.Body) != "PUT /x body" {
			t.Fatalf("%v %q", err, resp.Body)
		}
		if h := resp.Headers["X-Auth"]; len(h) != 1 || h[0] != "" {
			t.Fatalf("Authorization leaked to another origin: %v", h)
		}
	})
	t.Run("redirect without Location is the response", func(t *testing.T) {
		resp, err := f.Fetch(ctx, acl, get(redirectURL(a.URL, "", 301)))
		if err != nil || resp.Status != 301 {
			t.Fatalf("%v %+v", err, resp)
		}
	})
}

func TestFetchTooManyRedirects(t *testing.T) {
	srv := newCanary(t, redirector)
	acl := mustACL(t, hostPortOf(srv))
	f, _ := newTestFetcher(t, Config{})
	_, err := f.Fetch(context.Background(), acl, get(srv.URL+"/loop"))
	wantDeny(t, err, mediator.CodeTooManyRedirects, DefaultMaxRedirects+1)
	if h := srv.Hits.Load(); h != DefaultMaxRedirects+1 {
		t.Fatalf("%d requests, want %d", h, DefaultMaxRedirects+1)
	}
	f2, _ := newTestFetcher(t, Config{MaxRedirects: -1})
	_, err = f2.Fetch(context.Background(), acl, get(srv.URL+"/loop"))
	wantDeny(t, err, mediator.CodeTooManyRedirects, 1)
}

func TestFetchResponseTooLarge(t *testing.T) {
	const max = 1000
	srv := newCanary(t, func(w http.ResponseWriter, r *http.Request) {
		n := max
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		if r.URL.Query().Get("chunked") != "" {
			for i := 0; i < n; i++ {
				w.Write([]byte{'a'})
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(n))
		w.Write([]byte(strings.Repeat("a", n)))
	})
	f, _ := newTestFetcher(t, Config{MaxResponseBytes: max})
	acl := mustACL(t, hostPortOf(srv))
	ctx := context.Background()
	for _, q := range []string{"", "&chunked=1"} {
		resp, err := f.Fetch(ctx, acl, get(srv.URL+"/?n=1000"+q))
		if err != nil || len(resp.Body) != max {
			t.Fatalf("at the limit%s: %v", q, err)
		}
		_, err = f.Fetch(ctx, acl, get(srv.URL+"/?n=1001"+q))
		wantErr(t, err, mediator.CodeTooLarge)
	}
}

func TestFetchRequestLimits(t *testing.T) {
	srv := newCanary(t, nil)
	f, g := newTestFetcher(t, Config{MaxRequestBytes: 10})
	acl := mustACL(t, hostPortOf(srv))
	big := map[string]string{}
	for i := 0; i <= MaxHeaders; i++ {
		big[fmt.Sprint("X-H", i)] = "v"
	}
	cases := []struct {
		name string
		req  Request
		code mediator.Code
	}{
		{"body", Request{Method: "POST", Body: []byte("01234567890")}, mediator.CodeTooLarge},
		{"TRACE", Request{Method: "TRACE"}, mediator.CodeMethodNotAllowed},
		{"CONNECT", Request{Method: "CONNECT"}, mediator.CodeMethodNotAllowed},
		{"bad method", Request{Method: "GET /x"}, mediator.CodeMethodNotAllowed},
		{"Host", Request{Headers: map[string]string{"host": "evil.test"}}, mediator.CodeHeaderNotAllowed},
		{"Content-Length", Request{Headers: map[string]string{"Content-Length": "5"}}, mediator.CodeHeaderNotAllowed},
		{"Transfer-Encoding", Request{Headers: map[string]string{"Transfer-Encoding": "chunked"}}, mediator.CodeHeaderNotAllowed},
		{"Connection", Request{Headers: map[string]string{"Connection": "close"}}, mediator.CodeHeaderNotAllowed},
		{"Keep-Alive", Request{Headers: map[string]string{"keep-alive": "1"}}, mediator.CodeHeaderNotAllowed},
		{"TE", Request{Headers: map[string]string{"TE": "trailers"}}, mediator.CodeHeaderNotAllowed},
		{"Trailer", Request{Headers: map[string]string{"Trailer": "x"}}, mediator.CodeHeaderNotAllowed},
		{"Upgrade", Request{Headers: map[string]string{"Upgrade": "h2c"}}, mediator.CodeHeaderNotAllowed},
		{"Proxy-Authorization", Request{Headers: map[string]string{"Proxy-Authorization": "x"}}, mediator.CodeHeaderNotAllowed},
		{"Proxy-Connection", Request{Headers: map[string]string{"proxy-connection": "x"}}, mediator.CodeHeaderNotAllowed},
		{"Proxy-anything", Request{Headers: map[string]string{"Proxy-Foo": "x"}}, mediator.CodeHeaderNotAllowed},
		{"Expect", Request{Headers: map[string]string{"Expect": "100-continue"}}, mediator.CodeHeaderNotAllowed},
		{"bad name", Request{Headers: map[string]string{"X Y": "v"}}, mediator.CodeHeaderNotAllowed},
		{"empty name", Request{Headers: map[string]string{"": "v"}}, mediator.CodeHeaderNotAllowed},
		{"CRLF value", Request{Headers: map[string]string{"X-A": "v\r\nHost: evil.test"}}, mediator.CodeHeaderNotAllowed},
		{"NUL value", Request{Headers: map[string]string{"X-A": "v\x00"}}, mediator.CodeHeaderNotAllowed},
		{"duplicate", Request{Headers: map[string]string{"X-A": "1", "x-a": "2"}}, mediator.CodeHeaderNotAllowed},
		{"too many", Request{Headers: big}, mediator.CodeTooLarge},
		{"huge value", Request{Headers: map[string]string{"X-A": strings.Repeat("v", MaxHeaderBytes+1)}}, mediator.CodeHeaderNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.URL = srv.URL + "/"
			_, err := f.Fetch(context.Background(), acl, c.req)
			wantDeny(t, err, c.code, 0)
		})
	}
	srv.Untouched(t)
	if n := g.count(); n != 0 {
		t.Fatalf("%d dials", n)
	}
	// The limit itself is fine.
	if _, err := f.Fetch(context.Background(), acl, Request{URL: srv.URL, Method: "POST", Body: []byte("0123456789")}); err != nil {
		t.Fatal(err)
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newCanary(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Write([]byte("start"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	defer close(release)
	acl := mustACL(t, hostPortOf(srv))

	f, _ := newTestFetcher(t, Config{Timeout: 150 * time.Millisecond})
	for _, p := range []string{"/head", "/body"} {
		start := time.Now()
		_, err := f.Fetch(context.Background(), acl, get(srv.URL+p))
		wantErr(t, err, mediator.CodeTimeout)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s: timeout took %v", p, d)
		}
	}
	// The caller's deadline (the profile's executionTimeout) also applies.
	f2, _ := newTestFetcher(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := f2.Fetch(ctx, acl, get(srv.URL+"/head"))
	wantErr(t, err, mediator.CodeTimeout)
}

func TestFetchUpstreamErrors(t *testing.T) {
	srv := newCanary(t, nil)
	addr := hostPortOf(srv)
	srv.Close() // nothing listens there now
	f, _ := newTestFetcher(t, Config{Resolver: newResolver()})
	_, err := f.Fetch(context.Background(), mustACL(t, addr), get("http://"+addr+"/"))
	wantErr(t, err, mediator.CodeUpstreamError)
	if strings.Contains(mediator.MessageOf(err), "127.0.0.1") {
		t.Fatalf("message leaks detail: %q", mediator.MessageOf(err))
	}
	_, err = f.Fetch(context.Background(), mustACL(t, "nx.test"), get("http://nx.test/"))
	wantErr(t, err, mediator.CodeDNSError)
}

// TestFetchIgnoresProxyEnv: proxy variables must not divert fetches. The
// ACL even lists the proxy's address, so an environment-configured proxy
// would be dialled (and counted) if the variables were honoured.
func TestFetchIgnoresProxyEnv(t *testing.T) {
	proxy := newCanary(t, nil)
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	srv := newCanary(t, echo)
	res := newResolver("proxied.test", "8.8.8.8")
	f, g := newTestFetcher(t, Config{Resolver: res})
	g.remap[netip.MustParseAddrPort("8.8.8.8:80")] = hostPortOf(srv)
	acl := mustACL(t, "proxied.test", hostPortOf(proxy))
	resp, err := f.Fetch(context.Background(), acl, get("http://proxied.test/"))
	if err != nil || string(resp.Body) != "GET / " {
		t.Fatalf("%v", err)
	}
	proxy.Untouched(t)
	if len(g.dials) != 1 || g.dials[0] != "8.8.8.8:80" {
		t.Fatalf("dials %v, want the target's checked address only", g.dials)
	}
}

func TestFetchUnsafeProxy(t *testing.T) {
	proxy := newCanary(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proxied %s", r.URL.String())
	})
	pu, _ := url.Parse(proxy.URL)
	res := newResolver("pub.test", "8.8.8.8", "rebind.test", "127.0.0.1")
	f, _ := newTestFetcher(t, Config{Resolver: res, UnsafeProxyURL: pu})
	acl := mustACL(t, "pub.test", "rebind.test")
	resp, err := f.Fetch(context.Background(), acl, get("http://pub.test/x"))
	if err != nil || string(resp.Body) != "proxied http://pub.test/x" {
		t.Fatalf("%v %+v", err, resp)
	}
	_, err = f.Fetch(context.Background(), acl, get("http://rebind.test/x"))
	wantDeny(t, err, mediator.CodePrivateAddress, 0)
	_, err = f.Fetch(context.Background(), acl, get("http://2130706433/"))
	wantDeny(t, err, mediator.CodeNonCanonicalHost, 0)
	if h := proxy.Hits.Load(); h != 1 {
		t.Fatalf("proxy saw %d requests, want 1", h)
	}
}

// TestFetchMetadataLiteral: listing a metadata address does not unlock it.
func TestFetchMetadataLiteral(t *testing.T) {
	f, g := newTestFetcher(t, Config{Resolver: newResolver()})
	for _, e := range []string{"169.254.169.254", "[fd00:ec2::254]", "100.100.100.200", "168.63.129.16"} {
		t.Run(e, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), mustACL(t, e), get("http://"+e+"/latest/meta-data/"))
			wantDeny(t, err, mediator.CodePrivateAddress, 0)
		})
	}
	if n := g.count(); n != 0 {
		t.Fatalf("%d dials", n)
	}
}

// TestDialerRechecks: the dialer refuses on its own, without Check, so a
// path that skipped Check could still not reach a local address.
func TestDialerRechecks(t *testing.T) {
	srv := newCanary(t, nil)
	f, _ := newTestFetcher(t, Config{Resolver: newResolver("rebind.test", "127.0.0.1")})
	listed := mustACL(t, hostPortOf(srv))
	other := mustACL(t, "127.0.0.1:1")
	cases := []struct {
		acl  *ACL
		addr string
		ok   bool
	}{
		{nil, hostPortOf(srv), false},
		{other, hostPortOf(srv), false},
		{listed, hostPortOf(srv), true},
		{listed, "localhost:" + srv.Port, false},
		{listed, "rebind.test:" + srv.Port, false},
		{listed, "169.254.169.254:80", false},
	}
	for _, c := range cases {
		ctx := context.WithValue(context.Background(), aclKey{}, c.acl)
		conn, err := f.dialContext(ctx, "tcp", c.addr)
		if (err == nil) != c.ok {
			t.Fatalf("dial %s: err %v, want ok=%v", c.addr, err, c.ok)
		}
		if conn != nil {
			conn.Close()
		}
		if !c.ok && !IsDenial(err) {
			t.Fatalf("dial %s: %v is not a denial", c.addr, err)
		}
	}
}
