package wasmhost

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
)

// probeWasm is testdata/probe built for wasip1 once per test binary.
var probeWasm []byte

func TestMain(m *testing.M) {
	var err error
	if probeWasm, err = testwasm.Probe(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// sharedRuntime compiles the probe once for all tests that use default limits.
var sharedRuntime = sync.OnceValue(func() *Runtime {
	r, err := New(context.Background(), Config{CacheDir: testwasm.CompileCache()})
	if err != nil {
		panic(err)
	}
	return r
})

// fakeBrowser answers browser calls like the extension would, and records them.
type fakeBrowser struct {
	mu    sync.Mutex
	calls []string
}

func (b *fakeBrowser) Call(_ context.Context, call string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.calls = append(b.calls, call)
	b.mu.Unlock()
	switch call {
	case mediator.OpPageGetPageText:
		return json.RawMessage(`{"text":"Hello page","url":"http://page.test/","title":"T"}`), nil
	case mediator.OpPageQuerySelector:
		return json.RawMessage(`{"found":true,"text":"Heading","tag":"H1"}`), nil
	case mediator.OpClipboardRead:
		return json.RawMessage(`{"text":"copied"}`), nil
	}
	return json.RawMessage(`{}`), nil
}

func (b *fakeBrowser) called() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...)
}

// allowAll answers every prompt with allow-once.
type allowAll struct{}

func (allowAll) Prompt(context.Context, mediator.PromptRequest) (mediator.Answer, error) {
	return mediator.AnswerAllowOnce, nil
}

type fixture struct {
	st      *store.Store
	policy  *mediator.Policy
	fetch   *agentfetch.Service
	browser *fakeBrowser
	events  []Event
	mu      sync.Mutex
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	policy := mediator.NewPolicy(st, mediator.PolicyOptions{Prompter: allowAll{}})
	fs, err := agentfetch.New(agentfetch.Config{Store: st, Fetcher: netproxy.New(netproxy.Config{}), Authorizer: policy})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, policy: policy, fetch: fs, browser: &fakeBrowser{}}
}

func (f *fixture) install(t testing.TB, id string, perms []mediator.Permission, c mediator.Capabilities) mediator.AgentRecord {
	t.Helper()
	p := mediator.Profile{AgentID: id, Permissions: mediator.Permissions{Required: perms}, Capabilities: c}
	if err := p.Normalize(); err != nil {
		t.Fatal(err)
	}
	rec, err := f.st.InstallAgent(context.Background(), p, "")
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func (f *fixture) spec(rec mediator.AgentRecord, module []byte, input string) RunSpec {
	return RunSpec{
		Agent: rec, Module: module, Input: []byte(input),
		Authorizer: f.policy, Browser: f.browser,
		Fetch: func(ctx context.Context, req netproxy.Request) (*netproxy.Response, error) {
			return f.fetch.Fetch(ctx, agentfetch.Request{AgentID: rec.Profile.AgentID, Request: req})
		},
		LogDenial: func(ctx context.Context, d mediator.Denial) { f.st.LogDenial(ctx, d) },
		Events: func(e Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		},
	}
}

var probePerms = []mediator.Permission{mediator.PermConsoleLog, mediator.PermPageRead, mediator.PermPageWrite,
	mediator.PermClipboardRead, mediator.PermClipboardWrite, mediator.PermNetworkFetch}

func TestProbeRunsUnderMediation(t *testing.T) {
	var allowedHits, canaryHits atomic.Int64
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowedHits.Add(1)
		io.WriteString(w, "pong")
	}))
	defer allowed.Close()
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { canaryHits.Add(1) }))
	defer canary.Close()

	f := newFixture(t)
	rec := f.install(t, "probe", probePerms, mediator.Capabilities{NetworkAccess: true, DOMAccess: mediator.DOMFull,
		AllowedHosts: []string{strings.TrimPrefix(allowed.URL, "http://")}})
	input := strings.Join([]string{
		"print hi", "log hello", "version", "fetch " + allowed.URL, "fetch " + canary.URL, "fetch http://2130706433/",
		"text", "select h1", "clipw abc", "clipr",
	}, "\n")
	res, err := sharedRuntime().Run(context.Background(), f.spec(rec, probeWasm, input))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "ok" {
		t.Fatalf("status %s: %s\n%s", res.Status, res.Error, res.Output)
	}
	for _, want := range []string{"hi\n", "hello\n", "abi 1\n", "fetched 200 pong", "fetch: error host_not_allowed",
		"fetch: error non_canonical_host", `text {"text":"Hello page"`, `select {"found":true`, `clipboard "copied"`} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if canaryHits.Load() != 0 || allowedHits.Load() != 1 {
		t.Fatalf("hits: allowed %d canary %d", allowedHits.Load(), canaryHits.Load())
	}
	if len(res.Denials) != 2 || res.Denials[0].Code != mediator.CodeHostNotAllowed {
		t.Fatalf("denials %+v", res.Denials)
	}
	stored, _ := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "probe"})
	if len(stored.Denials) != 2 {
		t.Fatalf("denial log has %d records; want 2", len(stored.Denials))
	}
	if got := f.browser.called(); strings.Join(got, ",") != "page.read.getPageText,page.read.querySelector,clipboard.write,clipboard.read" {
		t.Fatalf("browser calls %v", got)
	}
	kinds := map[string]int{}
	for _, e := range f.events {
		kinds[e.Kind]++
	}
	if kinds["output"] == 0 || kinds["denial"] != 2 {
		t.Fatalf("events %v", kinds)
	}
}

