package netproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// formsACL exercises every entry form at once, allow and deny.
var formsACL = []string{
	"example.com", "!admin.example.com", "!example.com:8080", "!*.ads.example.com",
	"https://secure.example.org", "http://plain.example.net:8080",
	"10.0.0.0/8", "!10.9.0.0/16", "[fd00::]/8", "192.168.1.0/24:8443",
	"localhost", "!http://localhost", "!example.info",
}

func TestCheckEntryForms(t *testing.T) {
	acl := mustACL(t, formsACL...)
	tests := []struct {
		name, url string
		code      mediator.Code
		entry     string // the entry that matched (allowed) or that refused (named in the reason)
		priv      bool
	}{
		{"domain", "http://example.com/", mediator.CodeAllowed, "example.com", false},
		{"deny subdomain", "http://admin.example.com/", mediator.CodeHostNotAllowed, "!admin.example.com", false},
		{"deny below deny", "https://x.admin.example.com/", mediator.CodeHostNotAllowed, "!admin.example.com", false},
		{"deny spelt upper case", "http://ADMIN.Example.COM./", mediator.CodeHostNotAllowed, "!admin.example.com", false},
		{"deny idn spelling", "http://\uff41dmin.example.com/", mediator.CodeHostNotAllowed, "!admin.example.com", false},
		{"deny port", "http://example.com:8080/", mediator.CodeHostNotAllowed, "!example.com:8080", false},
		{"deny port other name", "http://www.example.com:8080/", mediator.CodeHostNotAllowed, "!example.com:8080", false},
		{"deny wildcard apex allowed", "http://ads.example.com/", mediator.CodeAllowed, "example.com", false},
		{"deny wildcard", "http://x.ads.example.com/", mediator.CodeHostNotAllowed, "!*.ads.example.com", false},
		{"scheme https", "https://secure.example.org/", mediator.CodeAllowed, "https://secure.example.org", false},
		{"scheme https any port", "https://a.secure.example.org:444/", mediator.CodeAllowed, "https://secure.example.org", false},
		{"scheme http refused", "http://secure.example.org/", mediator.CodeHostNotAllowed, "", false},
		{"scheme upper case", "HTTPS://secure.example.org/", mediator.CodeAllowed, "https://secure.example.org", false},
		{"scheme and port", "http://plain.example.net:8080/", mediator.CodeAllowed, "http://plain.example.net:8080", false},
		{"scheme and port wrong scheme", "https://plain.example.net:8080/", mediator.CodeHostNotAllowed, "", false},
		{"scheme and port wrong port", "http://plain.example.net/", mediator.CodeHostNotAllowed, "", false},
		{"range", "http://10.1.2.3/", mediator.CodeAllowed, "10.0.0.0/8", true},
		{"range mapped", "http://[::ffff:10.1.2.3]/", mediator.CodeAllowed, "10.0.0.0/8", true},
		{"range edge", "http://10.255.255.255/", mediator.CodeAllowed, "10.0.0.0/8", true},
		{"range outside", "http://11.0.0.1/", mediator.CodeHostNotAllowed, "", false},
		{"range deny inside", "http://10.9.1.1/", mediator.CodeHostNotAllowed, "!10.9.0.0/16", false},
		{"range deny mapped", "http://[::ffff:10.9.1.1]/", mediator.CodeHostNotAllowed, "!10.9.0.0/16", false},
		{"range hex spelling", "http://0x0a.1.2.3/", mediator.CodeNonCanonicalHost, "", false},
		{"range decimal spelling", "http://167838211/", mediator.CodeNonCanonicalHost, "", false},
		{"range short spelling", "http://10.1/", mediator.CodeNonCanonicalHost, "", false},
		{"range v6", "http://[fd00::5]/", mediator.CodeAllowed, "[fd00::]/8", true},
		{"range v6 other spelling", "http://[FD12:0:0::1]:9/", mediator.CodeAllowed, "[fd00::]/8", true},
		{"range v6 outside", "http://[fc00::1]/", mediator.CodeHostNotAllowed, "", false},
		{"range v6 zone", "http://[fd00::1%25eth0]/", mediator.CodeInvalidURL, "", false},
		{"range port", "https://192.168.1.5:8443/", mediator.CodeAllowed, "192.168.1.0/24:8443", true},
		{"range wrong port", "http://192.168.1.5/", mediator.CodeHostNotAllowed, "", false},
		{"range never matches a name", "http://10.example.com.evil.test/", mediator.CodeHostNotAllowed, "", false},
		{"localhost https", "https://localhost/", mediator.CodeAllowed, "localhost", true},
		{"localhost deny http", "http://localhost:9000/", mediator.CodeHostNotAllowed, "!http://localhost", false},
		{"deny without allow", "http://www.example.info/", mediator.CodeHostNotAllowed, "!example.info", false},
		{"userinfo", "http://example.com@10.9.1.1/", mediator.CodeInvalidURL, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, d := acl.Check(tt.url)
			if d.Code != tt.code {
				t.Fatalf("Check(%q) = %s (%s), want %s", tt.url, d.Code, d.Reason, tt.code)
			}
			if d.Allowed {
				if tg.Entry != tt.entry || tg.AllowPrivate != tt.priv {
					t.Fatalf("Check(%q) matched %q (private %v), want %q (%v)", tt.url, tg.Entry, tg.AllowPrivate, tt.entry, tt.priv)
				}
				return
			}
			if tt.entry != "" && !strings.Contains(d.Reason, `allowedHosts entry "`+tt.entry+`"`) {
				t.Fatalf("Check(%q) reason %q does not name %q", tt.url, d.Reason, tt.entry)
			}
			if tt.entry == "" && d.Code == mediator.CodeHostNotAllowed && strings.Contains(d.Reason, "refused by") {
				t.Fatalf("Check(%q) reason %q names a deny entry", tt.url, d.Reason)
			}
		})
	}
}

