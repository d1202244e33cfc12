package netproxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"

	"github.com/agentgate/nmhost/mediator"
)

// Resolver looks up a name's addresses. *net.Resolver satisfies it; tests
// and the host's static-hosts option supply their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// aclKey carries the request's ACL to the dialer, which asks it again
// whether a loopback or private address is listed by itself.
type aclKey struct{}

// schemeKey carries the scheme of the request a dial is for, so that the
// dialer applies "https://..." entries as Check did. The transport pools
// connections per scheme, so a connection dialled for one scheme is never
// reused for the other. Without it the dialer knows no scheme: only
// entries for either scheme allow, and every deny entry refuses.
type schemeKey struct{}

// maxAddrs bounds how many resolved addresses are dialled in turn; all of
// them are checked regardless.
const maxAddrs = 8

var (
	loopback4 = netip.MustParseAddr("127.0.0.1")
	loopback6 = netip.IPv6Loopback()
)

// dialContext is the only way the transport opens connections. It dials
// addresses, never names: a name is resolved here, every answer is
// checked, and the connection goes to a checked answer, so a DNS answer
// that changes between check and connect (rebinding) has nothing to change.
func (f *Fetcher) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if f.proxyAddr != "" && addr == f.proxyAddr {
		// The host's own configuration named this proxy.
		return f.dial(ctx, network, addr)
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &mediator.Error{Code: mediator.CodeInvalidURL, Msg: "the address to dial is malformed"}
	}
	port, ok := parsePort(portStr)
	if !ok {
		return nil, &mediator.Error{Code: mediator.CodeInvalidURL, Msg: "the port to dial is malformed"}
	}
	acl, _ := ctx.Value(aclKey{}).(*ACL)
	sc, _ := ctx.Value(schemeKey{}).(scheme)
	addrs, err := f.resolveChecked(ctx, acl, sc, host, port)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, a := range addrs {
		c, err := f.dial(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, firstErr
}

// resolveChecked returns the addresses host may be reached at, all of them
// permitted by the address policy, or a *DenyError / DNS error.
func (f *Fetcher) resolveChecked(ctx context.Context, acl *ACL, sc scheme, host string, port uint16) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if entry, denied := acl.deniedAddr(sc, a, port); denied {
			return nil, &DenyError{Code: mediator.CodeHostNotAllowed,
				Reason: "address " + a.String() + " is refused by allowedHosts entry " + strconv.Quote(entry)}
		}
		if cls := ClassifyAddr(a); !cls.allowedWith(acl.permitsLocal(sc, "", a, port)) {
			return nil, &DenyError{Code: mediator.CodePrivateAddress,
				Reason: "address " + a.String() + " is " + cls.describe() + " and is not listed by itself in allowedHosts"}
		}
		return []netip.Addr{a}, nil
	}
	if host == "localhost" {
		// localhost is a promise, not a lookup: the system resolver (or
		// /etc/hosts) could map it anywhere.
		if !acl.permitsLocal(sc, "localhost", netip.Addr{}, port) {
			return nil, &DenyError{Code: mediator.CodePrivateAddress, Reason: "localhost is not listed by itself in allowedHosts"}
		}
		return []netip.Addr{loopback4, loopback6}, nil
	}
	addrs, err := f.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsTimeout {
			return nil, &mediator.Error{Code: mediator.CodeTimeout, Msg: "looking up " + strconv.Quote(host) + " timed out"}
		}
		return nil, &mediator.Error{Code: mediator.CodeDNSError, Msg: "could not resolve host " + strconv.Quote(host)}
	}
	if len(addrs) == 0 {
		return nil, &mediator.Error{Code: mediator.CodeDNSError, Msg: "host " + strconv.Quote(host) + " has no addresses"}
	}
	out := make([]netip.Addr, 0, min(len(addrs), maxAddrs))
	for _, a := range addrs {
		a = a.Unmap()
		// A deny entry for an address or range covers names that resolve
		// into it, as a person writing "!203.0.113.0/24" expects.
		if entry, denied := acl.deniedAddr(sc, a, port); denied {
			return nil, &DenyError{Code: mediator.CodeHostNotAllowed,
				Reason: "host " + strconv.Quote(host) + " resolves to " + a.String() + ", which allowedHosts entry " + strconv.Quote(entry) + " refuses"}
		}
		// Every answer must be public: if one is not, the name is being
		// used to point into the local network, whatever the others say.
		if cls := ClassifyAddr(a); cls != AddrPublic {
			return nil, &DenyError{Code: mediator.CodePrivateAddress,
				Reason: "host " + strconv.Quote(host) + " resolves to " + a.String() + ", " + cls.describe()}
		}
		if len(out) < maxAddrs {
			out = append(out, a)
		}
	}
	return out, nil
}

// dial opens a TCP connection to a literal address (or the proxy).
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if f.dialHook != nil {
		return f.dialHook(ctx, network, addr)
	}
	if f.cfg.Dial != nil {
		return f.cfg.Dial(ctx, network, addr)
	}
	return f.dialer.DialContext(ctx, network, addr)
}

// DialTarget opens a TCP connection to a target that passed acl.Check,
// under the rules a fetch dials by: a name is resolved here and every
// answer checked (private ranges, deny entries), and the connection goes
// to a checked address. It is for a tunnel whose bytes the host does
// not read: the sandbox's CONNECT proxy.
func (f *Fetcher) DialTarget(ctx context.Context, acl *ACL, t Target) (net.Conn, error) {
	if acl == nil {
		return nil, &DenyError{Code: mediator.CodeHostNotAllowed, Reason: "no allowedHosts: nothing may be reached"}
	}
	ctx = context.WithValue(ctx, aclKey{}, acl)
	ctx = context.WithValue(ctx, schemeKey{}, schemeOf(t.Scheme))
	return f.dialContext(ctx, "tcp", t.HostPort())
}