func TestPolicyDecidesEveryCall(t *testing.T) {
	f := newFixture(t)
	// page.write granted, but the profile only lets it read the DOM.
	rec := f.install(t, "reader", probePerms, mediator.Capabilities{DOMAccess: mediator.DOMReadOnly})
	res, err := sharedRuntime().Run(context.Background(), f.spec(rec, probeWasm, "write h1 pwned\nfetch http://example.com/\nselect h1"))
	if err != nil || res.Status != "ok" {
		t.Fatalf("%v %+v", err, res)
	}
	for _, want := range []string{"write: error permission_not_granted", "fetch: error network_disabled", "select {"} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if got := f.browser.called(); len(got) != 1 || got[0] != mediator.OpPageQuerySelector {
		t.Fatalf("the browser saw %v; the denied write must never reach it", got)
	}
	// A low-level session may not even read the clipboard, granted or not.
	spec := f.spec(rec, probeWasm, "clipr")
	spec.SessionLevel = mediator.LevelLow
	res, _ = sharedRuntime().Run(context.Background(), spec)
	if !strings.Contains(res.Output, "clipr: error session_level") {
		t.Fatalf("low session:\n%s", res.Output)
	}
}

func TestNoBrowserAttached(t *testing.T) {
	f := newFixture(t)
	rec := f.install(t, "cli", probePerms, mediator.Capabilities{DOMAccess: mediator.DOMFull})
	spec := f.spec(rec, probeWasm, "text\nclipw x")
	spec.Browser = nil
	res, _ := sharedRuntime().Run(context.Background(), spec)
	if strings.Count(res.Output, "error no_browser") != 2 {
		t.Fatalf("output:\n%s", res.Output)
	}
}

