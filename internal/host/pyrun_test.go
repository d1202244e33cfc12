package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

const pySource = "text = await restricted_api.getPageText()\nrestricted_api.log(text)\nr = await restricted_api.fetch(URL)\n"

func pyProfile(id string, perms []string, hosts ...string) map[string]any {
	return map[string]any{
		"agentId": id, "runtime": "python",
		"permissions":  map[string]any{"required": perms},
		"capabilities": map[string]any{"networkAccess": len(hosts) > 0, "allowedHosts": hosts, "domAccess": "read-only", "executionTimeout": 20000},
	}
}

// openPythonRun installs a Python agent and opens a run bound to a tab.
func openPythonRun(h *harness, id string, perms []string, hosts ...string) (runID string, api []string) {
	h.t.Helper()
	h.mustOK("install-agent", map[string]any{"profile": pyProfile(id, perms, hosts...), "module": pySource}, nil)
	var out struct {
		RunID  string   `json:"runId"`
		API    []string `json:"api"`
		Source string   `json:"source"`
	}
	h.mustOK("python-run", map[string]any{"agentId": id, "origin": "http://page.test", "context": map[string]any{"tabId": 7, "origin": "http://evil.test"}}, &out)
	if out.Source != pySource || len(out.RunID) != 32 {
		h.t.Fatalf("python-run = %+v", out)
	}
	return out.RunID, out.API
}

func TestInstallPythonAgent(t *testing.T) {
	h := newHarness(t, true)
	cases := []struct {
		name   string
		perms  []string
		module string
		code   mediator.Code
		set    mediator.PermissionSet
		conf   float64
	}{
		{"plain source", []string{"page.read", "console.log"}, "t = await restricted_api.getPageText()\nrestricted_api.log(t)\n", "", mediator.SetReadonly, 0.8},
		{"dynamic source falls back to minimal", []string{"page.read"}, "f = getattr(restricted_api, 'getPageText')\n", mediator.CodePermissionOutsideSet, "", 0},
		{"dynamic log-only source installs", []string{"console.log"}, "eval('1')\nrestricted_api.log('x')\n", "", mediator.SetMinimal, 0.5},
		{"wasm module under runtime python", []string{}, "\x00asm\x01\x00\x00\x00", mediator.CodeBadRequest, "", 0},
		{"NUL", []string{}, "print(1)\x00", mediator.CodeBadRequest, "", 0},
		{"too large", []string{}, strings.Repeat("#", 1<<20+1), mediator.CodeTooLarge, "", 0},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "py" + string(rune('a'+i))
			r := h.call("install-agent", map[string]any{"profile": pyProfile(id, c.perms), "module": c.module})
			if c.code != "" {
				if r.Success || r.Code != string(c.code) {
					t.Errorf("install = %v %q %q, want %q", r.Success, r.Code, r.Error, c.code)
				}
				return
			}
			var rec mediator.AgentRecord
			if err := r.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			if !rec.Profile.IsPython() || rec.Profile.PermissionSet != c.set || rec.Profile.PermissionConfidence != c.conf || rec.Profile.PermissionSource != mediator.SetSourceInferred {
				t.Errorf("profile = %+v", rec.Profile)
			}
			// The source is stored by its hash and comes back unchanged.
			var got struct{ Source string }
			h.mustOK("python-run", map[string]any{"agentId": id}, &got)
			if got.Source != c.module {
				t.Errorf("source = %q", got.Source)
			}
		})
	}
	t.Run("base64 of source is source text, not decoded", func(t *testing.T) {
		enc := base64.StdEncoding.EncodeToString([]byte("restricted_api.log('x')"))
		var rec mediator.AgentRecord
		h.mustOK("install-agent", map[string]any{"profile": pyProfile("pyb64", []string{"console.log"}), "module": enc}, &rec)
		var got struct{ Source string }
		h.mustOK("python-run", map[string]any{"agentId": "pyb64"}, &got)
		if got.Source != enc {
			t.Errorf("source = %q", got.Source)
		}
	})
}

