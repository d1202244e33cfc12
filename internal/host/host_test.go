package host

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

const testOrigin = "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"

type harness struct {
	t      *testing.T
	st     *store.Store
	client *nmclient.Client
	in     *io.PipeWriter // host's stdin
	done   chan error     // Serve's result
}

func newHarness(t *testing.T, allowed bool, with ...func(*Options)) *harness {
	t.Helper()
	return newHarnessWith(t, allowed, store.Options{}, with...)
}

// newHarnessOn is another host process over h's store, with runtime rt:
// the browser starts one per connection.
func newHarnessOn(t *testing.T, h *harness, rt *wasmhost.Runtime) *harness {
	t.Helper()
	return newHarnessStore(t, true, h.st, func(o *Options) { o.Runtime = rt })
}

// newHarnessWith is newHarness over a store opened with so.
func newHarnessWith(t *testing.T, allowed bool, so store.Options, with ...func(*Options)) *harness {
	t.Helper()
	st, err := store.Open(storetest.Dir(t), so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newHarnessStore(t, allowed, st, with...)
}

// newHarnessStore is a host serving over st.
func newHarnessStore(t *testing.T, allowed bool, st *store.Store, with ...func(*Options)) *harness {
	t.Helper()
	fetcher := netproxy.New(netproxy.Config{Resolver: testwasm.Resolver{
		"rebind.test": {netip.MustParseAddr("127.0.0.1")},
		"intra.test":  {netip.MustParseAddr("10.1.2.3")},
	}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &harness{t: t, st: st, in: inW, done: make(chan error, 1)}
	go func() {
		opts := Options{
			App: testApp(t, st, fetcher, mediator.AdminPolicy{}), Runtime: sharedRuntime(), Caller: Caller{Origin: testOrigin, Browser: "chromium"},
			OriginAllowed: allowed, Version: "test",
		}
		for _, f := range with {
			f(&opts)
		}
		err := Serve(context.Background(), inR, outW, opts)
		outW.Close()
		h.done <- err
	}()
	h.client = nmclient.New(outR, inW, inW)
	t.Cleanup(func() { inW.Close() })
	return h
}

func (h *harness) call(typ string, params any) nmclient.Reply {
	h.t.Helper()
	// A guard against a hang, not a timing: a run's first compile of a Go
	// module takes a minute under the race detector on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := h.client.Call(ctx, typ, params)
	if err != nil {
		h.t.Fatalf("%s: %v", typ, err)
	}
	return r
}

func (h *harness) mustOK(typ string, params, out any) {
	h.t.Helper()
	r := h.call(typ, params)
	if err := r.Decode(out); err != nil {
		h.t.Fatalf("%s: %v", typ, err)
	}
}

func (h *harness) wantCode(r nmclient.Reply, code mediator.Code) {
	h.t.Helper()
	if r.Success || r.Code != string(code) {
		h.t.Fatalf("want code %s, got success=%v code=%q error=%q", code, r.Success, r.Code, r.Error)
	}
}

// canary is the shared loopback canary (testkit.Canary): denied requests
// must leave its count at zero.
type canary = testkit.Canary

func newCanary(t *testing.T) *canary { return testkit.NewCanary(t, nil) }

func hostPort(u string) string { return strings.TrimPrefix(u, "http://") }

func (h *harness) install(agent string, perms []string, network bool, hosts ...string) mediator.AgentRecord {
	h.t.Helper()
	var rec mediator.AgentRecord
	h.mustOK("install-agent", map[string]any{"profile": map[string]any{
		"agentId":      agent,
		"permissions":  map[string]any{"required": perms},
		"capabilities": map[string]any{"networkAccess": network, "allowedHosts": hosts, "executionTimeout": 3000},
	}}, &rec)
	return rec
}

func frameOf(b []byte) []byte {
	out := make([]byte, 4+len(b))
	binary.NativeEndian.PutUint32(out, uint32(len(b)))
	copy(out[4:], b)
	return out
}

func TestHostileFramesGetErrorRepliesAndServingGoesOn(t *testing.T) {
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	cases := []struct {
		name string
		raw  []byte // written as is (already framed)
		code mediator.Code
		id   string // expected id in the reply
	}{
		{"zero-length frame", frameOf(nil), mediator.CodeBadRequest, "null"},
		{"invalid JSON", frameOf([]byte(`{"id":1,"type":`)), mediator.CodeBadRequest, "null"},
		{"JSON array, not object", frameOf([]byte(`[1,2,3]`)), mediator.CodeBadRequest, "null"},
		{"JSON string, not object", frameOf([]byte(`"hello"`)), mediator.CodeBadRequest, "null"},
		{"deeply nested JSON", frameOf([]byte(`{"id":1,"type":"hello","x":` + deep + `}`)), mediator.CodeBadRequest, "null"},
		{"invalid UTF-8", frameOf([]byte("{\"id\":1,\"type\":\"hel\xfflo\"}")), mediator.CodeBadRequest, "null"},
		{"unknown type", frameOf([]byte(`{"id":"u1","type":"format-disk"}`)), mediator.CodeUnknownType, `"u1"`},
		{"missing id", frameOf([]byte(`{"type":"hello"}`)), mediator.CodeBadRequest, "null"},
		{"id is an object", frameOf([]byte(`{"id":{"a":1},"type":"hello"}`)), mediator.CodeBadRequest, "null"},
		{"id too long", frameOf([]byte(`{"id":"` + strings.Repeat("x", 200) + `","type":"hello"}`)), mediator.CodeBadRequest, "null"},
		{"type not a string", frameOf([]byte(`{"id":5,"type":7}`)), mediator.CodeBadRequest, "5"},
		{"params of wrong type", frameOf([]byte(`{"id":6,"type":"grant","agentId":["x"]}`)), mediator.CodeBadRequest, "6"},
		{"over-size frame", oversizeFrame(), mediator.CodeTooLarge, "null"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			go h.in.Write(tc.raw)
			select {
			case r := <-h.client.Unmatched:
				if r.Success || r.Code != string(tc.code) {
					t.Fatalf("want %s, got success=%v code=%q (%s)", tc.code, r.Success, r.Code, r.Error)
				}
				if string(r.ID) != tc.id {
					t.Fatalf("want id %s, got %s", tc.id, r.ID)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no reply to a hostile frame")
			}
			// The host keeps serving valid frames after a bad one.
			if r := h.call("hello", nil); !r.Success {
				t.Fatalf("hello after bad frame: %+v", r)
			}
		})
	}
}

// oversizeFrame declares one byte more than the host accepts and carries it
// all, so the host must skip it without holding it.
func oversizeFrame() []byte {
	n := 64<<20 + 1
	out := make([]byte, 4+n)
	binary.NativeEndian.PutUint32(out, uint32(n))
	return out
}

func TestTruncatedInputEndsCleanly(t *testing.T) {
	cases := []struct {
		name string
		raw  []byte
	}{
		{"empty input", nil},
		{"half a header", []byte{1, 0}},
		{"length 0xFFFFFFFF then EOF", []byte{0xff, 0xff, 0xff, 0xff, '{'}},
		{"body shorter than its length", frameOf([]byte(`{"id":1,"type":"hello"}`))[:10]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, true)
			h.in.Write(tc.raw)
			h.in.Close()
			select {
			case err := <-h.done:
				if err != nil {
					t.Fatalf("Serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("host did not exit on truncated input")
			}
		})
	}
}

func TestUnknownOriginGetsOnlyRefusals(t *testing.T) {
	h := newHarness(t, false)
	for _, typ := range []string{"hello", "list-agents", "install-agent", "network-fetch", "no-such-type"} {
		t.Run(typ, func(t *testing.T) {
			r := h.call(typ, map[string]any{"agentId": "a1", "profile": map[string]any{"agentId": "a1"}})
			h.wantCode(r, mediator.CodeOriginNotAllowed)
			if len(r.Data) != 0 {
				t.Fatalf("refusal carried data: %s", r.Data)
			}
		})
	}
	if agents, _ := h.st.ListAgents(context.Background()); len(agents) != 0 {
		t.Fatalf("an unknown origin installed %d agents", len(agents))
	}
	page, err := h.st.ListDenials(context.Background(), store.DenialFilter{Code: mediator.CodeOriginNotAllowed})
	if err != nil || len(page.Denials) != 5 {
		t.Fatalf("want 5 origin denials logged, got %d (%v)", len(page.Denials), err)
	}
}

func TestFetchDecisions(t *testing.T) {
	h := newHarness(t, true)
	can := newCanary(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello agent") })
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte{0xff, 0x00, 0xfe}) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	web := httptest.NewServer(mux)
	defer web.Close()
	rebindURL := "http://rebind.test:" + web.URL[strings.LastIndex(web.URL, ":")+1:] + "/ok"

	h.install("reader", []string{"network.fetch"}, true, hostPort(web.URL), "rebind.test", "intra.test")
	h.install("offline", []string{"network.fetch"}, false, hostPort(web.URL))
	h.install("nogrant", []string{"console.log"}, true, hostPort(web.URL))

	t.Run("allowed fetch returns the body", func(t *testing.T) {
		var data agentfetch.Reply
		h.mustOK("network-fetch", map[string]any{"agentId": "reader", "url": web.URL + "/ok"}, &data)
		if data.Status != 200 || data.Body != "hello agent" || data.BodyEncoding != "text" || data.FinalURL != web.URL+"/ok" {
			t.Fatalf("unexpected reply %+v", data)
		}
	})
	t.Run("binary body comes as base64", func(t *testing.T) {
		var data agentfetch.Reply
		h.mustOK("network-fetch", map[string]any{"agentId": "reader", "url": web.URL + "/bin"}, &data)
		if data.BodyEncoding != "base64" || data.Body != base64.StdEncoding.EncodeToString([]byte{0xff, 0, 0xfe}) {
			t.Fatalf("unexpected body %q (%s)", data.Body, data.BodyEncoding)
		}
	})

	denials := []struct {
		name  string
		agent string
		url   string
		code  mediator.Code
	}{
		{"host not in allowedHosts", "reader", can.URL + "/x", mediator.CodeHostNotAllowed},
		{"redirect to a disallowed host", "reader", web.URL + "/redirect?to=" + can.URL + "/r", mediator.CodeHostNotAllowed},
		{"allowed name resolving to loopback", "reader", rebindURL, mediator.CodePrivateAddress},
		{"allowed name resolving to private", "reader", "http://intra.test/", mediator.CodePrivateAddress},
		{"decimal IPv4", "reader", "http://2130706433/", mediator.CodeNonCanonicalHost},
		{"userinfo trick", "reader", "http://" + hostPort(web.URL) + "@evil.test/", mediator.CodeInvalidURL},
		{"file scheme", "reader", "file:///etc/passwd", mediator.CodeSchemeNotAllowed},
		{"networkAccess false", "offline", web.URL + "/ok", mediator.CodeNetworkDisabled},
		{"network.fetch not granted", "nogrant", web.URL + "/ok", mediator.CodePermissionNotGranted},
		{"unknown agent", "ghost", web.URL + "/ok", mediator.CodeUnknownAgent},
		{"invalid agent id", "../etc", web.URL + "/ok", mediator.CodeUnknownAgent},
	}
	for _, tc := range denials {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now().UnixMilli()
			r := h.call("network-fetch", map[string]any{"agentId": tc.agent, "url": tc.url})
			h.wantCode(r, tc.code)
			page, err := h.st.ListDenials(context.Background(), store.DenialFilter{Limit: 1})
			if err != nil || len(page.Denials) != 1 {
				t.Fatalf("no denial logged: %v", err)
			}
			d := page.Denials[0]
			if d.AgentID != tc.agent || d.Permission != "network.fetch" || d.Code != tc.code || d.Timestamp < before || d.Context.Reason == "" || d.Context.URL == "" {
				t.Fatalf("denial record incomplete: %+v", d)
			}
		})
	}
	if n := can.Hits.Load(); n != 0 {
		t.Fatalf("canary was contacted %d times", n)
	}
}

func TestRevokeTakesEffectOnTheNextCall(t *testing.T) {
	h := newHarness(t, true)
	web := newCanary(t)
	h.install("a1", []string{"network.fetch"}, true, hostPort(web.URL))
	if r := h.call("network-fetch", map[string]any{"agentId": "a1", "url": web.URL}); !r.Success {
		t.Fatalf("fetch before revoke: %+v", r)
	}
	h.mustOK("revoke", map[string]any{"agentId": "a1", "permission": "network.fetch"}, nil)
	before := web.Hits.Load()
	h.wantCode(h.call("network-fetch", map[string]any{"agentId": "a1", "url": web.URL}), mediator.CodeRevokedByUser)
	if web.Hits.Load() != before {
		t.Fatal("a revoked agent reached the server")
	}
	h.mustOK("grant", map[string]any{"agentId": "a1", "permission": "network.fetch"}, nil)
	if r := h.call("network-fetch", map[string]any{"agentId": "a1", "url": web.URL}); !r.Success {
		t.Fatalf("fetch after grant: %+v", r)
	}
}

func TestInstallAgentRefusals(t *testing.T) {
	h := newHarness(t, true)
	good := func(mut func(p map[string]any)) map[string]any {
		p := map[string]any{
			"agentId":      "a1",
			"permissions":  map[string]any{"required": []string{"network.fetch"}},
			"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{"example.com"}},
		}
		if mut != nil {
			mut(p)
		}
		return p
	}
	caps := func(k string, v any) func(map[string]any) {
		return func(p map[string]any) { p["capabilities"].(map[string]any)[k] = v }
	}
	wasm := base64.StdEncoding.EncodeToString([]byte("\x00asm\x01\x00\x00\x00"))
	cases := []struct {
		name   string
		params map[string]any
		code   mediator.Code
	}{
		{"no profile", map[string]any{}, mediator.CodeBadRequest},
		{"unknown permission", map[string]any{"profile": good(func(p map[string]any) {
			p["permissions"] = map[string]any{"required": []string{"run"}}
		})}, mediator.CodeUnknownPermission},
		{"unknown field", map[string]any{"profile": good(func(p map[string]any) { p["allowedhosts"] = []string{"x.com"} })}, mediator.CodeInvalidProfile},
		{"bare star host", map[string]any{"profile": good(caps("allowedHosts", []string{"*"}))}, mediator.CodeInvalidAllowedHost},
		{"public suffix host", map[string]any{"profile": good(caps("allowedHosts", []string{"co.uk"}))}, mediator.CodeInvalidAllowedHost},
		{"non-canonical host", map[string]any{"profile": good(caps("allowedHosts", []string{"Example.COM."}))}, mediator.CodeInvalidAllowedHost},
		{"module not base64", map[string]any{"profile": good(nil), "module": "!!!"}, mediator.CodeBadRequest},
		{"module not wasm", map[string]any{"profile": good(nil), "module": base64.StdEncoding.EncodeToString([]byte("#!/bin/sh\n"))}, mediator.CodeBadRequest},
		{"module hash pin mismatch", map[string]any{"profile": good(func(p map[string]any) {
			p["moduleSha256"] = strings.Repeat("0", 64)
		}), "module": wasm}, mediator.CodeHashMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.wantCode(h.call("install-agent", tc.params), tc.code)
		})
	}
	if agents, _ := h.st.ListAgents(context.Background()); len(agents) != 0 {
		t.Fatalf("refused installs left %d agents", len(agents))
	}
}