// TestLinkTimeDeny feeds modules whose imports the grants do not cover.
// Each is refused before instantiation with import_not_granted, naming the
// import, and recorded as a denial.
func TestLinkTimeDeny(t *testing.T) {
	i32 := []byte{0x7f}
	cases := []struct {
		name   string
		module []byte
		perms  []mediator.Permission
		want   string // the import named
	}{
		{"env.system", wmodule{imports: []wimport{{module: "env", name: "system", params: i32, results: i32}}}.bytes(), nil, "env.system"},
		{"wasi path_symlink", wmodule{imports: []wimport{{module: wasiModule, name: "path_symlink", params: []byte{0x7f, 0x7f, 0x7f, 0x7f, 0x7f}, results: i32}}}.bytes(), nil, "wasi_snapshot_preview1.path_symlink"},
		{"wasi sock_accept", wmodule{imports: []wimport{{module: wasiModule, name: "sock_accept", params: []byte{0x7f, 0x7f, 0x7f}, results: i32}}}.bytes(), nil, "wasi_snapshot_preview1.sock_accept"},
		{"ungranted fetch", wmodule{imports: []wimport{{module: HostModule, name: "fetch", params: []byte{0x7f, 0x7f}, results: i32}}}.bytes(), []mediator.Permission{mediator.PermConsoleLog}, "restricted_api.fetch"},
		{"not in the API", wmodule{imports: []wimport{{module: HostModule, name: "spawn", params: nil, results: i32}}}.bytes(), probePerms, "restricted_api.spawn"},
		{"wrong signature", wmodule{imports: []wimport{{module: HostModule, name: "log", params: nil, results: i32}}}.bytes(), probePerms, "restricted_api.log"},
		{"imported memory", wmodule{imports: []wimport{{module: "env", name: "memory", memory: true, memMin: 1}}}.bytes(), probePerms, "env.memory"},
		{"imported table", wmodule{imports: []wimport{{module: "env", name: "table", table: true}}}.bytes(), probePerms, "env.table"},
		{"imported global", wmodule{imports: []wimport{{module: HostModule, name: "g", global: true}}}.bytes(), probePerms, "restricted_api.g"},
		{"probe without clipboard.read", probeWasm, []mediator.Permission{mediator.PermConsoleLog, mediator.PermPageRead, mediator.PermPageWrite, mediator.PermClipboardWrite, mediator.PermNetworkFetch}, "restricted_api.clipboard_read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.install(t, "linked", c.perms, mediator.Capabilities{})
			res, err := sharedRuntime().Run(context.Background(), f.spec(rec, c.module, ""))
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != mediator.CodeImportNotGranted || !strings.Contains(res.Error, c.want) {
				t.Fatalf("result %s %q; want import_not_granted naming %s", res.Code, res.Error, c.want)
			}
			page, _ := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "linked"})
			if len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodeImportNotGranted || page.Denials[0].Context.Details["import"] != c.want {
				t.Fatalf("denial log %+v", page.Denials)
			}
		})
	}
}

// TestLinkTimeDenyOfARevokedGrant: an import whose permission the user
// revoked is refused as revoked_by_user, naming how to grant it again, in
// the result and in the denial log; the same import never granted stays
// import_not_granted.
func TestLinkTimeDenyOfARevokedGrant(t *testing.T) {
	f := newFixture(t)
	fetchImport := wmodule{imports: []wimport{{module: HostModule, name: "fetch", params: []byte{0x7f, 0x7f}, results: []byte{0x7f}}}}.bytes()
	f.install(t, "revoked", []mediator.Permission{mediator.PermConsoleLog, mediator.PermNetworkFetch}, mediator.Capabilities{NetworkAccess: true})
	if _, err := f.st.Revoke(context.Background(), "revoked", mediator.PermNetworkFetch); err != nil {
		t.Fatal(err)
	}
	rec, err := f.st.Agent(context.Background(), "revoked")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sharedRuntime().Run(context.Background(), f.spec(rec, fetchImport, ""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != mediator.CodeRevokedByUser || !strings.Contains(res.Error, "nmhost grant revoked network.fetch") || !strings.Contains(res.Error, "restricted_api.fetch") {
		t.Fatalf("result %s %q; want revoked_by_user naming the import and the grant command", res.Code, res.Error)
	}
	page, _ := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "revoked"})
	if len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodeRevokedByUser || page.Denials[0].Context.Layer != "link" {
		t.Fatalf("denial log %+v", page.Denials)
	}
}

