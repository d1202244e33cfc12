package netproxy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/agentgate/nmhost/mediator"
)

// EntryKind says how an allowedHosts entry matches.
type EntryKind uint8

const (
	// EntryDomain ("example.com") matches the name and all its subdomains.
	EntryDomain EntryKind = iota + 1
	// EntryWildcard ("*.example.com") matches subdomains only, not the apex.
	EntryWildcard
	// EntryIP ("127.0.0.1", "[::1]") matches that address, however the URL
	// spells it in IPv6 form. Listing a literal is what permits a loopback
	// or private target.
	EntryIP
	// EntryLocalhost ("localhost") matches the name localhost only, which
	// means 127.0.0.1 and ::1 and is never sent to a resolver.
	EntryLocalhost
	// EntryRange ("10.0.0.0/8", "[fd00::]/8") matches URLs whose host is an
	// address literal inside the range. Like a literal, it is what permits
	// a private target in that range; it never matches a name, whatever
	// the name resolves to.
	EntryRange
)

func (k EntryKind) String() string {
	switch k {
	case EntryDomain:
		return "domain"
	case EntryWildcard:
		return "wildcard"
	case EntryIP:
		return "ip"
	case EntryLocalhost:
		return "localhost"
	case EntryRange:
		return "range"
	}
	return "invalid"
}

// Entry is one parsed, canonical allowedHosts entry. The zero value (Kind
// 0) is invalid and matches nothing.
type Entry struct {
	Kind   EntryKind
	Host   string       // canonical name (without "*."), "localhost", or the address text
	Addr   netip.Addr   // the address, for EntryIP
	Prefix netip.Prefix // the masked range, for EntryRange
	Port   uint16       // 0: any port
	Scheme string       // "", "http" or "https"; "": either
	Deny   bool         // "!pattern": a URL this matches is refused, whatever else matches
}

// String returns the canonical spelling of the entry. IPv6 literals and
// ranges are always bracketed here; ParseEntry also accepts them bare when
// portless.
func (e Entry) String() string { return e.format(true) }

func (e Entry) format(bracket bool) string {
	var h string
	switch e.Kind {
	case EntryWildcard:
		h = "*." + e.Host
	case EntryIP:
		if e.Addr.Is6() && bracket {
			h = "[" + e.Host + "]"
		} else {
			h = e.Host
		}
	case EntryRange:
		if e.Prefix.Addr().Is6() && bracket {
			h = "[" + e.Prefix.Addr().String() + "]/" + strconv.Itoa(e.Prefix.Bits())
		} else {
			h = e.Prefix.String()
		}
	default:
		h = e.Host
	}
	if e.Port != 0 {
		h += ":" + strconv.Itoa(int(e.Port))
	}
	if e.Scheme != "" {
		h = e.Scheme + "://" + h
	}
	if e.Deny {
		h = "!" + h
	}
	return h
}

// bareForm is the other accepted spelling of a portless IPv6 entry
// ("::1", "fd00::/8"), or "" when there is none.
func (e Entry) bareForm() string {
	if e.Port != 0 {
		return ""
	}
	if e.Kind == EntryIP && e.Addr.Is6() || e.Kind == EntryRange && e.Prefix.Addr().Is6() {
		return e.format(false)
	}
	return ""
}

// MaxEntryLen bounds one allowedHosts entry: "!", "https://", a 253-byte
// name, "*." and a port.
const MaxEntryLen = 1 + 8 + 253 + 2 + 6

// ParseEntry parses one allowedHosts entry. It accepts only the canonical
// spelling, because a profile is read by people: "Example.COM." or "127.1"
// would otherwise mean something other than what a reader assumes. The
// error (a *mediator.Error with CodeInvalidAllowedHost) names the canonical
// spelling when there is one.
func ParseEntry(s string) (Entry, error) {
	e, err := parseEntryLoose(s)
	if err != nil {
		return Entry{}, err
	}
	c := e.String()
	if s == c || s == e.bareForm() && s != "" {
		return e, nil
	}
	return Entry{}, mediator.Errorf(mediator.CodeInvalidAllowedHost,
		"allowedHosts entry %q is not canonical; write %q", s, c)
}

