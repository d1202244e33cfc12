package viewer

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/mediator"
)

// testViewer is a Server listening on a real loopback port over a real
// store in a temporary data dir.
type testViewer struct {
	t     *testing.T
	srv   *Server
	st    *store.Store
	dir   string
	base  string // http://127.0.0.1:PORT
	host  string // 127.0.0.1:PORT
	token Token
}

func newTestViewer(t *testing.T, tweak func(*Config)) *testViewer {
	t.Helper()
	dir := storetest.Dir(t)
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	token, err := LoadOrCreateToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{App: testApp(t, st), Token: token, PollInterval: 20 * time.Millisecond}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	host := ln.Addr().String()
	return &testViewer{t: t, srv: srv, st: st, dir: dir, base: "http://" + host, host: host, token: token}
}

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

type reqOpt func(*http.Request)

func bearer(tok string) reqOpt {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}
func cookie(name, val string) reqOpt {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: name, Value: val}) }
}
func query(q string) reqOpt      { return func(r *http.Request) { r.URL.RawQuery = q } }
func header(k, v string) reqOpt  { return func(r *http.Request) { r.Header.Set(k, v) } }
func hostHeader(h string) reqOpt { return func(r *http.Request) { r.Host = h } }

// do sends a request and returns the status, the body and the response.
func (v *testViewer) do(method, path, body string, opts ...reqOpt) (int, string, *http.Response) {
	v.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, v.base+path, rd)
	if err != nil {
		v.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

// api sends an authorised request (Bearer) and decodes a JSON reply.
func (v *testViewer) api(method, path, body string, wantStatus int, out any, opts ...reqOpt) {
	v.t.Helper()
	status, b, _ := v.do(method, path, body, append([]reqOpt{bearer(v.token.String())}, opts...)...)
	if status != wantStatus {
		v.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, status, wantStatus, b)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(b), out); err != nil {
			v.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// wantRefusal checks a refusal's status and reason code.
func wantRefusal(t *testing.T, status int, body string, wantStatus int, wantCode mediator.Code) {
	t.Helper()
	var e apiError
	json.Unmarshal([]byte(body), &e)
	if status != wantStatus || e.Code != wantCode || e.OK {
		t.Fatalf("got %d %s; want %d with code %s", status, body, wantStatus, wantCode)
	}
}

// oldCookieName is the cookie earlier viewers set: a browser that still
// holds one must get nothing for it.
func (v *testViewer) oldCookieName() string {
	_, port, _ := net.SplitHostPort(v.host)
	return "nmhost_viewer_" + port
}

// nearToken is tok with its last character changed: the same length, so a
// compare must not stop at a prefix.
func nearToken(tok string) string {
	if tok[len(tok)-1] == 'A' {
		return tok[:len(tok)-1] + "B"
	}
	return tok[:len(tok)-1] + "A"
}

// wsProtocols is the Sec-WebSocket-Protocol header the page sends.
func wsProtocols(tok string) string { return ViewerProtocol + ", " + TokenProtocolPrefix + tok }

// dialWS opens /ws with the given headers.
func (v *testViewer) dialWS(h http.Header) (*websocket.Conn, *http.Response, error) {
	u := url.URL{Scheme: "ws", Host: v.host, Path: "/ws"}
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	return d.Dial(u.String(), h)
}

// browserWS dials like the viewer page does: own Origin, the token as a
// subprotocol.
func (v *testViewer) browserWS() *websocket.Conn {
	v.t.Helper()
	h := http.Header{}
	h.Set("Origin", v.base)
	h.Set("Sec-WebSocket-Protocol", wsProtocols(v.token.String()))
	c, resp, err := v.dialWS(h)
	if err != nil {
		v.t.Fatalf("dial /ws: %v (%v)", err, resp)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != ViewerProtocol {
		v.t.Fatalf("the server selected subprotocol %q; want %q", got, ViewerProtocol)
	}
	v.t.Cleanup(func() { c.Close() })
	return c
}

// readWS reads messages until one has the wanted type, failing after d.
func readWS(t *testing.T, c *websocket.Conn, want string, d time.Duration) map[string]any {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	for {
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("waiting for a %q message: %v", want, err)
		}
		if m["type"] == want {
			return m
		}
	}
}
