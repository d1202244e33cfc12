package netproxy

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// Reading an agent's URL once, exactly: the scheme, the host in its
// canonical form, the port, and the path as it goes on the wire.

// parseURL applies every URL rule that does not depend on the ACL.
func parseURL(raw string) (Target, mediator.Decision) {
	if d := rawURLChecks(raw); !d.Allowed {
		return Target{}, d
	}
	scheme, rest, ok := splitScheme(raw)
	if !ok {
		return Target{}, deny(mediator.CodeInvalidURL, "the URL is not absolute (it needs http:// or https://)")
	}
	scheme = strings.ToLower(scheme)
	var defPort uint16
	switch scheme {
	case "http":
		defPort = 80
	case "https":
		defPort = 443
	default:
		return Target{}, deny(mediator.CodeSchemeNotAllowed, "scheme %q is not allowed; only http and https", truncURL(scheme))
	}
	if !strings.HasPrefix(rest, "//") {
		return Target{}, deny(mediator.CodeInvalidURL, "the URL has no host (it needs %s://host/)", scheme)
	}
	authority := rest[2:]
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if strings.IndexByte(authority, '@') >= 0 {
		return Target{}, deny(mediator.CodeInvalidURL, "the URL contains user information (user@host), which is not allowed")
	}
	if strings.IndexByte(authority, '%') >= 0 {
		if strings.HasPrefix(authority, "[") {
			return Target{}, deny(mediator.CodeInvalidURL, "IPv6 zones are not allowed in URLs")
		}
		return Target{}, deny(mediator.CodeNonCanonicalHost, "the host is percent-encoded; write it plainly")
	}
	u, err := url.Parse(raw)
	var sendPath string
	if err != nil {
		// WHATWG keeps a '%' that starts no escape ("/100%", "#50%") as
		// written, where net/url refuses the URL. The authority is already
		// read (and has no '%'), so only the path and fragment of a copy are
		// escaped; the host net/url reads is then checked as for any URL.
		prefix := len(scheme) + 1 + 2 + len(authority)
		tail, path, ok := escapeStrayPercent(raw[prefix:])
		if !ok {
			return Target{}, deny(mediator.CodeInvalidURL, "the URL does not parse")
		}
		if u, err = url.Parse(raw[:prefix] + tail); err != nil {
			return Target{}, deny(mediator.CodeInvalidURL, "the URL does not parse")
		}
		// A path starting "//" would read as an authority in the request
		// line; it is sent escaped instead.
		if path != "" && !strings.HasPrefix(path, "//") {
			sendPath = wirePath(path)
		}
	}
	// Our reading of the authority and net/url's must agree exactly, or
	// the host we check is not the host that would be contacted.
	if u.Opaque != "" || u.User != nil || u.Host != authority {
		return Target{}, deny(mediator.CodeInvalidURL, "the URL's authority is ambiguous")
	}
	hostPart, portStr := splitURLHostPort(authority)
	t := Target{Scheme: scheme, Port: defPort}
	if portStr != "" {
		p, ok := parsePort(portStr)
		if !ok {
			return Target{}, deny(mediator.CodeInvalidURL, "port %q is not a number from 1 to 65535 without leading zeros", portStr)
		}
		t.Port = p
	}
	if strings.HasPrefix(hostPart, "[") {
		if !strings.HasSuffix(hostPart, "]") {
			return Target{}, deny(mediator.CodeInvalidURL, "the IPv6 literal is not closed")
		}
		addr, err := netip.ParseAddr(hostPart[1 : len(hostPart)-1])
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return Target{}, deny(mediator.CodeInvalidURL, "%q is not an IPv6 address literal", truncURL(hostPart))
		}
		// ::ffff:a.b.c.d is the IPv4 address it embeds, to the ACL and to
		// the dialer alike.
		t.Addr, t.IsIP = addr.Unmap(), true
		t.Host = t.Addr.String()
	} else {
		cn, he := canonicalName(hostPart)
		if he != nil {
			reason := he.reason
			if he.suggest != "" {
				reason += "; write " + he.suggest
			}
			return Target{}, mediator.Deny(he.code, reason)
		}
		t.Host = cn.name
		if cn.addr.IsValid() {
			t.Addr, t.IsIP = cn.addr, true
		}
		t.Localhost = cn.name == "localhost"
	}
	// u was parsed here for this Target alone: it is rewritten in place.
	if portStr != "" {
		u.Host = t.HostPort()
	} else if t.IsIP && t.Addr.Is6() {
		u.Host = "[" + t.Host + "]"
	} else {
		u.Host = t.Host
	}
	u.Scheme = scheme
	t.URL = u
	t.sendPath = sendPath
	return t, mediator.Allow("")
}

// escapeStrayPercent escapes, in the path and fragment of a URL's tail
// (what follows the authority), each '%' not followed by two hex digits,
// which is what WHATWG keeps as written and net/url refuses. The query is
// left alone: net/url keeps it raw. It returns the new tail, the path as
// written when the path had such a '%' (else ""), and whether anything
// changed.
func escapeStrayPercent(tail string) (string, string, bool) {
	end := len(tail)
	if i := strings.IndexAny(tail, "?#"); i >= 0 {
		end = i
	}
	path, pathChanged := escapeStray(tail[:end])
	rest := tail[end:]
	frag := ""
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest, frag = rest[:i], rest[i:]
	}
	frag, fragChanged := escapeStray(frag)
	if !pathChanged && !fragChanged {
		return tail, "", false
	}
	written := ""
	if pathChanged {
		written = tail[:end]
	}
	return path + rest + frag, written, true
}

// wirePath is a path as a browser sends it: every '%' as written, and the
// bytes WHATWG's path percent-encode set names (non-ASCII, '"', '<', '>',
// '`', '{', '}') encoded. Controls, spaces and '\\' never get here.
func wirePath(p string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c >= 0x80 || c == '"' || c == '<' || c == '>' || c == '`' || c == '{' || c == '}':
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func escapeStray(s string) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && (i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2])) {
			if !changed {
				b.Grow(len(s) + 8)
				b.WriteString(s[:i])
				changed = true
			}
			b.WriteString("%25")
			continue
		}
		if changed {
			b.WriteByte(s[i])
		}
	}
	if !changed {
		return s, false
	}
	return b.String(), true
}

// splitScheme splits "scheme:rest" per RFC 3986 (ALPHA *( ALPHA / DIGIT /
// "+" / "-" / "." )).
func splitScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], s[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// splitURLHostPort splits an authority already validated by net/url.
func splitURLHostPort(hp string) (host, port string) {
	if strings.HasPrefix(hp, "[") {
		if i := strings.LastIndexByte(hp, ']'); i >= 0 {
			if rest := hp[i+1:]; strings.HasPrefix(rest, ":") {
				return hp[:i+1], rest[1:]
			}
			return hp[:i+1], ""
		}
		return hp, ""
	}
	if i := strings.LastIndexByte(hp, ':'); i >= 0 {
		return hp[:i], hp[i+1:]
	}
	return hp, ""
}