func TestLargeReplyTravelsInChunks(t *testing.T) {
	h := newHarness(t, true)
	body := bytes.Repeat([]byte("abcdefghijklmnop"), 3<<20/16)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer web.Close()
	h.install("big", []string{"network.fetch"}, true, hostPort(web.URL))
	r := h.call("network-fetch", map[string]any{"agentId": "big", "url": web.URL})
	var data agentfetch.Reply
	if err := r.Decode(&data); err != nil {
		t.Fatal(err)
	}
	if data.Body != string(body) {
		t.Fatalf("body of %d bytes arrived as %d bytes", len(body), len(data.Body))
	}
	// 3 MiB of JSON is 4 MiB of base64: five frames of at most 1 MiB, as
	// docs/protocol.md tells the extension's authors to expect.
	if r.Frames != 5 {
		t.Fatalf("a 3 MiB reply came in %d frames; want 5 of at most 1 MiB", r.Frames)
	}
}

func TestSlowRequestDoesNotBlockOthers(t *testing.T) {
	h := newHarness(t, true)
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "late")
	}))
	defer slow.Close()
	defer close(release)
	h.install("slow", []string{"network.fetch"}, true, hostPort(slow.URL))
	slowDone := make(chan nmclient.Reply, 1)
	go func() {
		r, _ := h.client.Call(context.Background(), "network-fetch", map[string]any{"agentId": "slow", "url": slow.URL})
		slowDone <- r
	}()
	<-arrived // the fetch is at the server and will hang there
	for i := range 5 {
		if r := h.call("hello", nil); !r.Success {
			t.Fatalf("hello %d while a fetch hangs: %+v", i, r)
		}
	}
	select {
	case <-slowDone:
		t.Fatal("the slow fetch finished before it was released")
	default:
	}
}

