package netproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
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