func TestPythonAndWasmRunOnlyInTheirRuntime(t *testing.T) {
	h := newHarness(t, true)
	h.install("wasm-agent", []string{"console.log"}, false)
	h.wantCode(h.call("python-run", map[string]any{"agentId": "wasm-agent"}), mediator.CodeBadRequest) // installed without a module
	module, err := testwasm.Probe()
	if err != nil {
		t.Fatal(err)
	}
	h.mustOK("install-agent", map[string]any{"profile": map[string]any{"agentId": "wasm-agent", "permissions": map[string]any{"required": []string{"console.log"}}},
		"module": base64.StdEncoding.EncodeToString(module)}, nil)
	h.wantCode(h.call("python-run", map[string]any{"agentId": "wasm-agent"}), mediator.CodeWrongRuntime)
	h.mustOK("install-agent", map[string]any{"profile": pyProfile("py", []string{"console.log"}), "module": "restricted_api.log(1)"}, nil)
	h.wantCode(h.call("run-agent", map[string]any{"agentId": "py"}), mediator.CodeWrongRuntime)
	h.wantCode(h.call("python-run", map[string]any{"agentId": "nobody"}), mediator.CodeUnknownAgent)
	h.wantCode(h.call("python-run", map[string]any{"agentId": "py", "origin": "null"}), mediator.CodeBadRequest)
	h.wantCode(h.call("python-run", map[string]any{"agentId": "py", "sessionLevel": "root"}), mediator.CodeInvalidLevel)
}