func TestFetchTimeoutComesFromTheProfile(t *testing.T) {
	h := newHarness(t, true)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	h.mustOK("install-agent", map[string]any{"profile": map[string]any{
		"agentId":      "impatient",
		"permissions":  map[string]any{"required": []string{"network.fetch"}},
		"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{hostPort(hang.URL)}, "executionTimeout": 200},
	}}, nil)
	start := time.Now()
	h.wantCode(h.call("network-fetch", map[string]any{"agentId": "impatient", "url": hang.URL}), mediator.CodeTimeout)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("a 200 ms timeout took %v", el)
	}
}

func TestAgentLifecycleMessages(t *testing.T) {
	h := newHarness(t, true)
	h.install("life", []string{"console.log", "network.fetch"}, true, "example.com")
	var info mediator.AgentRecord
	h.mustOK("getAgentInfo", map[string]any{"agentId": "life"}, &info)
	if len(info.Grants) != 2 || info.Profile.Capabilities.AllowedHosts[0] != "example.com" {
		t.Fatalf("getAgentInfo: %+v", info)
	}
	var list struct{ Agents []mediator.AgentRecord }
	h.mustOK("list-agents", nil, &list)
	if len(list.Agents) != 1 {
		t.Fatalf("list-agents: %d agents", len(list.Agents))
	}
	h.wantCode(h.call("grant", map[string]any{"agentId": "life", "permission": "ffi"}), mediator.CodeUnknownPermission)
	h.wantCode(h.call("grant", map[string]any{"agentId": "nobody", "permission": "console.log"}), mediator.CodeUnknownAgent)
	h.mustOK("uninstall-agent", map[string]any{"agentId": "life"}, nil)
	h.wantCode(h.call("getAgentInfo", map[string]any{"agentId": "life"}), mediator.CodeUnknownAgent)
	h.wantCode(h.call("uninstall-agent", map[string]any{"agentId": "life"}), mediator.CodeUnknownAgent)
}

