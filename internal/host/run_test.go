package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

// sharedRuntime is one WebAssembly runtime for every test of the package,
// as one host process has one.
var sharedRuntime = sync.OnceValue(func() *wasmhost.Runtime {
	r, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: testwasm.CompileCache()})
	if err != nil {
		panic(err)
	}
	return r
})

func TestRunAgentStreamsAndAnswersBrowserCalls(t *testing.T) {
	module, err := testwasm.Probe()
	if err != nil {
		t.Fatal(err)
	}
	var canaryHits atomic.Int64
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { canaryHits.Add(1) }))
	defer canary.Close()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") }))
	defer web.Close()

	h := newHarness(t, true)
	var seen []string
	var mu sync.Mutex
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		var m struct {
			Call    string
			Context struct{ TabID int }
		}
		json.Unmarshal(msg, &m)
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s tab=%d", typ, m.Call, m.Context.TabID))
		mu.Unlock()
		if typ == "prompt" {
			return map[string]any{"answer": "allow-once"}
		}
		return map[string]any{"success": true, "data": map[string]any{"text": "Tab text", "url": "http://t.test/", "title": "T"}}
	})
	h.mustOK("install-agent", map[string]any{
		"profile": map[string]any{
			"agentId":      "probe",
			"permissions":  map[string]any{"required": []string{"console.log", "page.read", "page.write", "clipboard.read", "clipboard.write", "network.fetch"}},
			"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{hostPort(web.URL)}, "domAccess": "full", "executionTimeout": 20000},
		},
		"module": base64.StdEncoding.EncodeToString(module),
	}, nil)

	var events []nmclient.Event
	ctx, cancel := context.WithTimeout(context.Background(), 60_000_000_000)
	defer cancel()
	r, err := h.client.CallWithEvents(ctx, "run-agent", map[string]any{
		"agentId": "probe", "context": map[string]any{"tabId": 9},
		"input": strings.Join([]string{"print start", "text", "fetch " + web.URL, "fetch " + canary.URL, "clipw hi"}, "\n"),
	}, func(e nmclient.Event) { events = append(events, e) })
	if err != nil {
		t.Fatal(err)
	}
	var res wasmhost.Result
	if err := r.Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "ok" || !strings.Contains(res.Output, `text {"text":"Tab text"`) || !strings.Contains(res.Output, "fetched 200 fine") {
		t.Fatalf("result %+v", res)
	}
	if canaryHits.Load() != 0 {
		t.Fatal("the canary was reached")
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Event)
	}
	if !strings.Contains(strings.Join(kinds, ","), "denial") || kinds[0] != "output" {
		t.Fatalf("events %v", kinds)
	}
	mu.Lock()
	defer mu.Unlock()
	// The page read needs no prompt; the clipboard write asks first.
	want := "browser-call page.read.getPageText tab=9,prompt  tab=0,browser-call clipboard.write tab=9"
	if strings.Join(seen, ",") != want {
		t.Fatalf("extension saw %q\nwant %q", strings.Join(seen, ","), want)
	}
	page, _ := h.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "probe"})
	if len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodeHostNotAllowed {
		t.Fatalf("denials %+v", page.Denials)
	}
}

func TestRunAgentRefusals(t *testing.T) {
	h := newHarness(t, true)
	h.install("nomodule", []string{"console.log"}, false)
	for _, c := range []struct {
		name   string
		params map[string]any
		want   mediator.Code
	}{
		{"unknown agent", map[string]any{"agentId": "ghost"}, mediator.CodeUnknownAgent},
		{"bad agent id", map[string]any{"agentId": "../x"}, mediator.CodeInvalidProfile},
		{"no module", map[string]any{"agentId": "nomodule"}, mediator.CodeBadRequest},
		{"bad level", map[string]any{"agentId": "nomodule", "sessionLevel": "root"}, mediator.CodeInvalidLevel},
		{"context not an object", map[string]any{"agentId": "nomodule", "context": []int{1}}, mediator.CodeBadRequest},
		// A run's origin keys prompts and remembered answers: only a
		// scheme://host[:port] origin can be one.
		{"opaque origin", map[string]any{"agentId": "nomodule", "origin": "null"}, mediator.CodeBadRequest},
		{"origin with a path", map[string]any{"agentId": "nomodule", "origin": "https://a.example/x"}, mediator.CodeBadRequest},
		{"file origin", map[string]any{"agentId": "nomodule", "origin": "file://"}, mediator.CodeBadRequest},
		{"origin with userinfo", map[string]any{"agentId": "nomodule", "origin": "https://u@a.example"}, mediator.CodeBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) { h.wantCode(h.call("run-agent", c.params), c.want) })
	}
}