// TestLimits: every way a run can go wrong ends that run with its code.
func TestLimits(t *testing.T) {
	unreachable := wmodule{start: []byte{0x00}}.bytes()
	// log(0xfffffff0, 100): a pointer past the end of a one-page memory. The
	// call must fail with an error status; if it "succeeded" the module traps.
	badPointer := wmodule{
		imports: []wimport{{module: HostModule, name: "log", params: []byte{0x7f, 0x7f}, results: []byte{0x7f}}},
		memMin:  1,
		start: append(append(append(i32const(-16), i32const(100)...), call(0)...),
			append(i32const(0), 0x4e /* i32.ge_s */, 0x04, 0x40 /* if */, 0x00 /* unreachable */, 0x0b)...),
	}.bytes()
	// An input() loop: the call cap ends it.
	callLoop := wmodule{
		imports: []wimport{{module: HostModule, name: "input", results: []byte{0x7f}}},
		start:   append(append([]byte{0x03, 0x40}, call(0)...), 0x1a /* drop */, 0x0c, 0x00 /* br 0 */, 0x0b),
	}.bytes()
	spinLoop := wmodule{start: []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}}.bytes()
	bigMemory := wmodule{memMin: 1000}.bytes() // 62.5 MiB declared up front
	otherHash := strings.Repeat("0", 63) + "1" // a well-formed pin of some other module

	cases := []struct {
		name    string
		module  []byte
		input   string
		caps    mediator.Capabilities
		pin     string
		want    mediator.Code
		runtime *Runtime
	}{
		{"trap", unreachable, "", mediator.Capabilities{}, "", mediator.CodeTrap, nil},
		{"out-of-range pointer is an error, not a crash", badPointer, "", mediator.Capabilities{}, "", "", nil},
		{"wasm loop times out", spinLoop, "", mediator.Capabilities{ExecutionTimeout: 200}, "", mediator.CodeTimeout, nil},
		{"Go loop times out", probeWasm, "spin", mediator.Capabilities{ExecutionTimeout: 500}, "", mediator.CodeTimeout, nil},
		{"declared memory over maxMemory", bigMemory, "", mediator.Capabilities{MaxMemory: 1 << 20}, "", mediator.CodeMemoryLimit, nil},
		{"heap growth over maxMemory", probeWasm, "hog", mediator.Capabilities{MaxMemory: 32 << 20}, "", mediator.CodeMemoryLimit, nil},
		{"output flood", probeWasm, "flood", mediator.Capabilities{}, "", mediator.CodeTooLarge, nil},
		{"call flood", callLoop, "", mediator.Capabilities{}, "", mediator.CodeCallLimit, nil},
		{"too many log calls", probeWasm, "spam 100", mediator.Capabilities{}, "", mediator.CodeCallLimit, smallRuntime(t)},
		{"exit status", probeWasm, "exit 3", mediator.Capabilities{}, "", mediator.CodeExitNonZero, nil},
		{"garbage", []byte("\x00asm\x01\x00\x00\x00\xff\xff\xff"), "", mediator.Capabilities{}, "", mediator.CodeInvalidModule, nil},
		{"not wasm at all", []byte("#!/bin/sh\nrm -rf /\n"), "", mediator.Capabilities{}, "", mediator.CodeInvalidModule, nil},
		{"no entry point", wmodule{noStart: true}.bytes(), "", mediator.Capabilities{}, "", mediator.CodeInvalidModule, nil},
		{"pinned hash mismatch", unreachable, "", mediator.Capabilities{}, otherHash, mediator.CodeHashMismatch, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.install(t, "limited", probePerms, c.caps)
			rec.Profile.ModuleSHA256 = c.pin
			rt := c.runtime
			if rt == nil {
				rt = sharedRuntime()
			}
			res, err := rt.Run(context.Background(), f.spec(rec, c.module, c.input))
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != c.want {
				t.Fatalf("code %q (%s); want %q\noutput: %.300s", res.Code, res.Error, c.want, res.Output)
			}
			if c.want == mediator.CodeExitNonZero && res.ExitCode != 3 {
				t.Fatalf("exit code %d; want 3", res.ExitCode)
			}
		})
	}
}

func smallRuntime(t *testing.T) *Runtime {
	r, err := New(context.Background(), Config{MaxCallsPerRun: 20, CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// TestConcurrentRunsAreIsolated: a run that hangs until its timeout does not
// hold up or disturb runs beside it.
func TestConcurrentRunsAreIsolated(t *testing.T) {
	f := newFixture(t)
	rec := f.install(t, "many", probePerms, mediator.Capabilities{ExecutionTimeout: 3000})
	var wg sync.WaitGroup
	results := make([]Result, 4)
	start := time.Now()
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			input := fmt.Sprintf("print run %d", i)
			if i == 0 {
				input = "spin"
			}
			results[i], _ = sharedRuntime().Run(context.Background(), f.spec(rec, probeWasm, input))
		}()
	}
	wg.Wait()
	if results[0].Code != mediator.CodeTimeout {
		t.Fatalf("spinning run: %+v", results[0])
	}
	for i, r := range results[1:] {
		if r.Status != "ok" || r.Output != fmt.Sprintf("run %d\n", i+1) {
			t.Fatalf("run %d: %+v", i+1, r)
		}
	}
	t.Logf("4 concurrent runs in %v", time.Since(start))
}
