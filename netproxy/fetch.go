package netproxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"golang.org/x/sync/semaphore"
)

// Config configures a Fetcher. The zero value is safe: every limit has a
// finite default and nothing reaches the network except through the ACL.
type Config struct {
	// MaxResponseBytes caps a response body (after decompression).
	// Default 32 MiB: enough for documents and images an agent handles,
	// small enough that a hostile server cannot exhaust the host's memory.
	MaxResponseBytes int64
	// MaxRequestBytes caps a request body. Default 8 MiB: bodies arrive
	// through native messaging in 1 MiB pieces, so larger ones are unusual.
	MaxRequestBytes int64
	// MaxRedirects caps redirects followed per fetch. Default 10 (what
	// browsers and net/http tolerate); negative means follow none.
	MaxRedirects int
	// Timeout bounds a whole fetch: lookups, connects, every redirect and
	// reading the body. Default 30s. The caller's context may set a shorter
	// deadline (the profile's executionTimeout); the shorter one wins.
	Timeout time.Duration
	// Resolver looks up names. Default net.DefaultResolver. Its answers are
	// checked like any others: it can make a name resolve, never make an
	// address allowed.
	Resolver Resolver
	// UnsafeProxyURL sends every fetch through this HTTP(S) proxy. Default
	// nil: no proxy, and the HTTP_PROXY / HTTPS_PROXY / ALL_PROXY /
	// NO_PROXY environment variables are ignored, because an agent-visible
	// environment must not redirect traffic past the address checks. It is
	// "unsafe" because the proxy resolves names itself: netproxy still checks
	// the URL and its own resolution of the name, but cannot stop the proxy
	// from seeing a different (rebound) answer.
	UnsafeProxyURL *url.URL
	// RootCAs verifies servers' TLS certificates. Default nil: the system
	// roots. Tests pass their httptest server's certificate.
	RootCAs *x509.CertPool
	// MaxBufferedBytes bounds the response bodies held in memory at once by
	// all fetches of this Fetcher together, from the first byte read until
	// the caller calls Response.Release. A fetch whose body would exceed it
	// waits for room (within its timeout). Default 48 MiB: one body at
	// MaxResponseBytes plus room for small ones, so that the host's peak
	// memory stays bounded whatever mix of fetches runs at once.
	MaxBufferedBytes int64
	// Dial replaces the final connect, which only ever gets an address the
	// Fetcher has resolved and checked ("127.0.0.1:8080", never a name).
	// Default nil: a net.Dialer. `nmhost check` sets it so that, whatever
	// a rule does, nothing but its own loopback servers can be reached.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Defaults, see Config.
const (
	DefaultMaxResponseBytes = 32 << 20
	DefaultMaxRequestBytes  = 8 << 20
	DefaultMaxRedirects     = 10
	DefaultTimeout          = 30 * time.Second
	DefaultMaxBufferedBytes = 48 << 20
)

// Limits on agent-supplied headers. The host applies them again while it
// decodes a request, before the headers are held in memory.
const (
	MaxHeaders     = 100
	MaxHeaderBytes = 64 << 10
)

// Fetcher performs fetches for agents. It is safe for concurrent use; all
// fetches share one transport and its keep-alive connections.
type Fetcher struct {
	cfg       Config
	resolver  Resolver
	dialer    net.Dialer
	transport *http.Transport
	proxyAddr string // host:port of UnsafeProxyURL, "" without a proxy
	buffered  *semaphore.Weighted

	// dialHook replaces the final connect in tests, which use it to prove
	// that only checked addresses are dialled and only loopback is reached.
	dialHook func(ctx context.Context, network, addr string) (net.Conn, error)
}

// New returns a Fetcher; zero fields of cfg take their defaults.
func New(cfg Config) *Fetcher {
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	switch {
	case cfg.MaxRedirects == 0:
		cfg.MaxRedirects = DefaultMaxRedirects
	case cfg.MaxRedirects < 0:
		cfg.MaxRedirects = 0
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBufferedBytes <= 0 {
		cfg.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	// One body at the limit must always fit, or such a fetch could never run.
	cfg.MaxBufferedBytes = max(cfg.MaxBufferedBytes, cfg.MaxResponseBytes)
	f := &Fetcher{cfg: cfg, resolver: cfg.Resolver, buffered: semaphore.NewWeighted(cfg.MaxBufferedBytes)}
	if f.resolver == nil {
		f.resolver = net.DefaultResolver
	}
	f.dialer = net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true) // over TLS only: no cleartext HTTP/2 (h2c)
	f.transport = &http.Transport{
		Proxy:                  nil, // never from the environment
		DialContext:            f.dialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 256 << 10,
		Protocols:              protocols,
	}
	if p := cfg.UnsafeProxyURL; p != nil {
		f.transport.Proxy = http.ProxyURL(p)
		port := p.Port()
		if port == "" {
			port = "80"
			if p.Scheme == "https" {
				port = "443"
			}
		}
		f.proxyAddr = net.JoinHostPort(p.Hostname(), port)
	}
	return f
}

// CloseIdleConnections closes kept-alive connections.
func (f *Fetcher) CloseIdleConnections() { f.transport.CloseIdleConnections() }

// Request is what an agent asks for.
type Request struct {
	URL     string
	Method  string            // default GET; GET HEAD POST PUT PATCH DELETE OPTIONS
	Headers map[string]string // see checkHeaders for the refused names
	Body    []byte

	// DecideHop, when set, is asked before each redirect is followed, once
	// the hop has passed the ACL, with the request the hop would send.
	// An error refuses the hop and ends the fetch with that error;
	// nothing is sent to the hop's target. The caller's policy uses it so
	// that a decision covers exactly the request it was made for: a
	// redirect is a new request to a new target.
	DecideHop func(ctx context.Context, hop Hop) error
}

// Hop is one redirect about to be followed: the request it would send.
type Hop struct {
	N       int    // 1 for the first redirect
	From    string // the URL that answered with the redirect
	Method  string // after the status code's method rules (303 turns POST into GET)
	URL     string // canonical
	Host    string // canonical
	BodyLen int    // bytes of body the hop would carry
}

// Response is what the agent gets back.
type Response struct {
	Status     int
	StatusText string
	Headers    map[string][]string
	Body       []byte
	FinalURL   string   // the URL that produced this response
	Redirects  []string // each redirect hop's URL, in order (FinalURL last)

	release func() // returns the body's bytes to the Fetcher's budget
}

// Release returns the body's share of the Fetcher's MaxBufferedBytes once
// the caller no longer holds the body (after the reply carrying it is
// written). It is safe to call more than once, and on a nil Response.
func (r *Response) Release() {
	if r != nil && r.release != nil {
		r.release()
	}
}

// Fetch performs req for an agent whose allowedHosts is acl. Policy refusals
// are *DenyError (IsDenial); they happen before anything is sent to the
// refused target and, for the static URL rules, before any DNS lookup.
// Other failures carry CodeTimeout, CodeDNSError, CodeTooLarge (response)
// or CodeUpstreamError.
func (f *Fetcher) Fetch(ctx context.Context, acl *ACL, req Request) (*Response, error) {
	method, hdr, d := f.checkRequest(req)
	if !d.Allowed {
		return nil, denyErr(d, req.URL, 0)
	}
	t, d := acl.Check(req.URL)
	if !d.Allowed {
		return nil, denyErr(d, req.URL, 0)
	}

	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, aclKey{}, acl)

	body := req.Body
	var redirects []string
	for hop := 0; ; hop++ {
		resp, err := f.roundTrip(ctx, acl, t, method, hdr, body)
		if err != nil {
			return nil, fetchErr(ctx, err, t.URL.String(), hop)
		}
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			return f.readResponse(ctx, resp, t, redirects, method)
		}
		// Drain a little so the connection can be reused, then decide.
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		resp.Body.Close()
		if hop+1 > f.cfg.MaxRedirects {
			return nil, &DenyError{Code: mediator.CodeTooManyRedirects,
				Reason: fmt.Sprintf("more than %d redirects", f.cfg.MaxRedirects), URL: truncURL(loc), Hop: hop + 1}
		}
		next, abs, d := nextHop(acl, t.URL, loc)
		if !d.Allowed {
			return nil, denyErr(d, abs, hop+1)
		}
		method, body, hdr = redirectRequest(resp.StatusCode, method, body, hdr, t, next)
		if req.DecideHop != nil {
			hop := Hop{N: hop + 1, From: t.URL.String(), Method: method, URL: next.URL.String(), Host: next.Host, BodyLen: len(body)}
			if err := req.DecideHop(ctx, hop); err != nil {
				return nil, err
			}
		}
		t = next
		redirects = append(redirects, t.URL.String())
	}
}

