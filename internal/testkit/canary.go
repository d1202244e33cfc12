package testkit

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
)

// Canary is a loopback test server that counts every connection and every
// request. A denied fetch must leave both at zero.
type Canary struct {
	*httptest.Server
	Hits  atomic.Int64
	Conns atomic.Int64
	// Port is the port it listens on.
	Port string
}

// NewCanary starts a canary answering with h (nil: "canary"), closed when
// the test ends.
func NewCanary(tb testing.TB, h http.HandlerFunc) *Canary { return start(tb, h, false) }

// NewTLSCanary is NewCanary over TLS, with HTTP/2.
func NewTLSCanary(tb testing.TB, h http.HandlerFunc) *Canary { return start(tb, h, true) }

func start(tb testing.TB, h http.HandlerFunc, tls bool) *Canary {
	tb.Helper()
	c := &Canary{}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "canary") }
	}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.Hits.Add(1)
		h(w, r)
	}))
	c.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			c.Conns.Add(1)
		}
	}
	if tls {
		c.EnableHTTP2 = true
		c.StartTLS()
	} else {
		c.Start()
	}
	tb.Cleanup(c.Close)
	u, _ := url.Parse(c.URL)
	c.Port = u.Port()
	return c
}

// Untouched fails the test if anything reached the canary.
func (c *Canary) Untouched(tb testing.TB) {
	tb.Helper()
	if h, n := c.Hits.Load(), c.Conns.Load(); h != 0 || n != 0 {
		tb.Fatalf("canary was reached: %d requests, %d connections", h, n)
	}
}
