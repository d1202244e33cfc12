package viewer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

func TestWebsocketRefusesOtherOrigins(t *testing.T) {
	v := newTestViewer(t, nil)
	tok := v.token.String()
	_, port, _ := strings.Cut(v.host, ":")
	for _, c := range []struct {
		name   string
		origin string
		auth   string // "protocol", "bearer" or ""
		status int
	}{
		{"other site", "http://evil.example", "protocol", 403},
		{"other port", "http://127.0.0.1:1", "protocol", 403},
		{"localhost alias of our port", "http://localhost:" + port, "protocol", 403}, // Host says 127.0.0.1
		{"https", "https://127.0.0.1:" + port, "protocol", 403},
		{"null", "null", "protocol", 403},
		{"bearer but cross-origin", "http://evil.example", "bearer", 403},
		{"no token", "http://" + v.host, "", 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			if c.origin != "" {
				h.Set("Origin", c.origin)
			}
			switch c.auth {
			case "protocol":
				h.Set("Sec-WebSocket-Protocol", wsProtocols(tok))
			case "bearer":
				h.Set("Authorization", "Bearer "+tok)
			}
			conn, resp, err := v.dialWS(h)
			if err == nil {
				conn.Close()
				t.Fatal("the websocket was accepted")
			}
			if resp == nil || resp.StatusCode != c.status {
				t.Fatalf("refusal %v; want status %d", resp, c.status)
			}
		})
	}
	t.Run("a program with a bearer token and no origin", func(t *testing.T) {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+tok)
		conn, _, err := v.dialWS(h)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		readWS(t, conn, "hello", 5*time.Second)
	})
}

// TestWebsocketTokenIsASubprotocol: the page offers the token as a
// subprotocol, since a browser cannot set headers on a websocket. Only that
// counts (not a cookie), a wrong one anywhere refuses, and the server never
// selects, so never echoes, the token's protocol.
func TestWebsocketTokenIsASubprotocol(t *testing.T) {
	v := newTestViewer(t, nil)
	tok := v.token.String()
	near := nearToken(tok)
	for _, c := range []struct {
		name  string
		proto string
		extra map[string]string
	}{
		{"only the viewer protocol", ViewerProtocol, nil},
		{"wrong token", wsProtocols(near), nil},
		{"token prefix", wsProtocols(tok[:10]), nil},
		{"right and wrong token", wsProtocols(tok) + ", " + TokenProtocolPrefix + near, nil},
		{"right protocol wrong bearer", wsProtocols(tok), map[string]string{"Authorization": "Bearer " + near}},
		{"the old cookie", ViewerProtocol, map[string]string{"Cookie": v.oldCookieName() + "=" + tok}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("Origin", v.base)
			h.Set("Sec-WebSocket-Protocol", c.proto)
			for k, val := range c.extra {
				h.Set(k, val)
			}
			conn, resp, err := v.dialWS(h)
			if err == nil {
				conn.Close()
				t.Fatal("the websocket was accepted")
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("refusal %v; want 401", resp)
			}
		})
	}
	// The way the page dials: the server answers with the fixed protocol.
	c := v.browserWS()
	readWS(t, c, "hello", 5*time.Second)
	// The token protocol is honoured on /ws only, never as a credential
	// for the API.
	status, body, _ := v.do("GET", "/api/denials", "", header("Sec-WebSocket-Protocol", wsProtocols(tok)))
	wantRefusal(t, status, body, http.StatusUnauthorized, mediator.CodeUnauthorized)
}

