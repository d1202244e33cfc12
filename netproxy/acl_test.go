package netproxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// hostileACL is the ACL testdata/hostile_urls.txt is written against.
var hostileACL = []string{
	"example.com", "*.wild.example", "api.example.org:8443", "127.0.0.1:8080",
	"[::1]:8080", "localhost:9000", "169.254.169.254", "0.0.0.0", "10.0.0.1",
}

func mustACL(t testing.TB, entries ...string) *ACL {
	t.Helper()
	a, err := NewACL(entries)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestCheck(t *testing.T) {
	acl := mustACL(t, hostileACL...)
	tests := []struct {
		name, url    string
		code         mediator.Code
		host         string
		port         uint16
		isIP, priv   bool
		entry, final string
	}{
		{"apex", "http://example.com/a?b#c", mediator.CodeAllowed, "example.com", 80, false, false, "example.com", "http://example.com/a?b#c"},
		{"https default port", "https://example.com/", mediator.CodeAllowed, "example.com", 443, false, false, "example.com", "https://example.com/"},
		{"subdomain", "http://a.b.example.com:8000/", mediator.CodeAllowed, "a.b.example.com", 8000, false, false, "example.com", "http://a.b.example.com:8000/"},
		{"uppercase and dot", "HTTP://WWW.Example.COM./x", mediator.CodeAllowed, "www.example.com", 80, false, false, "example.com", "http://www.example.com/x"},
		{"wildcard", "http://x.wild.example/", mediator.CodeAllowed, "x.wild.example", 80, false, false, "*.wild.example", "http://x.wild.example/"},
		{"host port entry", "https://api.example.org:8443/v1", mediator.CodeAllowed, "api.example.org", 8443, false, false, "api.example.org:8443", "https://api.example.org:8443/v1"},
		{"literal", "http://127.0.0.1:8080/", mediator.CodeAllowed, "127.0.0.1", 8080, true, true, "127.0.0.1:8080", "http://127.0.0.1:8080/"},
		{"mapped literal", "http://[::ffff:127.0.0.1]:8080/", mediator.CodeAllowed, "127.0.0.1", 8080, true, true, "127.0.0.1:8080", "http://127.0.0.1:8080/"},
		{"v6 literal", "http://[0::1]:8080/", mediator.CodeAllowed, "::1", 8080, true, true, "[::1]:8080", "http://[::1]:8080/"},
		{"localhost", "http://localhost:9000/", mediator.CodeAllowed, "localhost", 9000, false, true, "localhost:9000", "http://localhost:9000/"},
		{"idn", "http://b\u00fccher.example.com/", mediator.CodeAllowed, "xn--bcher-kva.example.com", 80, false, false, "example.com", "http://xn--bcher-kva.example.com/"},
		{"suffix trick", "http://evilexample.com/", mediator.CodeHostNotAllowed, "", 0, false, false, "", ""},
		{"wildcard apex", "http://wild.example/", mediator.CodeHostNotAllowed, "", 0, false, false, "", ""},
		{"wrong port", "https://api.example.org/", mediator.CodeHostNotAllowed, "", 0, false, false, "", ""},
		{"userinfo", "http://example.com@evil.test/", mediator.CodeInvalidURL, "", 0, false, false, "", ""},
		{"decimal ip", "http://2130706433:8080/", mediator.CodeNonCanonicalHost, "", 0, false, false, "", ""},
		{"metadata listed", "http://169.254.169.254/", mediator.CodePrivateAddress, "", 0, false, false, "", ""},
		{"scheme", "file:///etc/passwd", mediator.CodeSchemeNotAllowed, "", 0, false, false, "", ""},
		{"too long", "http://example.com/" + strings.Repeat("a", MaxURLLen), mediator.CodeTooLarge, "", 0, false, false, "", ""},
		{"just fits", "http://example.com/" + strings.Repeat("a", MaxURLLen-len("http://example.com/")), mediator.CodeAllowed, "example.com", 80, false, false, "example.com", ""},
		{"long host", "http://" + strings.Repeat("a.", 130) + "example.com/", mediator.CodeInvalidURL, "", 0, false, false, "", ""},
		{"long label", "http://" + strings.Repeat("a", 64) + ".example.com/", mediator.CodeInvalidURL, "", 0, false, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, d := acl.Check(tt.url)
			if d.Code != tt.code || d.Allowed != (tt.code == mediator.CodeAllowed) {
				t.Fatalf("Check(%q) = %+v, want %s", tt.url, d, tt.code)
			}
			if !d.Allowed {
				if d.Reason == "" {
					t.Fatal("denial without a reason")
				}
				return
			}
			if tg.Host != tt.host || tg.Port != tt.port || tg.IsIP != tt.isIP || tg.AllowPrivate != tt.priv || tg.Entry != tt.entry {
				t.Fatalf("Check(%q) target %+v", tt.url, tg)
			}
			if tt.final != "" && tg.URL.String() != tt.final {
				t.Fatalf("Check(%q) URL %q, want %q", tt.url, tg.URL, tt.final)
			}
		})
	}
}

