package netproxy

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// naiveMatch is the seed rule written as plainly as possible, to check the
// indexed matcher against. It ignores e.Deny: callers decide what a match
// of a deny entry means.
func naiveMatch(e Entry, t Target) bool {
	if e.Port != 0 && e.Port != t.Port {
		return false
	}
	if e.Scheme != "" && e.Scheme != t.Scheme {
		return false
	}
	switch e.Kind {
	case EntryIP:
		return t.IsIP && t.Addr == e.Addr
	case EntryRange:
		return t.IsIP && e.Prefix.Contains(t.Addr)
	case EntryLocalhost:
		return !t.IsIP && t.Host == "localhost"
	case EntryDomain:
		return !t.IsIP && (t.Host == e.Host || strings.HasSuffix(t.Host, "."+e.Host))
	case EntryWildcard:
		return !t.IsIP && strings.HasSuffix(t.Host, "."+e.Host)
	}
	return false
}

// fuzzACL is every entry form, allow and deny.
var fuzzACL = append(append([]string(nil), hostileACL...), formsACL...)

func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "https://a.wild.example:1/x?y#z", "http://127.0.0.1:8080/",
		"http://[::ffff:127.0.0.1]:8080/", "http://2130706433/", "http://example.com@evil.test/",
		"http://\uff11\uff12\uff17.0.0.1/", "http://localhost:9000/", "http://evilexample.com/",
		"file:///etc/passwd", "http://b\u00fccher.example.com/", "http://%31.0.0.1/",
		"http://admin.example.com/", "https://secure.example.org:1/", "http://10.9.0.1/", "http://[fd00::1]/",
		"http://example.com/100%", "http://example.com/a%zz#%", "http://x.ads.example.com/",
	} {
		f.Add(s)
	}
	acl, err := NewACL(fuzzACL)
	if err != nil {
		f.Fatal(err)
	}
	entries := acl.Entries()
	f.Fuzz(func(t *testing.T, raw string) {
		tg, d := acl.Check(raw)
		if !d.Allowed {
			if d.Code == "" || d.Code == mediator.CodeAllowed || d.Reason == "" {
				t.Fatalf("Check(%q) denied without a code or reason: %+v", raw, d)
			}
			return
		}
		if tg.Scheme != "http" && tg.Scheme != "https" || tg.URL == nil || tg.URL.User != nil || tg.Port == 0 {
			t.Fatalf("Check(%q) allowed a bad target %+v", raw, tg)
		}
		if !isASCII(tg.Host) || tg.Host != strings.ToLower(tg.Host) {
			t.Fatalf("Check(%q) allowed a non-canonical host %q", raw, tg.Host)
		}
		if tg.IsIP {
			if tg.Addr.String() != tg.Host || tg.Addr.Is4In6() || tg.Addr.Zone() != "" {
				t.Fatalf("Check(%q): address %v spelt %q", raw, tg.Addr, tg.Host)
			}
		} else {
			last := tg.Host[strings.LastIndexByte(tg.Host, '.')+1:]
			if looksNumeric(last) || !validDNSName(tg.Host) {
				t.Fatalf("Check(%q) allowed the non-canonical host %q", raw, tg.Host)
			}
		}
		matched := false
		for _, e := range entries {
			if !naiveMatch(e, tg) {
				continue
			}
			if e.Deny {
				t.Fatalf("Check(%q) allowed %q:%d, which deny entry %q matches", raw, tg.Host, tg.Port, e)
			}
			if e.String() == tg.Entry {
				matched = true
			}
		}
		if !matched {
			t.Fatalf("Check(%q) allowed %q:%d via %q, which the seed rule does not match", raw, tg.Host, tg.Port, tg.Entry)
		}
		// Go's own reading of the URL names the same host, so what is
		// checked is what net/http would contact.
		// (A '%' that starts no escape is escaped first: net/url refuses
		// what WHATWG keeps as written.)
		u, err := url.Parse(raw)
		if err != nil {
			if i := strings.Index(raw, "//"); i >= 0 {
				j := i + 2 + len(strings.SplitN(raw[i+2:], "/", 2)[0])
				if k := strings.IndexAny(raw[i+2:], "?#"); k >= 0 && i+2+k < j {
					j = i + 2 + k
				}
				if tail, _, ok := escapeStrayPercent(raw[j:]); ok {
					u, err = url.Parse(raw[:j] + tail)
				}
			}
		}
		if err != nil {
			t.Fatalf("Check(%q) allowed what net/url refuses: %v", raw, err)
		}
		if h := u.Hostname(); isASCII(h) && !strings.Contains(h, ":") {
			if strings.TrimSuffix(strings.ToLower(h), ".") != tg.Host {
				t.Fatalf("Check(%q): net/url reads host %q, Check %q", raw, h, tg.Host)
			}
		}
		// The normalised URL is allowed again, to the same place.
		tg2, d2 := acl.Check(tg.URL.String())
		if !d2.Allowed || tg2.Host != tg.Host || tg2.Port != tg.Port || tg2.Entry != tg.Entry {
			t.Fatalf("Check(%q) -> %q, which then gives %+v %+v", raw, tg.URL, tg2, d2)
		}
	})
}