func TestLiveTailSeesOtherProcessesDenials(t *testing.T) {
	v := newTestViewer(t, nil)
	seedDenials(t, v.st, 1, "before")
	c := v.browserWS()
	hello := readWS(t, c, "hello", 5*time.Second)
	// Another host process: its own handle on the same files.
	other, err := store.Open(v.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	written := time.Now()
	d, err := other.LogDenial(context.Background(), mediator.Denial{AgentID: "elsewhere", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
		Context: mediator.DenialContext{URL: "https://x.test/", Reason: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	lastID := int64(hello["lastId"].(float64))
	for {
		m := readWS(t, c, "denial", 2*time.Second)
		got := m["denial"].(map[string]any)
		if id := int64(got["id"].(float64)); id <= lastID {
			t.Fatalf("hello said everything up to %d is in the store, then sent %d", lastID, id)
		}
		if got["agentId"] == "elsewhere" {
			if int64(got["id"].(float64)) != d.ID {
				t.Fatalf("got %v; want id %d", got, d.ID)
			}
			break
		}
	}
	t.Logf("a denial from another handle arrived after %v", time.Since(written).Round(time.Millisecond))
}

func TestMalformedWebsocketMessages(t *testing.T) {
	v := newTestViewer(t, nil)
	c := v.browserWS()
	readWS(t, c, "hello", 5*time.Second)
	for _, c2 := range []struct{ msg, code string }{
		{`{"type":`, "bad_request"},
		{`[1,2]`, "bad_request"},
		{`{"type":"shutdown"}`, "unknown_type"},
		{`{"type":"run","sessionId":"nope","agentId":"a"}`, "unknown_session"},
		{`{"type":"run","sessionId":"a\u0000b","agentId":"a"}`, "unknown_session"},
		{`{"type":"run","sessionId":"a\nforged","agentId":"a"}`, "unknown_session"},
	} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(c2.msg)); err != nil {
			t.Fatal(err)
		}
		m := readWS(t, c, "error", 5*time.Second)
		if m["code"] != c2.code {
			t.Errorf("%s: %v; want code %s", c2.msg, m, c2.code)
		}
	}
	// An oversized message closes the connection.
	big := `{"type":"run","input":"` + strings.Repeat("x", MaxWSMessageBytes) + `"}`
	c.WriteMessage(websocket.TextMessage, []byte(big))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			if ce, ok := err.(*websocket.CloseError); ok && ce.Code != websocket.CloseMessageTooBig {
				t.Errorf("closed with %v; want 1009 (message too big)", ce)
			}
			break
		}
	}
}