// CanonicalEntry returns the canonical spelling of an allowedHosts entry
// written in any accepted form ("Example.COM." -> "example.com", "127.1" ->
// "127.0.0.1"). It fails, with CodeInvalidAllowedHost, for entries that have
// no canonical form: a bare "*", a public suffix, a URL, a path...
func CanonicalEntry(s string) (string, error) {
	e, err := parseEntryLoose(s)
	if err != nil {
		return "", err
	}
	return e.String(), nil
}

func entryErr(s, format string, args ...any) error {
	return &mediator.Error{
		Code: mediator.CodeInvalidAllowedHost,
		Msg:  "allowedHosts entry " + strconv.Quote(truncURL(s)) + " " + fmt.Sprintf(format, args...),
	}
}

// The forms an entry may take, named in refusals so that every error says
// what would be accepted.
const entryForms = `write "example.com", "*.example.com", "example.com:8443", "https://example.com", ` +
	`"10.0.0.1", "[fd00::1]", "10.0.0.0/8", or "!" before any of them to refuse it`

// parseEntryLoose parses an entry written in any spelling that has an
// unambiguous canonical form, and returns that form.
//
//	entry = [ "!" ] [ ("http" / "https") "://" ] host [ ":" port ]
//	host  = name / "*." name / ipv4 / "[" ipv6 "]" / ipv4 "/" bits / "[" ipv6 "]/" bits
//
// plus a bare ipv6 or ipv6 "/" bits when there is no port.
func parseEntryLoose(raw string) (Entry, error) {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		return Entry{}, entryErr(raw, "is empty; %s", entryForms)
	case len(s) > MaxEntryLen:
		return Entry{}, entryErr(raw, "is longer than %d bytes", MaxEntryLen)
	}
	var e Entry
	if strings.HasPrefix(s, "!") {
		e.Deny, s = true, strings.TrimSpace(s[1:])
		if s == "" {
			return Entry{}, entryErr(raw, "has nothing after \"!\"; write the host to refuse, e.g. \"!internal.example.com\" or \"!10.0.0.0/8\"")
		}
	}
	if i := strings.Index(s, "://"); i >= 0 {
		sc := strings.ToLower(s[:i])
		if sc != "http" && sc != "https" {
			return Entry{}, entryErr(raw, "names the scheme %q; only http and https can be named, e.g. \"https://example.com\"", truncURL(s[:i]))
		}
		e.Scheme, s = sc, s[i+3:]
		// A pasted origin ("https://example.com/") has one obvious
		// meaning: CanonicalEntry drops the slash, ParseEntry names it.
		if strings.IndexByte(s, '/') == len(s)-1 && len(s) > 1 {
			s = s[:len(s)-1]
		}
		if s == "" {
			return Entry{}, entryErr(raw, "names a scheme but no host; write e.g. \"https://example.com\"")
		}
	}
	if s == "*" || s == "*." {
		if e.Deny {
			return Entry{}, entryErr(raw, "would refuse every host; remove the other entries instead, or refuse hosts one by one, e.g. \"!internal.example.com\"")
		}
		return Entry{}, entryErr(raw, "would allow every host; list the hosts the agent needs, e.g. \"example.com\" or \"*.example.com\"")
	}
	slash := -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f || c == ' ':
			return Entry{}, entryErr(raw, "contains a space or control character; %s", entryForms)
		case c == '/':
			if slash >= 0 {
				return Entry{}, entryErr(raw, "contains a path; write only the host (and port), e.g. \"example.com:8443\"")
			}
			slash = i
		case c == '?' || c == '#' || c == '\\':
			return Entry{}, entryErr(raw, "contains %q; write only the host (and port), without a path, e.g. \"example.com:8443\"", c)
		case c == '@':
			return Entry{}, entryErr(raw, "contains user information; write only the host (and port), e.g. \"example.com:8443\"")
		case c == '%':
			return Entry{}, entryErr(raw, "contains %%: percent-encoding and IPv6 zones are not allowed; write the host plainly, e.g. \"[fe80::1]\"")
		}
	}

	wildcard := false
	if strings.HasPrefix(s, "*.") {
		wildcard, s = true, s[2:]
	}
	if strings.Contains(s, "*") {
		return Entry{}, entryErr(raw, "has a wildcard that is not a leading \"*.\"; write e.g. \"*.example.com\"")
	}
	if slash >= 0 {
		if wildcard {
			return Entry{}, entryErr(raw, "puts a wildcard on an address range; write the range alone, e.g. \"10.0.0.0/8\"")
		}
		return parseRange(raw, s, e)
	}

	host, portStr, hasPort, bracketed, err := splitEntryHostPort(raw, s)
	if err != nil {
		return Entry{}, err
	}
	if hasPort {
		if e.Port, err = parseEntryPort(raw, portStr); err != nil {
			return Entry{}, err
		}
	}

	if bracketed {
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return Entry{}, entryErr(raw, "is not a valid IPv6 address literal; write e.g. \"[2001:db8::1]\" or \"[2001:db8::1]:8080\"")
		}
		if wildcard {
			return Entry{}, entryErr(raw, "puts a wildcard on an address; write the address alone, e.g. \"[::1]\"")
		}
		return ipEntry(e, a), nil
	}

	cn, he := canonicalName(host)
	if he != nil {
		if he.suggest != "" {
			a := netip.MustParseAddr(he.suggest)
			if wildcard {
				return Entry{}, entryErr(raw, "puts a wildcard on an address; write the address alone, e.g. %q", a.String())
			}
			return ipEntry(e, a), nil
		}
		return Entry{}, entryErr(raw, "is not a valid host: %s; %s", he.reason, entryForms)
	}
	if cn.addr.IsValid() {
		if wildcard {
			return Entry{}, entryErr(raw, "puts a wildcard on an address; write the address alone (%q) or a range (e.g. \"10.0.0.0/8\")", cn.addr.String())
		}
		return ipEntry(e, cn.addr), nil
	}
	if cn.name == "localhost" {
		if wildcard {
			return Entry{}, entryErr(raw, "is a wildcard under localhost; list \"localhost\" itself")
		}
		e.Kind, e.Host = EntryLocalhost, "localhost"
		return e, nil
	}
	// A public suffix ("com", "co.uk", "github.io") or a wildcard under one
	// would allow hosts run by unrelated parties. Unlisted single-label
	// names count as suffixes too (publicsuffix's default rule), which also
	// keeps intranet short names out. Refusing them is harmless, so a deny
	// entry may name one ("!ru").
	if ps, _ := publicsuffix.PublicSuffix(cn.name); ps == cn.name && !e.Deny {
		return Entry{}, entryErr(raw, "is a public suffix (%q) and would allow hosts of many unrelated owners; list a site below it, e.g. \"example.%s\"", cn.name, cn.name)
	}
	e.Kind, e.Host = EntryDomain, cn.name
	if wildcard {
		e.Kind = EntryWildcard
	}
	return e, nil
}

