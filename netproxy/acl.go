package netproxy

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// MaxURLLen bounds a URL an agent may ask for (8 KiB, the common server
// limit); longer ones are refused with CodeTooLarge before parsing.
const MaxURLLen = 8 << 10

// MaxEntries bounds an allowedHosts list.
const MaxEntries = 10000

// ACL is a parsed allowedHosts list. It is immutable and safe for
// concurrent use. The zero value and a nil *ACL allow nothing.
type ACL struct {
	entries []Entry
	texts   []string // entries[i].String(), made once: Check names the entry that matched
	allow   table
	deny    table // "!" entries: a match here refuses, whatever allow says
}

// table indexes one polarity of entries so that matching costs a few map
// lookups (one per label of the name, one per distinct prefix length),
// however many entries there are.
type table struct {
	names     map[string]*nameRule  // domain and wildcard entries by name
	addrs     map[netip.Addr][]rule // address literals
	localhost []rule
	ranges    map[netip.Prefix][]rule // masked prefixes
	bits4     []int                   // distinct IPv4 prefix lengths in ranges, longest first
	bits6     []int                   // the same for IPv6
}

// rule is one entry's scheme and port restriction; idx points into
// ACL.entries.
type rule struct {
	port   uint16 // 0: any
	scheme scheme // 0: any
	idx    int
}

// scheme is a URL scheme as a small number; 0 means "either" in a rule and
// "not known" in a query (the dialer, asked without a request).
type scheme uint8

const (
	schemeHTTP scheme = iota + 1
	schemeHTTPS
)

func schemeOf(s string) scheme {
	switch s {
	case "http":
		return schemeHTTP
	case "https":
		return schemeHTTPS
	}
	return 0
}

type nameRule struct {
	self []rule // the name itself (EntryDomain)
	subs []rule // names below it (EntryDomain and EntryWildcard)
}

// NewACL parses an allowedHosts list. Every entry must be canonical (see
// ParseEntry); the error names the first offending entry by index.
// Duplicates are harmless. An empty list is valid and allows nothing.
func NewACL(entries []string) (*ACL, error) {
	if len(entries) > MaxEntries {
		return nil, mediator.Errorf(mediator.CodeInvalidAllowedHost, "allowedHosts has %d entries; at most %d are allowed", len(entries), MaxEntries)
	}
	a := &ACL{}
	seen := make(map[Entry]bool, len(entries))
	for i, s := range entries {
		e, err := ParseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("allowedHosts[%d]: %w", i, err)
		}
		if seen[e] {
			continue
		}
		seen[e] = true
		r := rule{port: e.Port, scheme: schemeOf(e.Scheme), idx: len(a.entries)}
		a.entries = append(a.entries, e)
		a.texts = append(a.texts, e.String())
		tb := &a.allow
		if e.Deny {
			tb = &a.deny
		}
		tb.add(e, r)
	}
	a.allow.finish()
	a.deny.finish()
	return a, nil
}

func (tb *table) add(e Entry, r rule) {
	switch e.Kind {
	case EntryDomain, EntryWildcard:
		if tb.names == nil {
			tb.names = map[string]*nameRule{}
		}
		nr := tb.names[e.Host]
		if nr == nil {
			nr = &nameRule{}
			tb.names[e.Host] = nr
		}
		if e.Kind == EntryDomain {
			nr.self = append(nr.self, r)
		}
		nr.subs = append(nr.subs, r)
	case EntryIP:
		if tb.addrs == nil {
			tb.addrs = map[netip.Addr][]rule{}
		}
		tb.addrs[e.Addr] = append(tb.addrs[e.Addr], r)
	case EntryLocalhost:
		tb.localhost = append(tb.localhost, r)
	case EntryRange:
		if tb.ranges == nil {
			tb.ranges = map[netip.Prefix][]rule{}
		}
		tb.ranges[e.Prefix] = append(tb.ranges[e.Prefix], r)
	}
}