func TestAgentCallIsDecidedByTheHost(t *testing.T) {
	var pageCalls []string
	var mu sync.Mutex
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) }))
	defer web.Close()
	canary := newCanary(t)

	h := newHarness(t, true)
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		var m struct {
			Call    string
			Context struct {
				TabID  int
				Origin string
			}
		}
		json.Unmarshal(msg, &m)
		mu.Lock()
		pageCalls = append(pageCalls, typ+" "+m.Call+" "+m.Context.Origin)
		mu.Unlock()
		if typ == "prompt" {
			return map[string]any{"answer": "deny"}
		}
		return map[string]any{"success": true, "data": map[string]any{"text": "Page words here"}}
	})
	runID, api := openPythonRun(h, "pyagent", []string{"page.read", "console.log", "network.fetch"}, hostPort(web.URL))
	if strings.Join(api, ",") != "log,querySelector,querySelectorAll,getPageText,fetch" {
		t.Errorf("api = %v", api)
	}
	call := func(runID, agent, op string, params map[string]any) (map[string]any, string) {
		r := h.call("agent-call", map[string]any{"runId": runID, "agentId": agent, "operation": op, "params": params})
		if !r.Success {
			return nil, r.Code
		}
		var out map[string]any
		r.Decode(&out)
		return out, ""
	}

	t.Run("page read goes to the run's document", func(t *testing.T) {
		out, code := call(runID, "pyagent", "getPageText", nil)
		if code != "" || out["text"] != "Page words here" {
			t.Fatalf("getPageText = %v %s", out, code)
		}
		mu.Lock()
		defer mu.Unlock()
		// The origin is the run's, not the one the extension's context held.
		if last := pageCalls[len(pageCalls)-1]; last != "browser-call page.read.getPageText http://page.test" {
			t.Errorf("browser-call = %q", last)
		}
	})
	t.Run("log is allowed and audited", func(t *testing.T) {
		if _, code := call(runID, "pyagent", "log", map[string]any{"text": "hi"}); code != "" {
			t.Fatalf("log = %s", code)
		}
	})
	t.Run("fetch an allowed host", func(t *testing.T) {
		out, code := call(runID, "pyagent", "fetch", map[string]any{"url": web.URL + "/x.json"})
		if code != "" || out["body"] != `{"ok":true}` {
			t.Fatalf("fetch = %v %s", out, code)
		}
	})

	hostile := []struct {
		name  string
		runID string
		agent string
		op    string
		args  map[string]any
		code  mediator.Code
	}{
		{"fetch a host outside allowedHosts", runID, "pyagent", "fetch", map[string]any{"url": canary.URL}, mediator.CodeHostNotAllowed},
		{"ungranted function", runID, "pyagent", "writeToClipboard", map[string]any{"text": "x"}, mediator.CodePermissionNotGranted},
		{"ungranted page write", runID, "pyagent", "setElementText", map[string]any{"selector": "h1", "text": "x"}, mediator.CodePermissionNotGranted},
		{"unknown operation", runID, "pyagent", "spawn", nil, mediator.CodeUnknownOperation},
		{"operation by its mediator name", runID, "pyagent", "page.read.getPageText", nil, mediator.CodeUnknownOperation},
		{"case variant", runID, "pyagent", "GetPageText", nil, mediator.CodeUnknownOperation},
		{"unknown run", strings.Repeat("0", 32), "pyagent", "getPageText", nil, mediator.CodeUnknownRun},
		{"empty run id", "", "pyagent", "getPageText", nil, mediator.CodeUnknownRun},
		{"another agent's run", runID, "other", "getPageText", nil, mediator.CodeUnknownRun},
		{"unknown param", runID, "pyagent", "log", map[string]any{"text": "x", "shell": "rm"}, mediator.CodeBadRequest},
	}
	for _, c := range hostile {
		t.Run("hostile/"+c.name, func(t *testing.T) {
			if out, code := call(c.runID, c.agent, c.op, c.args); code != string(c.code) {
				t.Errorf("code = %q (%v), want %q", code, out, c.code)
			}
		})
	}
	if canary.Hits.Load() != 0 {
		t.Errorf("canary was hit %d times", canary.Hits.Load())
	}

	t.Run("denials are logged like a module's", func(t *testing.T) {
		var page struct{ Denials []mediator.Denial }
		h.mustOK("list-denials", map[string]any{"agentId": "pyagent"}, &page)
		codes := map[mediator.Code]bool{}
		for _, d := range page.Denials {
			codes[d.Code] = true
		}
		if !codes[mediator.CodeHostNotAllowed] || !codes[mediator.CodePermissionNotGranted] {
			t.Errorf("denials = %+v", page.Denials)
		}
	})
	t.Run("a run ends once; its id is then unknown", func(t *testing.T) {
		for i, c := range []struct {
			agent string
			code  string
		}{{"other", "unknown_run"}, {"pyagent", ""}, {"pyagent", "unknown_run"}} {
			if r := h.call("python-run-end", map[string]any{"runId": runID, "agentId": c.agent, "status": "ok"}); r.Code != c.code {
				t.Errorf("end #%d by %s = %q, want %q", i, c.agent, r.Code, c.code)
			}
		}
		if _, code := call(runID, "pyagent", "getPageText", nil); code != string(mediator.CodeUnknownRun) {
			t.Errorf("call after the end = %q", code)
		}
	})
}

func TestAgentCallPromptsLikeAModule(t *testing.T) {
	h := newHarness(t, true)
	var prompts []string
	h.client.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		var m struct {
			Operation string
			Target    struct{ TextLength int }
		}
		json.Unmarshal(msg, &m)
		if typ == "prompt" {
			prompts = append(prompts, m.Operation)
			return map[string]any{"answer": "deny"}
		}
		return map[string]any{"success": true}
	})
	runID, _ := openPythonRun(h, "clip", []string{"clipboard.write"})
	r := h.call("agent-call", map[string]any{"runId": runID, "agentId": "clip", "operation": "writeToClipboard", "params": map[string]any{"text": "abc"}})
	h.wantCode(r, mediator.CodeUserDenied)
	if len(prompts) != 1 || prompts[0] != mediator.OpClipboardWrite {
		t.Errorf("prompts = %v", prompts)
	}
}