func parseEntryPort(raw, portStr string) (uint16, error) {
	n, err := strconv.ParseUint(portStr, 10, 16)
	if portStr == "" || err != nil || n == 0 || strings.TrimLeft(portStr, "0123456789") != "" {
		return 0, entryErr(raw, "has an invalid port %q; write a number from 1 to 65535, e.g. \"example.com:8443\"", portStr)
	}
	return uint16(n), nil
}

// Narrowest ranges an allow entry may name. A shorter IPv4 prefix than /8
// spans many unrelated networks, and an IPv6 one shorter than /7 (the
// unique-local block, the widest private one) takes in global unicast
// space: both are "allow every address" in disguise. A deny entry may be
// as wide as it likes.
const (
	minAllowBits4 = 8
	minAllowBits6 = 7
)

// notRangeErr refuses a '/' after something that is not an address: most
// likely a pasted URL with a path.
func notRangeErr(raw, host string) error {
	return entryErr(raw, "has a '/' but %q is not an address: a path is not allowed; write only the host, e.g. %q (a '/' belongs only in an address range such as \"10.0.0.0/8\")", truncURL(host), truncURL(host))
}

// parseRange parses "a.b.c.d/n", "[v6]/n", bare "v6/n", each optionally
// followed by ":port". s has had "!" and the scheme removed.
func parseRange(raw, s string, e Entry) (Entry, error) {
	addrText, rest, _ := strings.Cut(s, "/")
	if strings.HasPrefix(addrText, "[") {
		if !strings.HasSuffix(addrText, "]") {
			return Entry{}, entryErr(raw, "has a misplaced bracket; write an IPv6 range bracketed, e.g. \"[fd00::]/8\"")
		}
		addrText = addrText[1 : len(addrText)-1]
	}
	bitsText, portStr, hasPort := strings.Cut(rest, ":")
	var a netip.Addr
	if strings.Contains(addrText, ":") {
		v, err := netip.ParseAddr(addrText)
		if err != nil || v.Zone() != "" {
			return Entry{}, notRangeErr(raw, addrText)
		}
		a = v
	} else {
		cn, he := canonicalName(addrText)
		switch {
		case he != nil && he.suggest != "":
			a = netip.MustParseAddr(he.suggest)
		case he == nil && cn.addr.IsValid():
			a = cn.addr
		default:
			return Entry{}, notRangeErr(raw, addrText)
		}
	}
	bits, err := strconv.ParseUint(bitsText, 10, 8)
	if err != nil || bitsText == "" || strings.TrimLeft(bitsText, "0123456789") != "" {
		return Entry{}, entryErr(raw, "has an invalid prefix length %q; write e.g. \"10.0.0.0/8\"", truncURL(bitsText))
	}
	n := int(bits)
	if a.Is4In6() && n >= 96 {
		a, n = a.Unmap(), n-96 // ::ffff:10.0.0.0/104 is 10.0.0.0/8
	}
	if n > a.BitLen() {
		return Entry{}, entryErr(raw, "has a prefix length %d longer than the address (%d bits); write e.g. \"10.0.0.0/8\"", n, a.BitLen())
	}
	if hasPort {
		if e.Port, err = parseEntryPort(raw, portStr); err != nil {
			return Entry{}, err
		}
	}
	if n == a.BitLen() {
		// A single address is written as the address.
		return ipEntry(e, a), nil
	}
	if !e.Deny && (a.Is4() && n < minAllowBits4 || a.Is6() && n < minAllowBits6) {
		return Entry{}, entryErr(raw, "is a range wider than /%d (IPv4) or /%d (IPv6) and would allow addresses of many unrelated networks; name the network the agent needs, e.g. \"10.0.0.0/8\" or \"[fd00::]/8\"", minAllowBits4, minAllowBits6)
	}
	e.Kind = EntryRange
	e.Prefix = netip.PrefixFrom(a, n).Masked()
	return e, nil
}

