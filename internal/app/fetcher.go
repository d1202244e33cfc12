package app

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/netproxy"
)

// newFetcher is the fetcher the config describes.
func newFetcher(cfg datadir.Config) (*netproxy.Fetcher, error) {
	nc := netproxy.Config{MaxResponseBytes: cfg.MaxResponseBytes}
	if cfg.UnsafeProxyURL != "" {
		u, err := url.Parse(cfg.UnsafeProxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("unsafeProxyURL %q is not an http(s) URL", cfg.UnsafeProxyURL)
		}
		nc.UnsafeProxyURL = u
	}
	if len(cfg.StaticHosts) > 0 {
		r, err := newStaticResolver(cfg.StaticHosts)
		if err != nil {
			return nil, err
		}
		nc.Resolver = r
	}
	return netproxy.New(nc), nil
}

// staticResolver answers configured names from the config (like a hosts
// file) and asks DNS for the rest. Its answers pass through the same address
// checks as DNS answers: it can only make a name resolve, never make an
// address allowed.
type staticResolver struct {
	m map[string][]netip.Addr
}

func newStaticResolver(m map[string][]string) (*staticResolver, error) {
	r := &staticResolver{m: map[string][]netip.Addr{}}
	for name, addrs := range m {
		canon := strings.TrimSuffix(strings.ToLower(name), ".")
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				return nil, fmt.Errorf("staticHosts[%s]: %q is not an IP address", name, a)
			}
			r.m[canon] = append(r.m[canon], ip)
		}
	}
	return r, nil
}

func (r *staticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ips, ok := r.m[strings.TrimSuffix(strings.ToLower(host), ".")]; ok {
		return ips, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}