// finish lists the prefix lengths in use, so that an address is looked up
// once per length (at most 33 + 129) rather than once per range.
func (tb *table) finish() {
	var have4 [33]bool
	var have6 [129]bool
	for p := range tb.ranges {
		if p.Addr().Is4() {
			have4[p.Bits()] = true
		} else {
			have6[p.Bits()] = true
		}
	}
	for n := 32; n >= 0; n-- {
		if have4[n] {
			tb.bits4 = append(tb.bits4, n)
		}
	}
	for n := 128; n >= 0; n-- {
		if have6[n] {
			tb.bits6 = append(tb.bits6, n)
		}
	}
}

// Entries returns the parsed entries, without duplicates, in list order.
func (a *ACL) Entries() []Entry {
	if a == nil {
		return nil
	}
	return append([]Entry(nil), a.entries...)
}

// matchRule finds a rule for this scheme and port. For an allow table an
// unknown scheme (0) matches only rules for either scheme; for a deny
// table (anyScheme) it matches every rule, so that not knowing the scheme
// never lets a refused target through.
func matchRule(rs []rule, sc scheme, port uint16, anyScheme bool) (int, bool) {
	for _, r := range rs {
		if (r.port == 0 || r.port == port) && (r.scheme == 0 || r.scheme == sc || anyScheme && sc == 0) {
			return r.idx, true
		}
	}
	return 0, false
}

// matchName walks from the full name up through its parent domains: one
// map lookup per label, so the cost does not depend on the list's size.
func (tb *table) matchName(name string, sc scheme, port uint16, anyScheme bool) (int, bool) {
	if len(tb.names) == 0 {
		return 0, false
	}
	if nr := tb.names[name]; nr != nil {
		if i, ok := matchRule(nr.self, sc, port, anyScheme); ok {
			return i, true
		}
	}
	for s := name; ; {
		dot := strings.IndexByte(s, '.')
		if dot < 0 {
			return 0, false
		}
		s = s[dot+1:]
		if nr := tb.names[s]; nr != nil {
			if i, ok := matchRule(nr.subs, sc, port, anyScheme); ok {
				return i, true
			}
		}
	}
}

// matchAddr matches an address against literal entries, then ranges.
func (tb *table) matchAddr(addr netip.Addr, sc scheme, port uint16, anyScheme bool) (int, bool) {
	if i, ok := matchRule(tb.addrs[addr], sc, port, anyScheme); ok {
		return i, true
	}
	bits := tb.bits4
	if addr.Is6() {
		bits = tb.bits6
	}
	for _, n := range bits {
		p, err := addr.Prefix(n)
		if err != nil {
			continue
		}
		if i, ok := matchRule(tb.ranges[p], sc, port, anyScheme); ok {
			return i, true
		}
	}
	return 0, false
}

// match matches a checked target's host.
func (tb *table) match(t *Target, anyScheme bool) (int, bool) {
	sc := schemeOf(t.Scheme)
	switch {
	case t.IsIP:
		return tb.matchAddr(t.Addr, sc, t.Port, anyScheme)
	case t.Localhost:
		return matchRule(tb.localhost, sc, t.Port, anyScheme)
	}
	return tb.matchName(t.Host, sc, t.Port, anyScheme)
}

// permitsLocal reports whether the ACL lists this address (or localhost) by
// itself or in a listed range, for this scheme and port, and no deny entry
// names it: the only way a loopback or private address may be reached. The
// dialer asks again at connect time.
func (a *ACL) permitsLocal(sc scheme, host string, addr netip.Addr, port uint16) bool {
	if a == nil {
		return false
	}
	if host == "localhost" {
		if _, denied := matchRule(a.deny.localhost, sc, port, true); denied {
			return false
		}
		_, ok := matchRule(a.allow.localhost, sc, port, false)
		return ok
	}
	if !addr.IsValid() {
		return false
	}
	addr = addr.Unmap()
	if _, denied := a.deny.matchAddr(addr, sc, port, true); denied {
		return false
	}
	_, ok := a.allow.matchAddr(addr, sc, port, false)
	return ok
}

// deniedAddr names the deny entry an address falls under, if any: the
// dialer refuses a name whose answers include a refused address, as it
// would refuse the literal.
func (a *ACL) deniedAddr(sc scheme, addr netip.Addr, port uint16) (string, bool) {
	if a == nil {
		return "", false
	}
	if i, ok := a.deny.matchAddr(addr.Unmap(), sc, port, true); ok {
		return a.texts[i], true
	}
	return "", false
}