// TestNonReadingClientIsDroppedOthersKeepUp: a client that never reads
// fills its socket and then its queue; the server drops it while a client
// that reads receives every denial.
func TestNonReadingClientIsDroppedOthersKeepUp(t *testing.T) {
	v := newTestViewer(t, func(c *Config) { c.ClientQueue = 1024; c.WriteTimeout = 2 * time.Second })
	// The stalled client: a raw TCP connection that completes the upgrade
	// and never reads again, with the smallest receive buffer the OS allows.
	raw, err := net.Dial("tcp", v.host)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.(*net.TCPConn).SetReadBuffer(1024)
	fmt.Fprintf(raw, "GET /ws HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nSec-WebSocket-Protocol: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
		v.host, v.base, wsProtocols(v.token.String()))
	good := v.browserWS()
	readWS(t, good, "hello", 5*time.Second)
	waitUntil(t, 5*time.Second, func() bool { return v.srv.hub.count() == 2 })

	// About 8 KiB each, so the stalled socket's buffers fill fast: they
	// held about 470 of them here (Linux lets a loopback socket's send
	// buffer grow to 4 MiB), then the write timeout dropped the client.
	// 1,500 fill them three times over; 3,000 took 24 s of CPU under the
	// race detector, each denial a durable write.
	const n = 1500
	details := map[string]string{}
	for i := range 15 {
		details[fmt.Sprint("k", i)] = strings.Repeat("x", 500)
	}
	received := make(chan int, 1)
	go func() {
		seen := 0
		// A guard against a reader that hangs, not a timing: the durable
		// denials take tens of seconds on a loaded machine under -race.
		good.SetReadDeadline(time.Now().Add(5 * time.Minute))
		for seen < n {
			// No JSON decoding: the reader must keep up even under -race.
			_, data, err := good.ReadMessage()
			if err != nil {
				break
			}
			if strings.HasPrefix(string(data), `{"type":"denial"`) {
				seen++
			}
		}
		received <- seen
	}()
	for i := range n {
		if _, err := v.st.LogDenial(context.Background(), mediator.Denial{AgentID: "flood", Permission: "network.fetch",
			Code: mediator.CodeHostNotAllowed, Context: mediator.DenialContext{Reason: "flood", Details: details, URL: fmt.Sprintf("https://f.test/%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-received; got != n {
		t.Fatalf("the reading client got %d of %d denials", got, n)
	}
	waitUntil(t, 10*time.Second, func() bool { return v.srv.hub.count() == 1 })
}

func waitUntil(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("condition not met within %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRunInSessionContext runs a real agent over the websocket in sessions
// of each level. The agent POSTs to an allowed name that resolves to the
// canary on loopback: low refuses by level, medium needs a confirmation no
// one can give, high passes the policy and the address check stops it. The
// canary proves nothing reached it.
func TestRunInSessionContext(t *testing.T) {
	module, err := testwasm.Probe()
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer canary.Close()
	_, port, _ := net.SplitHostPort(canary.Listener.Addr().String())

	rt, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	v := newTestViewer(t, func(c *Config) {
		fetcher := netproxy.New(netproxy.Config{Resolver: testwasm.Resolver{"rebind.test": {netip.MustParseAddr("127.0.0.1")}}})
		policy := mediator.NewPolicy(c.App.Store(), mediator.PolicyOptions{})
		fetch, err := agentfetch.New(agentfetch.Config{Store: c.App.Store(), Fetcher: fetcher, Authorizer: policy,
			LogDenial: func(ctx context.Context, d mediator.Denial) { c.App.Store().LogDenial(ctx, d) }})
		if err != nil {
			t.Fatal(err)
		}
		c.Runtime, c.Fetch, c.Authorizer = rt, fetch, policy
	})
	sha, err := v.st.PutModule(context.Background(), module)
	if err != nil {
		t.Fatal(err)
	}
	prof := mediator.Profile{AgentID: "probe",
		Permissions:  mediator.Permissions{Required: mediator.KnownPermissions()},
		Capabilities: mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{"rebind.test"}}}
	if _, err := v.st.InstallAgent(context.Background(), prof, sha); err != nil {
		t.Fatal(err)
	}
	for _, level := range []string{"low", "medium", "high"} {
		v.api("PUT", "/api/sessions/s-"+level+"/settings", `{"settings":{"permissionLevel":"`+level+`"}}`, 200, nil)
	}
	c := v.browserWS()
	readWS(t, c, "hello", 5*time.Second)
	input := "print hello\npost http://rebind.test:" + port + "/"

	for _, tc := range []struct{ session, ask, want string }{
		{"s-low", "", "session_level"},
		{"s-medium", "", "confirmation_required"},
		{"s-high", "", "private_address"},
		{"s-high", "low", "session_level"}, // a run may lower its session's level
	} {
		t.Run(tc.session+"/"+tc.ask, func(t *testing.T) {
			runID := tc.session + tc.ask
			if err := c.WriteJSON(map[string]string{"type": "run", "runId": runID, "sessionId": tc.session, "agentId": "probe",
				"permissionLevel": tc.ask, "input": input}); err != nil {
				t.Fatal(err)
			}
			var sawOutput, sawDenial bool
			// The first run compiles the probe (a Go module): seconds, or a
			// minute under the race detector on a loaded machine. Compiling
			// has its own budget (two minutes); this is a guard, not a timing.
			c.SetReadDeadline(time.Now().Add(3 * time.Minute))
			for {
				var m struct {
					Type, RunID, SessionID string
					Text                   string
					Denial                 *mediator.Denial
					Result                 *wasmhost.Result
					Code, Error            string
				}
				var raw map[string]any
				if err := c.ReadJSON(&raw); err != nil {
					t.Fatal(err)
				}
				m.Type, _ = raw["type"].(string)
				if m.Type == "denial" && raw["runId"] == nil {
					continue // the live tail
				}
				if raw["runId"] != runID || raw["sessionId"] != tc.session {
					t.Fatalf("message of another run: %v", raw)
				}
				switch m.Type {
				case "output":
					sawOutput = sawOutput || strings.Contains(raw["text"].(string), "hello")
				case "denial":
					d := raw["denial"].(map[string]any)
					if d["code"] != tc.want {
						t.Fatalf("denial %v; want code %s", d, tc.want)
					}
					sawDenial = true
				case "result":
					if !sawOutput || !sawDenial {
						t.Fatalf("result before output (%v) and denial (%v): %v", sawOutput, sawDenial, raw)
					}
					return
				case "error":
					t.Fatalf("run failed: %v", raw)
				}
			}
		})
	}
	// The denials are in the log, tagged with their session.
	p, err := v.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "probe"})
	if err != nil || len(p.Denials) != 4 {
		t.Fatalf("logged denials: %d %v", len(p.Denials), err)
	}

	for _, tc := range []struct{ msg, code string }{
		{`{"type":"run","sessionId":"s-medium","agentId":"probe","permissionLevel":"high"}`, "session_level"},
		{`{"type":"run","sessionId":"s-medium","agentId":"probe","permissionLevel":"root"}`, "invalid_level"},
		{`{"type":"run","sessionId":"s-medium","agentId":"ghost"}`, "unknown_agent"},
		{`{"type":"run","sessionId":"ghost","agentId":"probe"}`, "unknown_session"},
		// Read exactly: a case variant of a member cannot raise the level,
		// nor can a second one, nor one the message does not have.
		{`{"type":"run","sessionId":"s-low","agentId":"probe","permissionLevel":"low","PERMISSION_LEVEL":"high"}`, "bad_request"},
		{`{"type":"run","sessionId":"s-low","agentId":"probe","permissionLevel":"low","permissionLevel":"high"}`, "bad_request"},
		{`{"type":"run","sessionId":"s-low","agentId":"probe","level":"high"}`, "bad_request"},
	} {
		c.WriteMessage(websocket.TextMessage, []byte(tc.msg))
		if m := readWS(t, c, "error", 10*time.Second); m["code"] != tc.code {
			t.Errorf("%s: %v; want %s", tc.msg, m, tc.code)
		}
	}
	// A run without a session starts a fresh one (medium), named in each
	// of its messages and removed when the run ends.
	if err := c.WriteJSON(map[string]string{"type": "run", "runId": "fresh", "agentId": "probe", "input": "print hello"}); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Minute)) // a guard: a first compile under -race on a loaded machine
	for {
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m["runId"] != "fresh" {
			continue
		}
		sid, _ := m["sessionId"].(string)
		if !strings.HasPrefix(sid, "run-") {
			t.Fatalf("fresh run's message %v", m)
		}
		if m["type"] == "result" {
			// The session was the run's alone (ephemeral): it is removed
			// when the run closes, just after its result is sent.
			testkit.Eventually(t, 10*time.Second, "the fresh session "+sid+" to go with its run", func() bool {
				_, err := v.st.SessionSettings(context.Background(), sid)
				return mediator.CodeOf(err) == mediator.CodeUnknownSession
			})
			break
		}
	}
	// A client cannot start runs without bound: past maxRunsPerClient at
	// once, a run is refused and the others go on (here to their timeout).
	prof.Capabilities.ExecutionTimeout = 1000
	if _, err := v.st.InstallAgent(context.Background(), prof, sha); err != nil {
		t.Fatal(err)
	}
	for i := range maxRunsPerClient + 1 {
		c.WriteJSON(map[string]string{"type": "run", "runId": fmt.Sprint("spin-", i), "sessionId": "s-high", "agentId": "probe", "input": "spin"})
	}
	var refused, timedOut int
	c.SetReadDeadline(time.Now().Add(3 * time.Minute)) // a guard: a first compile under -race on a loaded machine
	for refused+timedOut < maxRunsPerClient+1 {
		var m struct {
			Type, Code string
			Result     *wasmhost.Result
		}
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("after %d refused, %d timed out: %v", refused, timedOut, err)
		}
		switch {
		case m.Type == "error" && m.Code == string(mediator.CodeTooLarge):
			refused++
		case m.Type == "result" && m.Result.Code == mediator.CodeTimeout:
			timedOut++
		case m.Type == "error" || m.Type == "result":
			t.Fatalf("unexpected %+v", m)
		}
	}
	if refused != 1 || timedOut != maxRunsPerClient {
		t.Fatalf("%d refused, %d ran; want 1 and %d", refused, timedOut, maxRunsPerClient)
	}
	if hits.Load() != 0 {
		t.Fatalf("the canary was hit %d times", hits.Load())
	}
}