// TestCheckDenyWinsWhateverTheOrder: a deny entry refuses whether it comes
// before or after the allow entry, and however specific the allow entry is.
func TestCheckDenyWinsWhateverTheOrder(t *testing.T) {
	for _, list := range [][]string{
		{"!api.example.com", "https://api.example.com:443"},
		{"https://api.example.com:443", "!api.example.com"},
		{"!example.com", "api.example.com"},
		{"*.example.com", "!*.example.com"},
	} {
		t.Run(strings.Join(list, ","), func(t *testing.T) {
			if _, d := mustACL(t, list...).Check("https://api.example.com/"); d.Allowed || d.Code != mediator.CodeHostNotAllowed || !strings.Contains(d.Reason, "refused by") {
				t.Fatalf("decision %+v", d)
			}
		})
	}
}

// TestCheckListedLiterals: a listed literal is allowed whatever its class,
// except the classes that are not destinations (and metadata), which are
// refused with private_address and a reason saying why listing them does
// not help.
func TestCheckListedLiterals(t *testing.T) {
	tests := []struct {
		entry, url string
		allowed    bool
		why        string
	}{
		{"10.0.0.1", "http://10.0.0.1/", true, ""},
		{"127.0.0.1", "http://127.0.0.1/", true, ""},
		{"192.0.2.1", "http://192.0.2.1/", true, ""},
		{"169.254.1.1", "http://169.254.1.1/", true, ""},
		{"0.0.0.0", "http://0.0.0.0/", false, "reaches this machine itself"},
		{"0.0.1.0", "http://0.0.1.0/", false, "reaches this machine itself"},
		{"0.0.0.0/8", "http://0.0.1.0/", false, "reaches this machine itself"},
		{"[::]", "http://[::]/", false, "reaches this machine itself"},
		{"255.255.255.255", "http://255.255.255.255/", false, "not a destination"},
		{"224.0.0.1", "http://224.0.0.1/", false, "multicast"},
		{"169.254.169.254", "http://169.254.169.254/", false, "cloud credentials"},
		{"169.254.0.0/16", "http://169.254.169.254/", false, "cloud credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			_, d := mustACL(t, tt.entry).Check(tt.url)
			if d.Allowed != tt.allowed {
				t.Fatalf("Check(%q) with %q = %+v", tt.url, tt.entry, d)
			}
			if !tt.allowed && (d.Code != mediator.CodePrivateAddress || !strings.Contains(d.Reason, "even when listed") || !strings.Contains(d.Reason, tt.why)) {
				t.Fatalf("Check(%q): %s %q, want %s saying %q", tt.url, d.Code, d.Reason, mediator.CodePrivateAddress, tt.why)
			}
		})
	}
}

