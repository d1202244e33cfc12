package netproxy

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/agentgate/nmhost/mediator"
)

// hostError explains why a host spelling was refused. Suggest is the
// canonical spelling when the host is an alternative spelling of one
// (e.g. "127.0.0.1" for "0x7f.1"), else "".
type hostError struct {
	code    mediator.Code
	reason  string
	suggest string
}

// canonName is a host after canonicalisation: either an IPv4 literal in
// canonical dotted-decimal form, or a validated lower-case ASCII DNS name.
type canonName struct {
	name string
	addr netip.Addr // valid when the host is an IPv4 literal
}

// canonicalName canonicalises a host that is not in brackets: it lowercases,
// maps non-ASCII through IDNA (the strict lookup profile), removes one
// trailing dot, and refuses every numeric spelling that is not canonical
// dotted-decimal IPv4. The numeric check is done after mapping so that
// full-width digits and ideographic dots cannot hide an address.
func canonicalName(h string) (canonName, *hostError) {
	if h == "" {
		return canonName{}, &hostError{code: mediator.CodeInvalidURL, reason: "the host is empty"}
	}
	if !utf8.ValidString(h) {
		return canonName{}, &hostError{code: mediator.CodeInvalidURL, reason: "the host is not valid UTF-8"}
	}
	ascii := isASCII(h)
	s := h
	if ascii {
		s = lowerASCII(s)
	} else {
		var err error
		s, err = idna.Lookup.ToASCII(h)
		if err != nil || !isASCII(s) {
			return canonName{}, &hostError{code: mediator.CodeInvalidURL, reason: "the host is not a valid internationalised domain name"}
		}
	}
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return canonName{}, &hostError{code: mediator.CodeInvalidURL, reason: "the host is empty"}
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	if looksNumeric(last) {
		// A host ending in a number is an address to every URL parser that
		// matters (WHATWG, inet_aton), so it must be an address written
		// canonically; anything else is someone hiding one.
		if ascii {
			if a, err := netip.ParseAddr(s); err == nil && a.Is4() && a.String() == s {
				return canonName{name: s, addr: a}, nil
			}
		}
		he := &hostError{code: mediator.CodeNonCanonicalHost}
		if a, ok := parseLegacyIPv4(s); ok {
			he.suggest = a.String()
			he.reason = "the host " + strconv.Quote(h) + " is a non-canonical spelling of the address " + a.String()
		} else {
			he.reason = "the host " + strconv.Quote(h) + " ends in a number but is not an IPv4 address in dotted-decimal form"
		}
		return canonName{}, he
	}
	if !validDNSName(s) {
		return canonName{}, &hostError{code: mediator.CodeInvalidURL, reason: "the host " + strconv.Quote(h) + " is not a valid DNS name"}
	}
	return canonName{name: s}, nil
}

// validDNSName accepts lower-case LDH names (plus '_', which DNS allows and
// some real hosts use), labels of 1..63 bytes, 253 bytes in all. A-labels
// ("xn--") must decode as valid IDNA so that every accepted name has exactly
// one Unicode reading.
func validDNSName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for len(s) > 0 {
		label := s
		if i := strings.IndexByte(s, '.'); i >= 0 {
			label, s = s[:i], s[i+1:]
			if s == "" { // trailing empty label
				return false
			}
		} else {
			s = ""
		}
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
		if strings.HasPrefix(label, "xn--") {
			u, err := idna.Lookup.ToUnicode(label)
			if err != nil {
				return false
			}
			if back, err := idna.Lookup.ToASCII(u); err != nil || back != label {
				return false
			}
		}
	}
	return true
}

// looksNumeric is the WHATWG "ends in a number" test for one label: all
// decimal digits, or 0x followed by hex digits (possibly none).
func looksNumeric(label string) bool {
	if label == "" {
		return false
	}
	if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
		for i := 2; i < len(label); i++ {
			if !isHex(label[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(label); i++ {
		if label[i] < '0' || label[i] > '9' {
			return false
		}
	}
	return true
}

// parseLegacyIPv4 parses the inet_aton / WHATWG spellings of IPv4: one to
// four parts, each decimal, octal (leading 0) or hex (0x), the last part
// filling the remaining bytes. It exists only to tell people which address
// a non-canonical spelling means; such spellings are never accepted.
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) == 0 || len(parts) > 4 {
		return netip.Addr{}, false
	}
	var nums [4]uint64
	for i, p := range parts {
		n, ok := parseLegacyNum(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i := 0; i < len(parts)-1; i++ {
		if nums[i] > 255 {
			return netip.Addr{}, false
		}
		v |= nums[i] << (8 * (3 - i))
	}
	lastBits := 8 * (5 - len(parts))
	if nums[len(parts)-1] >= 1<<lastBits {
		return netip.Addr{}, false
	}
	v |= nums[len(parts)-1]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseLegacyNum(p string) (uint64, bool) {
	base := 10
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	case p == "":
		return 0, false
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil || n > 0xffffffff {
		return 0, false
	}
	return n, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerASCII avoids an allocation for the common already-lower-case host.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// parsePort parses a decimal port 1..65535. Leading zeros are refused: a
// port, like a host, has one spelling.
func parsePort(s string) (uint16, bool) {
	if s == "" || len(s) > 5 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	if n < 1 || n > 65535 {
		return 0, false
	}
	return uint16(n), true
}