// ownURL is a URL for a host an entry names, on a port it covers.
func ownURL(e Entry) string {
	sc := e.Scheme
	if sc == "" {
		sc = "http"
	}
	var host string
	switch e.Kind {
	case EntryWildcard:
		host = "x." + e.Host
	case EntryIP:
		host = e.Addr.String()
		if e.Addr.Is6() {
			host = "[" + host + "]"
		}
	case EntryRange:
		a := e.Prefix.Addr().Next()
		host = a.String()
		if a.Is6() {
			host = "[" + host + "]"
		}
	default:
		host = e.Host
	}
	port := ":1"
	if e.Port != 0 {
		port = ":" + strconv.Itoa(int(e.Port))
	}
	return sc + "://" + host + port + "/"
}

func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{
		"example.com", "*.example.com:443", "127.0.0.1:8080", "[::1]", "::1", "localhost:1",
		"Example.COM.", "127.1", "0x7f.1", "[::ffff:127.0.0.1]", "co.uk", "*", "b\u00fccher.de",
		"https://example.com", "!example.com", "10.0.0.0/8", "[fd00::]/8:443", "!https://10.1.0.0/16:8443",
		"fd00::/8", "0.0.0.0/0", "!com", "https://example.com/", "10.1.2.3/32",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, perr := ParseEntry(s)
		c, cerr := CanonicalEntry(s)
		for _, err := range []error{perr, cerr} {
			if err != nil && mediator.CodeOf(err) != mediator.CodeInvalidAllowedHost {
				t.Fatalf("%q: error %v has code %s", s, err, mediator.CodeOf(err))
			}
		}
		if perr == nil {
			if cerr != nil || c != e.String() {
				t.Fatalf("ParseEntry(%q) = %v but CanonicalEntry = %q, %v", s, e, c, cerr)
			}
			if s != c && s != e.bareForm() {
				t.Fatalf("ParseEntry accepted %q, whose canonical form is %q", s, c)
			}
			// A deny entry is checked beside the allow entry it negates
			// (when that is a valid entry), so that its refusal is its own.
			list := []string{s}
			if e.Deny {
				if _, err := ParseEntry(strings.TrimPrefix(c, "!")); err == nil {
					list = append(list, strings.TrimPrefix(c, "!"))
				}
			}
			acl, err := NewACL(list)
			if err != nil {
				t.Fatalf("NewACL(%q): %v", list, err)
			}
			u := ownURL(e)
			tg, d := acl.Check(u)
			if e.Deny {
				if d.Allowed {
					t.Fatalf("deny entry %q: Check of its own host %q is allowed: %+v", s, u, d)
				}
				return
			}
			forbidden := e.Kind == EntryIP && !ClassifyAddr(e.Addr).allowedWith(true) ||
				e.Kind == EntryRange && !ClassifyAddr(e.Prefix.Addr().Next()).allowedWith(true)
			if d.Allowed == forbidden {
				t.Fatalf("entry %q: Check of its own host %q gives %+v", s, u, d)
			}
			if d.Allowed && tg.Entry != e.String() {
				t.Fatalf("entry %q matched as %q", s, tg.Entry)
			}
		}
		if cerr == nil {
			e2, err := ParseEntry(c)
			if err != nil || e2.String() != c {
				t.Fatalf("CanonicalEntry(%q) = %q, which ParseEntry refuses: %v", s, c, err)
			}
			if c2, _ := CanonicalEntry(c); c2 != c {
				t.Fatalf("CanonicalEntry not idempotent: %q -> %q -> %q", s, c, c2)
			}
		}
	})
}