func TestLogDenialFromTheExtension(t *testing.T) {
	h := newHarness(t, true)
	var d mediator.Denial
	h.mustOK("log-denial", map[string]any{
		"agentId": "a1", "permission": "page.write", "code": "permission_not_granted",
		"context": map[string]any{"reason": "domAccess is read-only", "layer": "host"},
	}, &d)
	if d.ID == 0 || d.Context.Layer != "extension" || d.Context.Origin != testOrigin {
		t.Fatalf("extension denial recorded as %+v", d)
	}
	h.wantCode(h.call("log-denial", map[string]any{"agentId": "a1", "permission": "page.write", "code": "allowed"}), mediator.CodeBadRequest)
	h.wantCode(h.call("log-denial", map[string]any{"agentId": "a1", "permission": "page.write", "code": "DROP TABLE"}), mediator.CodeBadRequest)
}

func TestListDenialsFiltersAndPages(t *testing.T) {
	h := newHarness(t, true)
	ctx := context.Background()
	for i := range 25 {
		agent := fmt.Sprintf("agent-%d", i%2)
		if _, err := h.st.LogDenial(ctx, mediator.Denial{AgentID: agent, Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
			Context: mediator.DenialContext{Reason: "test", URL: fmt.Sprintf("http://h%d.test/", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int64]bool{}
	var cursor int64
	for pages := 0; ; pages++ {
		var page store.DenialPage
		h.mustOK("list-denials", map[string]any{"agentId": "agent-1", "limit": 5, "beforeId": cursor}, &page)
		for _, d := range page.Denials {
			if d.AgentID != "agent-1" || seen[d.ID] {
				t.Fatalf("bad or repeated record %+v", d)
			}
			seen[d.ID] = true
		}
		if page.NextBeforeID == 0 {
			break
		}
		cursor = page.NextBeforeID
		if pages > 10 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != 12 {
		t.Fatalf("want 12 records of agent-1, got %d", len(seen))
	}
	var raw json.RawMessage
	h.mustOK("list-denials", map[string]any{"limit": 100000}, &raw)
}