// TestCheckStrayPercent: a '%' that starts no escape is kept as WHATWG
// keeps it, in the path, query and fragment; the host rules are unchanged.
func TestCheckStrayPercent(t *testing.T) {
	acl := mustACL(t, "example.com", "127.0.0.1")
	tests := []struct {
		name, url string
		code      mediator.Code
		host      string
		send      string // the path sent on the wire
	}{
		{"path end", "http://example.com/100%", mediator.CodeAllowed, "example.com", "/100%"},
		{"path not hex", "http://example.com/a%zz/b", mediator.CodeAllowed, "example.com", "/a%zz/b"},
		{"path one digit", "http://example.com/%4", mediator.CodeAllowed, "example.com", "/%4"},
		{"path with valid escape", "http://example.com/%41%", mediator.CodeAllowed, "example.com", "/%41%"},
		{"fragment", "http://example.com/x#50%", mediator.CodeAllowed, "example.com", ""},
		{"query", "http://example.com/x?q=%", mediator.CodeAllowed, "example.com", ""},
		{"path and fragment", "http://example.com/%#%", mediator.CodeAllowed, "example.com", "/%"},
		{"double slash path sent escaped", "http://example.com//a%", mediator.CodeAllowed, "example.com", ""},
		{"host percent still refused", "http://ex%61mple.com/%", mediator.CodeNonCanonicalHost, "", ""},
		{"host not listed", "http://evil.test/%", mediator.CodeHostNotAllowed, "", ""},
		{"userinfo still refused", "http://example.com@evil.test/%", mediator.CodeInvalidURL, "", ""},
		{"literal", "http://127.0.0.1/%zz", mediator.CodeAllowed, "127.0.0.1", "/%zz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, d := acl.Check(tt.url)
			if d.Code != tt.code {
				t.Fatalf("Check(%q) = %s (%s), want %s", tt.url, d.Code, d.Reason, tt.code)
			}
			if !d.Allowed {
				return
			}
			if tg.Host != tt.host || tg.sendPath != tt.send {
				t.Fatalf("Check(%q): host %q, send path %q; want %q, %q", tt.url, tg.Host, tg.sendPath, tt.host, tt.send)
			}
			// The URL reported back is the same place, and is allowed again.
			if tg2, d2 := acl.Check(tg.URL.String()); !d2.Allowed || tg2.Host != tg.Host {
				t.Fatalf("Check(%q) -> %q -> %+v", tt.url, tg.URL, d2)
			}
		})
	}
}

// TestFetchStrayPercentSentAsWritten: the server receives the path exactly
// as the URL wrote it. net/http's server refuses such a request line, so a
// raw loopback listener reads it.
func TestFetchStrayPercentSentAsWritten(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	lines := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				line, _ := br.ReadString('\n')
				for {
					l, err := br.ReadString('\n')
					if err != nil || l == "\r\n" {
						break
					}
				}
				lines <- strings.TrimSpace(line)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
			}()
		}
	}()
	f, _ := newTestFetcher(t, Config{})
	hp := ln.Addr().String()
	acl := mustACL(t, hp)
	for _, c := range []struct{ path, line string }{
		{"/100%", "GET /100% HTTP/1.1"},
		{"/a%zz?q=%", "GET /a%zz?q=% HTTP/1.1"},
		{"/%41%#frag%", "GET /%41% HTTP/1.1"},
		{"/ok%20", "GET /ok%20 HTTP/1.1"},
	} {
		t.Run(c.path, func(t *testing.T) {
			if _, err := f.Fetch(context.Background(), acl, get("http://"+hp+c.path)); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-lines:
				if got != c.line {
					t.Fatalf("request line %q, want %q", got, c.line)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no request line")
			}
		})
	}
}