// ipEntry makes e (which carries the deny flag, scheme and port) an
// address literal entry.
func ipEntry(e Entry, a netip.Addr) Entry {
	a = a.Unmap()
	e.Kind, e.Host, e.Addr = EntryIP, a.String(), a
	return e
}

// splitEntryHostPort splits "host", "host:port", "[v6]", "[v6]:port" and a
// bare "v6" (two or more colons, no port).
func splitEntryHostPort(raw, s string) (host, port string, hasPort, bracketed bool, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, false, entryErr(raw, "has an unclosed '['; write e.g. \"[::1]\" or \"[::1]:8080\"")
		}
		host, rest := s[1:end], s[end+1:]
		switch {
		case rest == "":
			return host, "", false, true, nil
		case rest[0] == ':':
			return host, rest[1:], true, true, nil
		}
		return "", "", false, false, entryErr(raw, "has text after ']' that is not a port; write e.g. \"[::1]:8080\"")
	}
	if strings.ContainsAny(s, "[]") {
		return "", "", false, false, entryErr(raw, "has a misplaced bracket; write an IPv6 address as \"[::1]\" or \"[::1]:8080\"")
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", false, false, nil
	case 1:
		i := strings.IndexByte(s, ':')
		return s[:i], s[i+1:], true, false, nil
	}
	// Bare IPv6: no port is possible without brackets.
	return s, "", false, true, nil
}
