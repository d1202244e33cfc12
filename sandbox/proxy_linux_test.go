package sandbox

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// decisions records what a run's proxy decided.
type decisions struct {
	mu  sync.Mutex
	got []string
}

func (d *decisions) decide(_ context.Context, scheme, hostPort string, dec mediator.Decision) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, scheme+" "+hostPort+" "+string(dec.Code))
	return nil
}

func (d *decisions) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.got...)
}

func hostOf(u string) string { return strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://") }

// TestTheNetworkIsTheACL: a program reaches a listed server through the
// proxy, by plain http and by a CONNECT tunnel; a server on another
// loopback port that is not listed (the canary) gets nothing, through
// the proxy or around it; each connection is decided with its code.
func TestTheNetworkIsTheACL(t *testing.T) {
	var hits atomic.Int64
	canarySrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer canarySrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain-ok") }))
	defer plain.Close()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls-ok") }))
	defer tls.Close()
	acl, err := netproxy.NewACL([]string{hostOf(plain.URL), hostOf(tls.URL)})
	if err != nil {
		t.Fatal(err)
	}
	rec := &decisions{}
	p, err := ServeProxy(ACLConnect(netproxy.New(netproxy.Config{}), acl, rec.decide))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	canary := hostOf(canarySrv.URL)
	tests := []struct {
		name   string
		argv   []string
		want   string
		wantOK bool
		record string
	}{
		{"a listed server over http", []string{"curl", "-sS", plain.URL + "/x"}, "plain-ok", true, "http " + hostOf(plain.URL) + " allowed"},
		{"a listed server through a tunnel", []string{"curl", "-sSk", tls.URL + "/x"}, "tls-ok", true, "https " + hostOf(tls.URL) + " allowed"},
		{"another loopback port over http", []string{"curl", "-sS", "-f", canarySrv.URL + "/x"}, "403", false, "http " + canary + " host_not_allowed"},
		{"another loopback port through a tunnel", []string{"curl", "-sS", "-p", canarySrv.URL + "/x"}, "403", false, "https " + canary + " host_not_allowed"},
		{"another loopback port, around the proxy", []string{"curl", "-sS", "--noproxy", "*", canarySrv.URL + "/x"}, "failed to connect", false, ""},
		{"a public name, around the proxy", []string{"./hostile", "dial", "192.0.2.1:80"}, "network is unreachable", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(rec.list())
			res := run(t, Config{Workspace: workspaceWithHostile(t), Proxy: p.Socket}, tt.argv...)
			out := strings.ToLower(string(res.Output))
			if (res.Exit == 0) != tt.wantOK || !strings.Contains(out, strings.ToLower(tt.want)) {
				t.Fatalf("exit %d, output %q; want ok=%v and %q", res.Exit, res.Output, tt.wantOK, tt.want)
			}
			got := rec.list()[before:]
			if tt.record == "" && len(got) != 0 || tt.record != "" && (len(got) != 1 || got[0] != tt.record) {
				t.Fatalf("decided %q, want %q", got, tt.record)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the canary was reached %d times", n)
	}
}

// TestWithoutAProxyThereIsNoNetwork: a run without Config.Proxy has no
// port to reach, only its own loopback.
func TestWithoutAProxyThereIsNoNetwork(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	res := run(t, Config{Workspace: workspaceWithHostile(t)}, "./hostile", "dial", hostOf(srv.URL))
	if res.Exit == 0 || !strings.Contains(string(res.Output), "connection refused") || hits.Load() != 0 {
		t.Fatalf("exit %d, %q, %d hits", res.Exit, res.Output, hits.Load())
	}
	if _, err := net.Dial("tcp", hostOf(srv.URL)); err != nil {
		t.Fatalf("the server is not up for the host: %v", err)
	}
}