// TestFetchEntryFormsHostile: each new entry form, through Fetch, with the
// canary proving that a refusal sent nothing. Only loopback is used; the
// public addresses are answers of the fake resolver, connected (when
// allowed) to a loopback server by the dial guard.
func TestFetchEntryFormsHostile(t *testing.T) {
	origin := newCanary(t, redirector)
	target := newCanary(t, nil)
	cp := target.Port
	res := newResolver("pub.test", "93.184.216.34", "rebind.test", "127.0.0.1", "intra.test", "10.1.2.3")
	f, g := newTestFetcher(t, Config{Resolver: res})
	g.remap[netip.MustParseAddrPort("93.184.216.34:"+cp)] = hostPortOf(target)
	ctx := context.Background()

	t.Run("deny literal beats range", func(t *testing.T) {
		acl := mustACL(t, "127.0.0.0/8", "!127.0.0.1:"+cp)
		_, err := f.Fetch(ctx, acl, get("http://127.0.0.1:"+cp+"/"))
		wantDeny(t, err, mediator.CodeHostNotAllowed, 0)
	})
	t.Run("deny range beats literal", func(t *testing.T) {
		acl := mustACL(t, hostPortOf(target), "!127.0.0.0/8")
		_, err := f.Fetch(ctx, acl, get(target.URL+"/"))
		wantDeny(t, err, mediator.CodeHostNotAllowed, 0)
	})
	t.Run("deny localhost", func(t *testing.T) {
		acl := mustACL(t, "localhost", "!localhost:"+cp)
		_, err := f.Fetch(ctx, acl, get("http://localhost:"+cp+"/"))
		wantDeny(t, err, mediator.CodeHostNotAllowed, 0)
	})
	t.Run("scheme entry refuses the other scheme", func(t *testing.T) {
		acl := mustACL(t, "https://127.0.0.1:"+cp)
		_, err := f.Fetch(ctx, acl, get("http://127.0.0.1:"+cp+"/"))
		wantDeny(t, err, mediator.CodeHostNotAllowed, 0)
	})
	t.Run("range never lets a name resolve into it", func(t *testing.T) {
		acl := mustACL(t, "rebind.test", "127.0.0.0/8", "intra.test", "10.0.0.0/8")
		for _, u := range []string{"http://rebind.test:" + cp + "/", "http://intra.test:" + cp + "/"} {
			_, err := f.Fetch(ctx, acl, get(u))
			wantDeny(t, err, mediator.CodePrivateAddress, 0)
		}
	})
	t.Run("deny range covers DNS answers", func(t *testing.T) {
		acl := mustACL(t, "pub.test", "!93.184.216.0/24")
		_, err := f.Fetch(ctx, acl, get("http://pub.test:"+cp+"/"))
		de := wantDeny(t, err, mediator.CodeHostNotAllowed, 0)
		if !strings.Contains(de.Reason, `"!93.184.216.0/24"`) {
			t.Fatalf("reason %q", de.Reason)
		}
	})
	// Redirects from an allowed origin to the canary, which an entry of
	// each form refuses: each hop gets the code the URL gets directly.
	redirects := []struct {
		name string
		acl  []string
		to   string
		code mediator.Code
	}{
		{"deny literal", []string{"127.0.0.0/8", "!127.0.0.1:" + cp}, "http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed},
		{"deny literal mapped", []string{"127.0.0.0/8", "!127.0.0.1:" + cp}, "http://[::ffff:127.0.0.1]:" + cp + "/", mediator.CodeHostNotAllowed},
		{"deny literal decimal", []string{"127.0.0.0/8", "!127.0.0.1:" + cp}, "http://2130706433:" + cp + "/", mediator.CodeNonCanonicalHost},
		{"scheme", []string{"http://" + hostPortOf(origin), "https://127.0.0.1:" + cp}, "http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed},
		{"range port", []string{hostPortOf(origin), "127.0.0.0/8:1"}, "http://127.0.0.1:" + cp + "/", mediator.CodeHostNotAllowed},
		{"range name", []string{hostPortOf(origin), "127.0.0.0/8", "rebind.test"}, "http://rebind.test:" + cp + "/", mediator.CodePrivateAddress},
		{"deny answer", []string{hostPortOf(origin), "pub.test", "!93.184.216.34"}, "http://pub.test:" + cp + "/", mediator.CodeHostNotAllowed},
		{"deny localhost", []string{hostPortOf(origin), "localhost", "!localhost"}, "http://localhost:" + cp + "/", mediator.CodeHostNotAllowed},
	}
	for _, r := range redirects {
		t.Run("redirect/"+r.name, func(t *testing.T) {
			_, err := f.Fetch(ctx, mustACL(t, r.acl...), get(redirectURL(origin.URL, r.to, 302)))
			wantDeny(t, err, r.code, 1)
		})
	}
	target.Untouched(t)
	if origin.Hits.Load() == 0 {
		t.Fatal("origin never asked: the redirect cases prove nothing")
	}
	// Positive control: without the deny entry the same fetch reaches the
	// canary, so the refusals above are the entries' doing.
	t.Run("control", func(t *testing.T) {
		if _, err := f.Fetch(ctx, mustACL(t, "pub.test"), get("http://pub.test:"+cp+"/")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Fetch(ctx, mustACL(t, "127.0.0.0/8"), get("http://127.0.0.1:"+cp+"/")); err != nil {
			t.Fatal(err)
		}
		if target.Hits.Load() != 2 {
			t.Fatalf("canary hits %d, want 2", target.Hits.Load())
		}
	})
}

// TestDialerRechecksEntryForms: the dialer applies ranges, deny entries and
// scheme entries by itself, without Check.
func TestDialerRechecksEntryForms(t *testing.T) {
	srv := newCanary(t, nil)
	f, _ := newTestFetcher(t, Config{Resolver: newResolver("pub.test", "93.184.216.34")})
	cases := []struct {
		name  string
		acl   []string
		sc    scheme
		addr  string
		ok    bool
		code  mediator.Code
		noRes bool
	}{
		{"range", []string{"127.0.0.0/8"}, 0, hostPortOf(srv), true, "", false},
		{"range other port", []string{"127.0.0.0/8:1"}, 0, hostPortOf(srv), false, mediator.CodePrivateAddress, false},
		{"deny beats range", []string{"127.0.0.0/8", "!127.0.0.1"}, 0, hostPortOf(srv), false, mediator.CodeHostNotAllowed, false},
		{"https entry, http dial", []string{"https://127.0.0.1"}, schemeHTTP, hostPortOf(srv), false, mediator.CodePrivateAddress, false},
		{"https entry, unknown scheme", []string{"https://127.0.0.1"}, 0, hostPortOf(srv), false, mediator.CodePrivateAddress, false},
		{"https entry, https dial", []string{"https://127.0.0.1"}, schemeHTTPS, hostPortOf(srv), true, "", false},
		{"deny for https, unknown scheme", []string{"127.0.0.1", "!https://127.0.0.1"}, 0, hostPortOf(srv), false, mediator.CodeHostNotAllowed, false},
		{"deny for https, http dial", []string{"127.0.0.1", "!https://127.0.0.1"}, schemeHTTP, hostPortOf(srv), true, "", false},
		{"deny answer", []string{"pub.test", "!93.184.216.0/24"}, 0, "pub.test:80", false, mediator.CodeHostNotAllowed, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.WithValue(context.Background(), aclKey{}, mustACL(t, c.acl...))
			if c.sc != 0 {
				ctx = context.WithValue(ctx, schemeKey{}, c.sc)
			}
			conn, err := f.dialContext(ctx, "tcp", c.addr)
			if conn != nil {
				conn.Close()
			}
			if (err == nil) != c.ok {
				t.Fatalf("dial %s: err %v, want ok=%v", c.addr, err, c.ok)
			}
			if !c.ok && (!IsDenial(err) || mediator.CodeOf(err) != c.code) {
				t.Fatalf("dial %s: %v, want a denial with %s", c.addr, err, c.code)
			}
		})
	}
}

// TestWHATWGDivergences accounts, one by one, for the URLs of the WHATWG
// URL test data that a browser accepts and this package handles otherwise,
// each with its host listed. The stray-'%' ones are accepted, sent as
// written; userinfo and a backslash anywhere stay refused (documented in
// docs/permissions.md: they are how a URL hides which host it names).
func TestWHATWGDivergences(t *testing.T) {
	tests := []struct {
		url, listed string
		code        mediator.Code
		send        string
	}{
		// A '%' that starts no escape: kept as written.
		{"http://example.com/foo%", "example.com", mediator.CodeAllowed, "/foo%"},
		{"http://example.com/foo%2", "example.com", mediator.CodeAllowed, "/foo%2"},
		{"http://example.com/foo%2zbar", "example.com", mediator.CodeAllowed, "/foo%2zbar"},
		{"http://example.com/foo%2\u00c2\u00a9zbar", "example.com", mediator.CodeAllowed, "/foo%2%C3%82%C2%A9zbar"},
		{"http://example.com/foo/%2e%2", "example.com", mediator.CodeAllowed, "/foo/%2e%2"},
		{"http://example.com/test?%GH", "example.com", mediator.CodeAllowed, ""},
		{"http://example.com/x#%", "example.com", mediator.CodeAllowed, ""},
		// Userinfo: refused, however it is written.
		{"http://user:pass@foo.com:21/bar;par?b#c", "foo.com", mediator.CodeInvalidURL, ""},
		{"https://test:@test.example", "test.example", mediator.CodeInvalidURL, ""},
		{"https://:@test.example", "test.example", mediator.CodeInvalidURL, ""},
		{"http://a:b@c.example:29/d", "c.example", mediator.CodeInvalidURL, ""},
		{"http://&a:foo(b]c@d.example:2/", "d.example", mediator.CodeInvalidURL, ""},
		{"http://::@c@d.example:2", "d.example", mediator.CodeInvalidURL, ""},
		{"http://foo.com:b@d.example/", "d.example", mediator.CodeInvalidURL, ""},
		{"http://a@www.example.com/", "example.com", mediator.CodeInvalidURL, ""},
		{"http://:b@www.example.com/", "example.com", mediator.CodeInvalidURL, ""},
		// A backslash, even in the fragment.
		{"http://example.org/foo/bar#\\", "example.org", mediator.CodeInvalidURL, ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			tg, d := mustACL(t, tt.listed).Check(tt.url)
			if d.Code != tt.code {
				t.Fatalf("Check(%q) = %s (%s), want %s", tt.url, d.Code, d.Reason, tt.code)
			}
			if d.Allowed && tg.sendPath != tt.send {
				t.Fatalf("Check(%q) sends path %q, want %q", tt.url, tg.sendPath, tt.send)
			}
		})
	}
}

// TestConfigDial: Config.Dial gets every connect, as a checked address and
// never a name, and a refusal there ends the fetch without reaching
// anything.
func TestConfigDial(t *testing.T) {
	srv := newCanary(t, nil)
	var dials []string
	f := New(Config{Resolver: newResolver("pub.test", "93.184.216.34"), Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials = append(dials, addr)
		if addr == hostPortOf(srv) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
		return nil, io.ErrClosedPipe
	}})
	t.Cleanup(f.CloseIdleConnections)
	if _, err := f.Fetch(context.Background(), mustACL(t, hostPortOf(srv)), get(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Fetch(context.Background(), mustACL(t, "pub.test"), get("http://pub.test:"+srv.Port+"/")); err == nil || IsDenial(err) {
		t.Fatalf("err %v, want the dial's failure", err)
	}
	if strings.Join(dials, " ") != hostPortOf(srv)+" 93.184.216.34:"+srv.Port {
		t.Fatalf("dials %q", dials)
	}
	if srv.Hits.Load() != 1 {
		t.Fatalf("canary hits %d, want 1", srv.Hits.Load())
	}
}

// TestFetchSchemeEntryReachesDialer: an "https://" literal or range entry
// lets an https fetch through the dialer's own check too, which proves the
// scheme reaches the dial (without it the dialer would refuse: an unknown
// scheme matches only entries for either scheme); the same server over
// plain http is refused before anything is sent.
func TestFetchSchemeEntryReachesDialer(t *testing.T) {
	srv := newTLSCanary(t, echo)
	f, g := newTestFetcher(t, Config{RootCAs: rootsOf(srv)})
	ctx := context.Background()
	for _, entry := range []string{"https://" + hostPortOf(srv), "https://127.0.0.0/8:" + srv.Port, "https://127.0.0.0/8"} {
		t.Run(entry, func(t *testing.T) {
			f.CloseIdleConnections() // each entry's dial is checked afresh
			resp, err := f.Fetch(ctx, mustACL(t, entry), get(srv.URL+"/s"))
			if err != nil || string(resp.Body) != "GET /s " {
				t.Fatalf("%v", err)
			}
		})
	}
	before := g.count()
	_, err := f.Fetch(ctx, mustACL(t, "https://"+hostPortOf(srv)), get("http://"+hostPortOf(srv)+"/"))
	wantDeny(t, err, mediator.CodeHostNotAllowed, 0)
	if g.count() != before {
		t.Fatal("a refused fetch dialled")
	}
}