func TestAgentCallIsBoundToTheHostThatOpenedTheRun(t *testing.T) {
	h1 := newHarness(t, true)
	runID, _ := openPythonRun(h1, "bound", []string{"page.read"})
	h2 := newHarness(t, true)
	h2.mustOK("install-agent", map[string]any{"profile": pyProfile("bound", []string{"page.read"}), "module": pySource}, nil)
	r := h2.call("agent-call", map[string]any{"runId": runID, "agentId": "bound", "operation": "getPageText"})
	h2.wantCode(r, mediator.CodeUnknownRun)
	h2.wantCode(h2.call("python-run-end", map[string]any{"runId": runID, "agentId": "bound"}), mediator.CodeUnknownRun)
}

// TestPythonMemory: a Python agent's memory_write and memory_search are
// decided like a module's (the session matrix: search at medium, write at
// high, session_level below with "permission denied"), reach the run's
// session only, and a run cannot raise its session's level.
func TestPythonMemory(t *testing.T) {
	h := newHarness(t, true)
	h.mustOK("install-agent", map[string]any{"profile": pyProfile("pymem", []string{"memory"}),
		"module": "await restricted_api.memory_write('x')\nawait restricted_api.memory_search('x')\n"}, nil)
	for _, s := range []struct{ id, level string }{{"notes", "high"}, {"other", "high"}, {"lowly", "low"}} {
		if _, err := h.st.UpdateSessionSettings(context.Background(), s.id, []byte(`{"permissionLevel":"`+s.level+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	open := func(session, level string) string {
		t.Helper()
		var out struct {
			RunID     string   `json:"runId"`
			SessionID string   `json:"sessionId"`
			API       []string `json:"api"`
		}
		h.mustOK("python-run", map[string]any{"agentId": "pymem", "sessionId": session, "sessionLevel": level}, &out)
		if out.SessionID != session || strings.Join(out.API, ",") != "memory_write,memory_search" {
			t.Fatalf("python-run = %+v", out)
		}
		return out.RunID
	}
	call := func(runID, op string, params map[string]any) (string, string) {
		r := h.call("agent-call", map[string]any{"runId": runID, "agentId": "pymem", "operation": op, "params": params})
		if !r.Success {
			return r.Code, r.Error
		}
		var out json.RawMessage
		r.Decode(&out)
		return "", string(out)
	}
	high, other := open("notes", ""), open("other", "")
	medium, low := open("notes", "medium"), open("lowly", "")
	for _, c := range []struct {
		name, run, op string
		params        map[string]any
		code          mediator.Code
		want          string
	}{
		{"write at high", high, "memory_write", map[string]any{"text": "the deploy key rotates", "tags": []string{"ops"}}, "", `{"id":1}`},
		{"search at medium", medium, "memory_search", map[string]any{"query": "deploy", "limit": 5}, "", `"snippet":"the [deploy] key rotates","tags":["ops"],"rank":1`},
		{"write at medium", medium, "memory_write", map[string]any{"text": "x"}, mediator.CodeSessionLevel, "permission denied: memory.write needs a high"},
		{"search at low", low, "memory_search", map[string]any{"query": "deploy"}, mediator.CodeSessionLevel, "permission denied: memory.search needs a medium"},
		{"another session", other, "memory_search", map[string]any{"query": "deploy"}, "", `{"results":[]}`},
		{"hostile query", high, "memory_search", map[string]any{"query": `deploy" OR "x`}, "", `{"results":[]}`},
		{"unknown param", high, "memory_write", map[string]any{"text": "x", "session": "other"}, mediator.CodeBadRequest, ""},
		{"tag out of its alphabet", high, "memory_write", map[string]any{"text": "x", "tags": []string{"A B"}}, mediator.CodeBadRequest, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := call(c.run, c.op, c.params)
			if code != string(c.code) || !strings.Contains(out, c.want) {
				t.Fatalf("%s = %q %s; want %q with %q", c.op, code, out, c.code, c.want)
			}
		})
	}
	// The request may lower the session's level, never raise it.
	h.wantCode(h.call("python-run", map[string]any{"agentId": "pymem", "sessionId": "lowly", "sessionLevel": "high"}), mediator.CodeSessionLevel)
}

// TestPythonShell: a Python agent's shell runs in its run's session
// workspace with a module's decisions: each command is shell.CMD at the
// run's level, writes need a set with read-write workspace access, a
// second session sees nothing of the first, and nothing outside is
// written.
func TestPythonShell(t *testing.T) {
	h := newHarness(t, true)
	for _, a := range []struct {
		id, set string
	}{{"pysh", "filesystem"}, {"pysh-ro", "readonly"}} {
		perms := []string{"shell", "workspace.read", "workspace.write"}
		if a.set == "readonly" {
			perms = perms[:2]
		}
		prof := pyProfile(a.id, perms)
		prof["permissionSet"] = a.set
		h.mustOK("install-agent", map[string]any{"profile": prof, "module": "await restricted_api.shell('ls')\n"}, nil)
	}
	for _, s := range []struct{ id, level string }{{"desk", "medium"}, {"other", "medium"}, {"lowly", "low"}} {
		if _, err := h.st.UpdateSessionSettings(context.Background(), s.id, []byte(`{"permissionLevel":"`+s.level+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	canary := filepath.Join(t.TempDir(), "canary.txt")
	if err := os.WriteFile(canary, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(agent, session string) string {
		t.Helper()
		var out struct {
			RunID string `json:"runId"`
		}
		h.mustOK("python-run", map[string]any{"agentId": agent, "sessionId": session}, &out)
		return out.RunID
	}
	desk, other, lowly, ro := open("pysh", "desk"), open("pysh", "other"), open("pysh", "lowly"), open("pysh-ro", "desk")
	for _, c := range []struct {
		name, agent, run, line string
		code                   mediator.Code
		want                   string
	}{
		{"write in the session", "pysh", desk, "echo hello > note.txt && cat note.txt", "", `{"output":"hello\n"}`},
		{"another session sees nothing", "pysh", other, "cat note.txt", mediator.CodeNotFound, ""},
		{"an information command at low", "pysh", lowly, "grep hello note.txt", mediator.CodeSessionLevel, ""},
		{"a write under readonly", "pysh-ro", ro, "echo x > ro.txt", mediator.CodePermissionOutsideSet, ""},
		{"a read under readonly", "pysh-ro", ro, "cat note.txt", "", `{"output":"hello\n"}`},
		{"a write outside", "pysh", desk, "cp note.txt " + canary, mediator.CodePathNotAllowed, ""},
		{"a read outside below high", "pysh", desk, "cat " + canary, mediator.CodeSessionLevel, ""},
		{"a process", "pysh", desk, "sh -c 'cat " + canary + "'", mediator.CodeShellNotAllowed, ""},
		{"a substitution", "pysh", desk, "echo $(cat " + canary + ")", mediator.CodeShellNotAllowed, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.call("agent-call", map[string]any{"runId": c.run, "agentId": c.agent, "operation": "shell", "params": map[string]any{"command": c.line}})
			if c.code != "" {
				h.wantCode(r, c.code)
				return
			}
			var out json.RawMessage
			r.Decode(&out)
			if !r.Success || string(out) != c.want {
				t.Fatalf("%v %s: %s; want %s", r.Success, r.Error, out, c.want)
			}
		})
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "outside" {
		t.Fatalf("the canary is %q, %v", b, err)
	}
	// The substitution was refused before any command existed; it is on
	// record all the same.
	dp, err := h.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "pysh", Permission: "shell"})
	if err != nil {
		t.Fatal(err)
	}
	shellLayer := 0
	for _, d := range dp.Denials {
		if d.Context.Layer == "shell" && d.Code == mediator.CodeShellNotAllowed {
			shellLayer++
		}
	}
	if shellLayer != 1 {
		t.Fatalf("%d shell-layer denials; want the substitution's: %+v", shellLayer, dp.Denials)
	}
	// Every command is in the audit trail as its own shell operation.
	page, err := h.st.ListAudit(context.Background(), 0, 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, rec := range page.Records {
		if strings.HasPrefix(rec.Operation.Name, "shell.") && rec.Kind == mediator.AuditDecision {
			ops = append(ops, rec.Operation.Name+" "+string(rec.Code))
		}
	}
	want := "shell.echo allowed,shell.cat allowed,shell.cat allowed,shell.grep session_level,shell.echo permission_outside_set,shell.cat allowed,shell.cp path_not_allowed,shell.cat session_level,shell.sh shell_not_allowed"
	if got := strings.Join(ops, ","); got != want {
		t.Fatalf("shell decisions\n%s\nwant\n%s", got, want)
	}
}

// TestEndedRunWithdrawsItsPrompt: a call of a Python run waits on a
// prompt; the run ends. The call is refused (prompt_cancelled), the
// extension is told to close the prompt (prompt-cancel with the prompt's
// id), an answer that comes after is refused and recorded with its audit
// record, nothing is fetched, and a later call of the run is unknown_run.
func TestEndedRunWithdrawsItsPrompt(t *testing.T) {
	var hits atomic.Int64
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer web.Close()
	h := newHarness(t, true)
	script := &promptScript{answers: []string{"late"}}
	h.client.SetHostHandler(script.handle)
	runID, _ := openPythonRun(h, "py-late", []string{"network.fetch"}, hostPort(web.URL))
	got := make(chan nmclient.Reply, 1)
	go func() {
		got <- h.call("agent-call", map[string]any{"runId": runID, "agentId": "py-late", "operation": "fetch",
			"params": map[string]any{"url": web.URL + "/post", "options": map[string]any{"method": "POST", "body": "x"}}})
	}()
	waitUntil(t, func() bool { return script.count() == 1 })
	h.mustOK("python-run-end", map[string]any{"runId": runID, "agentId": "py-late", "status": "timeout"}, nil)
	h.wantCode(<-got, mediator.CodePromptCancelled)

	script.mu.Lock()
	shownID := fmt.Sprint(script.shown[0]["id"])
	script.mu.Unlock()
	waitUntil(t, func() bool {
		script.mu.Lock()
		defer script.mu.Unlock()
		return len(script.withdrawn) == 1 && fmt.Sprint(script.withdrawn[0]["id"]) == shownID && script.withdrawn[0]["code"] == "prompt_cancelled"
	})
	// The late allow-once is on the record as refused, beside the call's own refusal.
	waitUntil(t, func() bool {
		page, err := h.st.ListDenials(context.Background(), store.DenialFilter{Code: mediator.CodePromptCancelled})
		if err != nil {
			t.Fatal(err)
		}
		late := 0
		for _, d := range page.Denials {
			if d.AuditSeq == 0 {
				t.Fatalf("denial %+v names no audit record", d)
			}
			if d.Context.Details["answer"] == "allow-once" && d.Context.Details["promptId"] == shownID {
				late++
			}
		}
		return late == 1 && len(page.Denials) == 2
	})
	if n := hits.Load(); n != 0 {
		t.Fatalf("the POST of an ended run reached the server %d times", n)
	}
	h.wantCode(h.call("agent-call", map[string]any{"runId": runID, "agentId": "py-late", "operation": "log", "params": map[string]any{"text": "x"}}),
		mediator.CodeUnknownRun)
}

// waitUntil polls cond until it holds, for at most 10 s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "the condition", cond)
}