func (f *Fetcher) roundTrip(ctx context.Context, acl *ACL, t Target, method string, hdr http.Header, body []byte) (*http.Response, error) {
	if f.proxyAddr != "" {
		// Through a proxy the dialer never sees the target; check our own
		// resolution of it so that at least static tricks are refused.
		if _, err := f.resolveChecked(ctx, acl, schemeOf(t.Scheme), t.Host, t.Port); err != nil {
			return nil, err
		}
	}
	u := *t.URL
	if t.sendPath != "" {
		// The path goes on the wire as the URL wrote it (see Target);
		// through a proxy, plain http needs the absolute form.
		u.Opaque, u.RawPath = t.sendPath, ""
		if f.proxyAddr != "" && t.Scheme == "http" {
			u.Opaque = "//" + u.Host + t.sendPath
		}
	}
	r := &http.Request{
		Method:     method,
		URL:        &u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     hdr.Clone(),
		Host:       u.Host,
	}
	if len(body) > 0 {
		r.ContentLength = int64(len(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return f.transport.RoundTrip(r.WithContext(context.WithValue(ctx, schemeKey{}, schemeOf(t.Scheme))))
}

// fetchErr turns a transport error into a denial (as raised by the dialer),
// a timeout or a short upstream error. Internal details (addresses, OS error
// text) are left out of the message the agent sees.
func fetchErr(ctx context.Context, err error, u string, hop int) error {
	var de *DenyError
	if errors.As(err, &de) {
		c := *de
		c.URL, c.Hop = truncURL(u), hop
		return &c
	}
	u = truncURL(u)
	var me *mediator.Error
	if errors.As(err, &me) {
		return fmt.Errorf("fetch[%s]: %w", u, me)
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("fetch[%s]: %w", u, mediator.Errorf(mediator.CodeTimeout, "the request timed out"))
	}
	msg := "the server could not be reached or did not answer with valid HTTP"
	var (
		certErr  *tls.CertificateVerificationError
		hostErr  x509.HostnameError
		authErr  x509.UnknownAuthorityError
		recHdErr tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, context.Canceled):
		msg = "the request was cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = "the server refused the connection"
	case errors.Is(err, syscall.ECONNRESET):
		msg = "the server reset the connection"
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &authErr):
		msg = "the server's TLS certificate is not valid for this host"
	case errors.As(err, &recHdErr):
		msg = "the server did not answer with TLS"
	}
	return fmt.Errorf("fetch[%s]: %w", u, mediator.Errorf(mediator.CodeUpstreamError, "%s", msg))
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// nextHop resolves a Location header and checks the result as a new URL.
// Absolute Locations are checked exactly as the server wrote them, so a
// redirect gets the same verdict and code as fetching that URL directly.
func nextHop(acl *ACL, cur *url.URL, loc string) (Target, string, mediator.Decision) {
	if d := rawURLChecks(loc); !d.Allowed {
		return Target{}, loc, d
	}
	abs := loc
	if _, _, ok := splitScheme(loc); !ok {
		if strings.HasPrefix(loc, "//") {
			abs = cur.Scheme + ":" + loc
		} else {
			ref, err := url.Parse(loc)
			if err != nil {
				// A relative Location with a stray '%' resolves like any
				// other; the '%' is then carried escaped.
				if tail, _, ok := escapeStrayPercent(loc); ok {
					ref, err = url.Parse(tail)
				}
			}
			if err != nil {
				return Target{}, loc, deny(mediator.CodeInvalidURL, "the redirect's Location does not parse")
			}
			abs = cur.ResolveReference(ref).String()
		}
	}
	t, d := acl.Check(abs)
	return t, abs, d
}

// redirectRequest is the request for the next hop, as browsers do it:
// 301/302 turn POST into GET, 303 turns everything but HEAD into GET, and
// 307/308 keep method and body. Credentials the agent set (Authorization,
// Cookie) are not sent to another origin.
func redirectRequest(code int, method string, body []byte, hdr http.Header, from, to Target) (string, []byte, http.Header) {
	hdr = hdr.Clone()
	if (code == http.StatusMovedPermanently || code == http.StatusFound) && method == http.MethodPost ||
		code == http.StatusSeeOther && method != http.MethodHead && method != http.MethodGet {
		method, body = http.MethodGet, nil
		for _, h := range []string{"Content-Type", "Content-Encoding", "Content-Language", "Content-Location"} {
			hdr.Del(h)
		}
	}
	if from.Scheme != to.Scheme || from.Host != to.Host || from.Port != to.Port {
		hdr.Del("Authorization")
		hdr.Del("Cookie")
	}
	return method, body, hdr
}