// TestCheckHostileURLs runs testdata/hostile_urls.txt and demands the exact
// reason code for each row.
func TestCheckHostileURLs(t *testing.T) {
	acl := mustACL(t, hostileACL...)
	rows := readFixture(t, "hostile_urls.txt", false)
	var allowed, denied int
	for _, r := range rows {
		t.Run(fmt.Sprintf("line%d", r.line), func(t *testing.T) {
			tg, d := acl.Check(r.quoted)
			if string(d.Code) != r.word {
				t.Fatalf("Check(%q) = %s (%s), want %s", r.quoted, d.Code, d.Reason, r.word)
			}
			if d.Allowed {
				allowed++
				if tg.URL == nil || !isASCII(tg.URL.String()) {
					t.Fatalf("allowed target URL %v is not ASCII", tg.URL)
				}
			} else {
				denied++
			}
		})
	}
	if allowed == 0 || denied == 0 {
		t.Fatalf("fixture has %d allowed and %d denied rows; want both", allowed, denied)
	}
}

func TestParseLegacyIPv4(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = not an address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"0x", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
		{"4294967296", ""},
		{"256.1", ""},
		{"1.2.3.4.5", ""},
		{"1..2", ""},
		{"08", ""},
		{"0xg", ""},
		{"1.2.65536", ""},
		{"1.2.65535", "1.2.255.255"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			a, ok := parseLegacyIPv4(tt.in)
			if tt.want == "" {
				if ok {
					t.Fatalf("parseLegacyIPv4(%q) = %v, want failure", tt.in, a)
				}
				return
			}
			if !ok || a != netip.MustParseAddr(tt.want) {
				t.Fatalf("parseLegacyIPv4(%q) = %v %v, want %s", tt.in, a, ok, tt.want)
			}
		})
	}
}

// TestPlainQuotingMatchesStrconv: plain is true only where strconv.Quote
// adds nothing but the quotes, so Check's reasons read the same whichever
// way they were built; anything else takes the general escaping.
func TestPlainQuotingMatchesStrconv(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"", true}, {"example.com", true}, {"xn--bcher-kva.example", true}, {"[::1]:8080", true}, {"*.a.b", true},
		{`a"b`, false}, {`a\b`, false}, {"a\x00b", false}, {"a\x7fb", false}, {"bücher", false}, {"a\nb", false},
	} {
		t.Run(c.s, func(t *testing.T) {
			if got := plain(c.s); got != c.want {
				t.Fatalf("plain(%q) = %v, want %v", c.s, got, c.want)
			}
			if plain(c.s) && strconv.Quote(c.s) != `"`+c.s+`"` {
				t.Fatalf("plain(%q) but strconv.Quote escapes it", c.s)
			}
		})
	}
}

// TestCheckReasons: the allowing and denying reasons name the host and the
// entry in quotes, with the port when refused.
func TestCheckReasons(t *testing.T) {
	acl, err := NewACL([]string{"*.example.com", "127.0.0.1:8080"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url, code, reason string
	}{
		{"https://a.example.com/x", "allowed", `host "a.example.com" matches allowedHosts entry "*.example.com"`},
		{"http://127.0.0.1:8080/", "allowed", `host "127.0.0.1" matches allowedHosts entry "127.0.0.1:8080"`},
		{"https://example.org/", "host_not_allowed", `host "example.org" (port 443) is not in allowedHosts`},
		{"http://127.0.0.1:8081/", "host_not_allowed", `host "127.0.0.1" (port 8081) is not in allowedHosts`},
	} {
		t.Run(c.url, func(t *testing.T) {
			_, d := acl.Check(c.url)
			if string(d.Code) != c.code || d.Reason != c.reason {
				t.Fatalf("Check(%s) = %s %q, want %s %q", c.url, d.Code, d.Reason, c.code, c.reason)
			}
		})
	}
}
