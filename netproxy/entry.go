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
	}
	return "invalid"
}

// Entry is one parsed, canonical allowedHosts entry.
type Entry struct {
	Kind EntryKind
	Host string     // canonical name (without "*."), "localhost", or the address text
	Addr netip.Addr // the address, for EntryIP
	Port uint16     // 0: any port
}

// String returns the canonical spelling of the entry. IPv6 literals are
// always bracketed here; ParseEntry also accepts them bare when portless.
func (e Entry) String() string {
	var h string
	switch e.Kind {
	case EntryWildcard:
		h = "*." + e.Host
	case EntryIP:
		if e.Addr.Is6() {
			h = "[" + e.Host + "]"
		} else {
			h = e.Host
		}
	default:
		h = e.Host
	}
	if e.Port != 0 {
		h += ":" + strconv.Itoa(int(e.Port))
	}
	return h
}

// MaxEntryLen bounds one allowedHosts entry: a 253-byte name, "*." and a port.
const MaxEntryLen = 253 + 2 + 6

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
	if s == c || (e.Kind == EntryIP && e.Port == 0 && e.Addr.Is6() && "["+s+"]" == c) {
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

// parseEntryLoose parses an entry written in any spelling that has an
// unambiguous canonical form, and returns that form.
func parseEntryLoose(raw string) (Entry, error) {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		return Entry{}, entryErr(raw, "is empty")
	case len(s) > MaxEntryLen:
		return Entry{}, entryErr(raw, "is longer than %d bytes", MaxEntryLen)
	case s == "*" || s == "*.":
		return Entry{}, entryErr(raw, "would allow every host; list the hosts the agent needs")
	case strings.Contains(s, "://"):
		return Entry{}, entryErr(raw, "is a URL; write only the host, e.g. \"example.com\" or \"example.com:8443\"")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f || c == ' ':
			return Entry{}, entryErr(raw, "contains a space or control character")
		case c == '/' || c == '?' || c == '#' || c == '\\':
			return Entry{}, entryErr(raw, "contains %q; write only the host (and port), without a path", c)
		case c == '@':
			return Entry{}, entryErr(raw, "contains user information; write only the host (and port)")
		case c == '%':
			return Entry{}, entryErr(raw, "contains %%: percent-encoding and IPv6 zones are not allowed")
		}
	}

	wildcard := false
	if strings.HasPrefix(s, "*.") {
		wildcard, s = true, s[2:]
	}
	if strings.Contains(s, "*") {
		return Entry{}, entryErr(raw, "has a wildcard that is not a leading \"*.\"")
	}

	host, portStr, hasPort, bracketed, err := splitEntryHostPort(raw, s)
	if err != nil {
		return Entry{}, err
	}
	var port uint16
	if hasPort {
		n, err := strconv.ParseUint(portStr, 10, 16)
		if portStr == "" || err != nil || n == 0 || strings.TrimLeft(portStr, "0123456789") != "" {
			return Entry{}, entryErr(raw, "has an invalid port %q (want 1-65535)", portStr)
		}
		port = uint16(n)
	}

	if bracketed {
		a, err := netip.ParseAddr(host)
		if err != nil || a.Zone() != "" {
			return Entry{}, entryErr(raw, "is not a valid IPv6 address literal")
		}
		if wildcard {
			return Entry{}, entryErr(raw, "puts a wildcard on an address")
		}
		return ipEntry(a, port), nil
	}

	cn, he := canonicalName(host)
	if he != nil {
		if he.suggest != "" {
			a := netip.MustParseAddr(he.suggest)
			if wildcard {
				return Entry{}, entryErr(raw, "puts a wildcard on an address")
			}
			return ipEntry(a, port), nil
		}
		return Entry{}, entryErr(raw, "is not a valid host: %s", he.reason)
	}
	if cn.addr.IsValid() {
		if wildcard {
			return Entry{}, entryErr(raw, "puts a wildcard on an address")
		}
		return ipEntry(cn.addr, port), nil
	}
	if cn.name == "localhost" {
		if wildcard {
			return Entry{}, entryErr(raw, "is a wildcard under localhost; list \"localhost\" itself")
		}
		return Entry{Kind: EntryLocalhost, Host: "localhost", Port: port}, nil
	}
	// A public suffix ("com", "co.uk", "github.io") or a wildcard under one
	// would allow hosts run by unrelated parties. Unlisted single-label
	// names count as suffixes too (publicsuffix's default rule), which also
	// keeps intranet short names out.
	if ps, _ := publicsuffix.PublicSuffix(cn.name); ps == cn.name {
		return Entry{}, entryErr(raw, "is a public suffix (%q) and would allow hosts of many unrelated owners", cn.name)
	}
	kind := EntryDomain
	if wildcard {
		kind = EntryWildcard
	}
	return Entry{Kind: kind, Host: cn.name, Port: port}, nil
}

func ipEntry(a netip.Addr, port uint16) Entry {
	a = a.Unmap()
	return Entry{Kind: EntryIP, Host: a.String(), Addr: a, Port: port}
}

// splitEntryHostPort splits "host", "host:port", "[v6]", "[v6]:port" and a
// bare "v6" (two or more colons, no port).
func splitEntryHostPort(raw, s string) (host, port string, hasPort, bracketed bool, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, false, entryErr(raw, "has an unclosed '['")
		}
		host, rest := s[1:end], s[end+1:]
		switch {
		case rest == "":
			return host, "", false, true, nil
		case rest[0] == ':':
			return host, rest[1:], true, true, nil
		}
		return "", "", false, false, entryErr(raw, "has text after ']' that is not a port")
	}
	if strings.ContainsAny(s, "[]") {
		return "", "", false, false, entryErr(raw, "has a misplaced bracket")
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