// Target is a URL that passed Check, in normalised form. Fetch sends the
// request to URL, whose host is the canonical host.
type Target struct {
	URL          *url.URL   // parsed URL, host rewritten to its canonical form
	Scheme       string     // "http" or "https"
	Host         string     // canonical host: ASCII name or address text (no brackets)
	Port         uint16     // explicit port or the scheme's default
	Addr         netip.Addr // the address, when IsIP
	IsIP         bool       // the URL names an address literal
	Localhost    bool       // the host is localhost: 127.0.0.1 and ::1, no DNS
	AllowPrivate bool       // matched by a literal or localhost entry: loopback/private permitted
	Entry        string     // the allowedHosts entry that matched

	// sendPath is the path exactly as the URL wrote it, when it holds a
	// '%' that starts no escape ("/100%"): URL carries it as "%25", and the
	// request sends it as written, as a browser does.
	sendPath string
}

// HostPort is the host and port in dialable form ("[::1]:443").
func (t Target) HostPort() string {
	return hostPort(t.Host, t.IsIP && t.Addr.Is6(), t.Port)
}

func hostPort(h string, v6 bool, port uint16) string {
	if v6 {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(int(port))
}

// Check decides whether an agent may fetch rawURL, without any network
// access. It enforces the URL rules (http/https only, no userinfo, no
// backslashes or control characters, bounded length, canonical host) and
// matches the host against the ACL. Addresses of names are checked later, at
// dial time, because only then are they known.
func (a *ACL) Check(rawURL string) (Target, mediator.Decision) {
	t, d := parseURL(rawURL)
	if !d.Allowed {
		return Target{}, d
	}
	if a == nil {
		return Target{}, deny(mediator.CodeHostNotAllowed, "no allowedHosts: the agent may not reach %q", t.Host)
	}
	if i, denied := a.deny.match(&t, true); denied {
		return Target{}, deny(mediator.CodeHostNotAllowed, "host %q (port %d) is refused by allowedHosts entry %q", t.Host, t.Port, a.texts[i])
	}
	idx, ok := a.allow.match(&t, false)
	if !ok {
		if !plain(t.Host) {
			return Target{}, deny(mediator.CodeHostNotAllowed, "host %q (port %d) is not in allowedHosts", t.Host, t.Port)
		}
		return Target{}, mediator.Deny(mediator.CodeHostNotAllowed,
			"host \""+t.Host+"\" (port "+strconv.Itoa(int(t.Port))+") is not in allowedHosts")
	}
	e := a.entries[idx]
	t.Entry = a.texts[idx]
	t.AllowPrivate = e.Kind == EntryIP || e.Kind == EntryRange || e.Kind == EntryLocalhost
	if t.IsIP {
		// Literals are checked here too, so that a denial never costs a
		// connection attempt. Only address classes that no listing can
		// unlock remain (metadata, unspecified, multicast, broadcast).
		if cls := ClassifyAddr(t.Addr); !cls.allowedWith(t.AllowPrivate) {
			return Target{}, deny(mediator.CodePrivateAddress, "address %s is %s and may not be fetched%s", t.Addr, cls.describe(), cls.neverWhy())
		}
	}
	if !plain(t.Host) || !plain(t.Entry) {
		return t, mediator.Allow("host " + strconv.Quote(t.Host) + " matches allowedHosts entry " + strconv.Quote(t.Entry))
	}
	return t, mediator.Allow("host \"" + t.Host + "\" matches allowedHosts entry \"" + t.Entry + "\"")
}

// DenyEntry returns the deny entry ("!pattern") that refuses rawURL's
// host, if one does: a caller that added deny entries of its own (the
// administrator's deniedHosts) tells its refusals from the profile's.
func (a *ACL) DenyEntry(rawURL string) (string, bool) {
	t, d := parseURL(rawURL)
	if !d.Allowed || a == nil {
		return "", false
	}
	if i, denied := a.deny.match(&t, true); denied {
		return a.texts[i], true
	}
	return "", false
}

// plain reports whether strconv.Quote would only put quotes around s, as
// it does for the canonical hosts and entries Check names: the reasons
// are then built in one allocation, on a path every fetch and redirect hop
// takes, with the same text as the general escaping gives.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
