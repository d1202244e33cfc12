package netproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"testing"
)

func benchACL(b *testing.B, n int) {
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("host%d.example%d.com", i, i%97)
	}
	acl, err := NewACL(hosts)
	if err != nil {
		b.Fatal(err)
	}
	// One allowed (deep subdomain of the last entry), one refused.
	allowed := fmt.Sprintf("https://a.b.host%d.example%d.com/path?q=1", n-1, (n-1)%97)
	refused := "https://a.b.c.d.not-listed.example.net/path?q=1"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		u := allowed
		if i&1 == 1 {
			u = refused
		}
		if _, d := acl.Check(u); d.Allowed != (i&1 == 0) {
			b.Fatalf("%s: %+v", u, d)
		}
	}
}

func BenchmarkACLCheck(b *testing.B) {
	b.Run("entries=10", func(b *testing.B) { benchACL(b, 10) })
	b.Run("entries=10000", func(b *testing.B) { benchACL(b, 10000) })
}

// benchFormsACL mixes every entry form: a quarter deny entries, names with
// schemes and ports, and ranges of every prefix length from /8 to /31, so
// that an address is looked up once per length in use.
func benchFormsACL(b *testing.B, n int) {
	hosts := make([]string, 0, n)
	for i := 0; len(hosts) < n; i++ {
		switch i % 4 {
		case 0:
			hosts = append(hosts, fmt.Sprintf("https://host%d.example%d.com", i, i%97))
		case 1:
			hosts = append(hosts, fmt.Sprintf("!deny%d.example%d.com:8080", i, i%97))
		case 2:
			bits := 8 + i%24
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), bits).Masked()
			hosts = append(hosts, p.String())
		case 3:
			hosts = append(hosts, fmt.Sprintf("!172.%d.%d.0/24", 16+i%16, (i/16)%256))
		}
	}
	acl, err := NewACL(hosts)
	if err != nil {
		b.Fatal(err)
	}
	urls := []struct {
		u  string
		ok bool
	}{
		{"https://a.b.host0.example0.com/path?q=1", true},
		{"http://10.0.0.1:8080/x", true},
		{"http://172.19.0.9/x", false},
		{"https://a.b.c.d.not-listed.example.net/path?q=1", false},
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c := urls[i%len(urls)]
		if _, d := acl.Check(c.u); d.Allowed != c.ok {
			b.Fatalf("%s: %+v", c.u, d)
		}
	}
}

func BenchmarkACLCheckForms(b *testing.B) {
	b.Run("entries=10", func(b *testing.B) { benchFormsACL(b, 10) })
	b.Run("entries=10000", func(b *testing.B) { benchFormsACL(b, 10000) })
}

var benchBody = make([]byte, 1024)

func benchServer(b *testing.B) *canary {
	return newCanary(b, func(w http.ResponseWriter, r *http.Request) { w.Write(benchBody) })
}

func BenchmarkFetchLoopback(b *testing.B) {
	srv := benchServer(b)
	f := New(Config{})
	defer f.CloseIdleConnections()
	acl := mustACL(b, hostPortOf(srv))
	ctx := context.Background()
	req := Request{URL: srv.URL + "/bench"}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := f.Fetch(ctx, acl, req)
		if err != nil || len(resp.Body) != len(benchBody) {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlainClientLoopback is the baseline: net/http with nothing in
// the way, doing the same work (request, read the whole body).
func BenchmarkPlainClientLoopback(b *testing.B) {
	srv := benchServer(b)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	u := srv.URL + "/bench"
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(body) != len(benchBody) {
			b.Fatal(err)
		}
	}
}