// A run is bound to one document of one origin: every browser-call carries
// the extension's context (tab and document id) with "origin" set by the
// host to the run's origin, the one the prompt shows and remembered answers
// are keyed to, whatever origin the extension's context claimed. The page
// refuses a call for another origin with page_changed, and that code
// reaches the agent.
func TestRunAgentBindsBrowserCallsToTheRunsOrigin(t *testing.T) {
	module, err := testwasm.Probe()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, true)
	type seenCall struct {
		Type    string
		Call    string
		Context map[string]any
		Target  struct{ Origin string }
	}
	var seen []seenCall
	var mu sync.Mutex
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		var m seenCall
		json.Unmarshal(msg, &m)
		m.Type = typ
		mu.Lock()
		seen = append(seen, m)
		mu.Unlock()
		if typ == "prompt" {
			return map[string]any{"answer": "allow-once"}
		}
		if m.Call == "page.write.setElementText" {
			return map[string]any{"success": false, "code": "page_changed", "error": "the page this run is bound to is gone"}
		}
		return map[string]any{"success": true, "data": map[string]any{"found": true, "text": "A"}}
	})
	h.mustOK("install-agent", map[string]any{
		"profile": map[string]any{
			"agentId": "bound",
			// The probe imports every call it has a command for.
			"permissions": map[string]any{"required": []string{"console.log", "page.read", "page.write", "clipboard.read", "clipboard.write", "network.fetch"}},
			// Compiling counts against the timeout, and compiling the probe
			// under -race on a busy machine can take most of a minute.
			"capabilities": map[string]any{"domAccess": "full", "executionTimeout": 120000},
		},
		"module": base64.StdEncoding.EncodeToString(module),
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	r, err := h.client.CallWithEvents(ctx, "run-agent", map[string]any{
		"agentId": "bound", "origin": "https://a.example",
		"context": map[string]any{"tabId": 7, "documentId": "DOC-A", "origin": "https://b.example"},
		"input":   "select h1\nwrite h1 owned",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var res wasmhost.Result
	if err := r.Decode(&res); err != nil {
		t.Fatal(err)
	}
	if res.Status != "ok" || !strings.Contains(res.Output, "write: error") || !strings.Contains(res.Output, string(mediator.CodePageChanged)) {
		t.Fatalf("result %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for _, c := range seen {
		kinds = append(kinds, c.Type+" "+c.Call)
		switch c.Type {
		case "browser-call":
			if c.Context["origin"] != "https://a.example" || c.Context["documentId"] != "DOC-A" || c.Context["tabId"] != float64(7) {
				t.Errorf("%s carried context %v; want the run's origin, document and tab", c.Call, c.Context)
			}
		case "prompt":
			if c.Target.Origin != "https://a.example" {
				t.Errorf("the prompt showed origin %q; want the bound one", c.Target.Origin)
			}
		}
	}
	if want := "browser-call page.read.querySelector,prompt ,browser-call page.write.setElementText"; strings.Join(kinds, ",") != want {
		t.Fatalf("extension saw %q; want %q", strings.Join(kinds, ","), want)
	}
}

// Without an origin the run is bound to no page: an "origin" in the
// extension's context must not stand in for one.
func TestRunAgentContextOriginIsTheHosts(t *testing.T) {
	for _, c := range []struct{ raw, origin, want string }{
		{`{"tabId":1,"origin":"https://b.example"}`, "", `{"tabId":1}`},
		{`{"tabId":1,"documentId":"D"}`, "https://a.example", `{"documentId":"D","origin":"https://a.example","tabId":1}`},
		{``, "https://a.example", `{"origin":"https://a.example"}`},
		{``, "", ``},
	} {
		got, err := bindContext(json.RawMessage(c.raw), c.origin)
		if err != nil || string(got) != c.want {
			t.Errorf("bindContext(%s, %q) = %s, %v; want %s", c.raw, c.origin, got, err, c.want)
		}
	}
}
