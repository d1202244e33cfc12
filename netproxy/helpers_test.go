package netproxy

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
)

// canary is the shared loopback canary (testkit.Canary): it counts every
// connection and request, and a denied fetch must leave both at zero.
type canary = testkit.Canary

func newCanary(t testing.TB, h http.HandlerFunc) *canary    { return testkit.NewCanary(t, h) }
func newTLSCanary(t testing.TB, h http.HandlerFunc) *canary { return testkit.NewTLSCanary(t, h) }

// fakeResolver answers from a map, counts lookups, and fails for any other
// name, so no test ever asks real DNS.
type fakeResolver struct {
	m       map[string][]netip.Addr
	lookups atomic.Int64
}

func newResolver(kv ...string) *fakeResolver {
	r := &fakeResolver{m: map[string][]netip.Addr{}}
	for i := 0; i+1 < len(kv); i += 2 {
		r.m[kv[i]] = append(r.m[kv[i]], netip.MustParseAddr(kv[i+1]))
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.lookups.Add(1)
	if a, ok := r.m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// dialGuard stands in for the final connect. Every address it is given must
// be a literal IP:port (names are never dialled). Loopback addresses are
// dialled for real; public addresses listed in remap are connected to the
// loopback server standing in for them; anything else fails the test, so
// tests never reach beyond loopback even when the code under test is wrong.
type dialGuard struct {
	t     testing.TB
	mu    sync.Mutex
	remap map[netip.AddrPort]string
	dials []string
}

func (g *dialGuard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	g.mu.Lock()
	g.dials = append(g.dials, addr)
	target, remapped := g.remap[ap]
	g.mu.Unlock()
	if err != nil {
		g.t.Errorf("dialled %q, which is not a literal address", addr)
		return nil, err
	}
	var d net.Dialer
	switch {
	case remapped:
		return d.DialContext(ctx, network, target)
	case ap.Addr().Unmap().IsLoopback():
		return d.DialContext(ctx, network, addr)
	}
	g.t.Errorf("dialled non-loopback address %s", addr)
	return nil, errors.New("test dial guard: not loopback")
}

func (g *dialGuard) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.dials)
}

// newTestFetcher returns a Fetcher whose connects go through a dialGuard.
func newTestFetcher(t testing.TB, cfg Config) (*Fetcher, *dialGuard) {
	f := New(cfg)
	g := &dialGuard{t: t, remap: map[netip.AddrPort]string{}}
	f.dialHook = g.dial
	t.Cleanup(f.CloseIdleConnections)
	return f, g
}

// wantDeny asserts err is a *DenyError with code (and hop, unless -1).
func wantDeny(t testing.TB, err error, code mediator.Code, hop int) *DenyError {
	t.Helper()
	var de *DenyError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v; want a *DenyError with %s", err, code)
	}
	if de.Code != code || !IsDenial(err) || mediator.CodeOf(err) != code {
		t.Fatalf("err = %v (code %s, CodeOf %s); want %s", err, de.Code, mediator.CodeOf(err), code)
	}
	if hop >= 0 && de.Hop != hop {
		t.Fatalf("hop = %d, want %d (%v)", de.Hop, hop, err)
	}
	if de.Reason == "" {
		t.Fatal("denial without a reason")
	}
	return de
}

// wantErr asserts err is not a denial and carries code.
func wantErr(t testing.TB, err error, code mediator.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s", code)
	}
	if IsDenial(err) || mediator.CodeOf(err) != code {
		t.Fatalf("err = %v (code %s, denial %v); want non-denial %s", err, mediator.CodeOf(err), IsDenial(err), code)
	}
}

func get(u string) Request { return Request{URL: u} }

func hostPortOf(c *canary) string { return "127.0.0.1:" + c.Port }

func rootsOf(c *canary) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Certificate())
	return p
}
