package host

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// codeScenario is one row of the walk: a reason code, the entry point
// that returns it, and a real scenario through that entry point that must
// put it in the denial log with an audit record. A code that is never a
// refusal (an outcome, a verdict about the trail) says why instead.
type codeScenario struct {
	code     mediator.Code
	entry    string
	scenario func(w *walk)
	// notRefusal, when set, says why the code never reaches the denial
	// log: it is not a refusal (mediator.IsRefusal is false).
	notRefusal string
	// hostNever, when set, says why the native host never returns the
	// code: another entry point does, and records it there.
	hostNever string
}

// walk is the world the scenarios run in: one host, a web server the
// agents may reach, a canary they may not.
type walk struct {
	t       *testing.T
	h       *harness
	st      *store.Store // where the scenario's denial is; the host's store by default
	web     *httptest.Server
	canary  *canary
	prompts *promptScript
}

// answers makes the "extension" answer the next prompts so.
func (w *walk) answers(a ...string) {
	w.prompts.mu.Lock()
	w.prompts.answers = append(w.prompts.answers, a...)
	w.prompts.mu.Unlock()
}

func (w *walk) fetch(agent, url string, options map[string]any) {
	w.t.Helper()
	params := map[string]any{"agentId": agent, "url": url}
	if options != nil {
		params["options"] = options
	}
	r := w.h.call("network-fetch", params)
	if r.Success {
		w.t.Fatalf("network-fetch %s succeeded", url)
	}
}

// agentCall opens a Python run of a fresh agent with perms and makes one
// call.
func (w *walk) agentCall(id string, perms []string, op string, params map[string]any, hosts ...string) {
	w.t.Helper()
	runID, _ := openPythonRun(w.h, id, perms, hosts...)
	w.h.call("agent-call", map[string]any{"runId": runID, "agentId": id, "operation": op, "params": params})
}

func refusalScenarios() []codeScenario {
	return []codeScenario{
		{code: mediator.CodeAllowed, notRefusal: "the code of an allowed decision"},
		{code: mediator.CodeInternal, notRefusal: "the host failing, not refusing: it is reported and logged on stderr"},
		{code: mediator.CodeTimeout, notRefusal: "how a run or a fetch ended: its executionTimeout passed; the run's result says so"},
		{code: mediator.CodeTrap, notRefusal: "how a run ended: the guest trapped"},
		{code: mediator.CodeCompileTimeout, notRefusal: "how a run ended: its module did not compile within the host's compile budget"},
		{code: mediator.CodeMemoryLimit, notRefusal: "how a run ended: the guest needed more than its maxMemory"},
		{code: mediator.CodeCallLimit, notRefusal: "how a run ended: it made more calls than a run may"},
		{code: mediator.CodeExitNonZero, notRefusal: "how a run ended: the guest exited with a status"},
		{code: mediator.CodeUpstreamError, notRefusal: "an allowed fetch whose server failed; its decision is in the trail"},
		{code: mediator.CodeDNSError, notRefusal: "an allowed fetch whose name did not resolve"},
		{code: mediator.CodeNotFound, notRefusal: "a missing file in the workspace"},
		{code: mediator.CodeDependencyFailed, notRefusal: "a task skipped because one it depends on failed; that failure is reported"},
		{code: mediator.CodeAuditBadSignature, notRefusal: "a verdict about the audit trail, shown to the person"},
		{code: mediator.CodeAuditTruncated, notRefusal: "a verdict about the audit trail, shown to the person"},
		{code: mediator.CodeAuditInconsistent, notRefusal: "a verdict about the audit trail, shown to the person"},
		{code: mediator.CodeHostNotAllowed, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", w.canary.URL+"/x", nil)
		}},
		{code: mediator.CodeNetworkDisabled, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("offline", w.web.URL+"/ok", nil)
		}},
		{code: mediator.CodePermissionNotGranted, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("nogrant", w.web.URL+"/ok", nil)
		}},
		{code: mediator.CodeUnknownAgent, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("ghost", w.web.URL+"/ok", nil)
		}},
		{code: mediator.CodePrivateAddress, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", "http://intra.test/", nil)
		}},
		{code: mediator.CodeNonCanonicalHost, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", "http://2130706433/", nil)
		}},
		{code: mediator.CodeInvalidURL, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", "http://"+hostPort(w.web.URL)+"@evil.test/", nil)
		}},
		{code: mediator.CodeSchemeNotAllowed, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", "file:///etc/passwd", nil)
		}},
		{code: mediator.CodeHeaderNotAllowed, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", w.web.URL+"/ok", map[string]any{"headers": map[string]string{"Host": "evil.test"}})
		}},
		{code: mediator.CodeMethodNotAllowed, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", w.web.URL+"/ok", map[string]any{"method": "CONNECT"})
		}},
		{code: mediator.CodeBodyNotAllowed, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", w.web.URL+"/ok", map[string]any{"method": "GET", "body": "smuggled"})
		}},
		{code: mediator.CodeTooManyRedirects, entry: "network-fetch", scenario: func(w *walk) {
			w.fetch("reader", w.web.URL+"/loop", nil)
		}},
		{code: mediator.CodeUnknownOperation, entry: "agent-call", scenario: func(w *walk) {
			w.agentCall("py-unknown-op", []string{"console.log"}, "spawn", nil)
		}},
		{code: mediator.CodeUnknownRun, entry: "agent-call", scenario: func(w *walk) {
			w.h.call("agent-call", map[string]any{"runId": strings.Repeat("0", 32), "agentId": "reader", "operation": "log", "params": map[string]any{"text": "x"}})
		}},
		{code: mediator.CodeShellNotAllowed, entry: "agent-call shell", scenario: func(w *walk) {
			w.agentCall("py-shell", []string{"shell", "workspace.read"}, "shell", map[string]any{"command": "curl http://evil.test"})
		}},
		{code: mediator.CodeSandboxUnavailable, entry: "agent-call shell running a program at a high session on a host without bubblewrap", scenario: func(w *walk) {
			if _, err := w.st.UpdateSessionSettings(context.Background(), "high one", []byte(`{"permissionLevel":"high"}`)); err != nil {
				w.t.Fatal(err)
			}
			w.h.mustOK("install-agent", map[string]any{"profile": pyProfile("py-program", []string{"shell", "workspace.read", "workspace.write"}), "module": pySource}, nil)
			var out struct {
				RunID string `json:"runId"`
			}
			w.h.mustOK("python-run", map[string]any{"agentId": "py-program", "sessionId": "high one"}, &out)
			w.t.Setenv("PATH", w.t.TempDir()) // no bwrap on it
			w.h.call("agent-call", map[string]any{"runId": out.RunID, "agentId": "py-program", "operation": "shell", "params": map[string]any{"command": "git status"}})
		}},
		{code: mediator.CodePathNotAllowed, entry: "agent-call shell", scenario: func(w *walk) {
			w.agentCall("py-climb", []string{"shell", "workspace.read"}, "shell", map[string]any{"command": "cat ../../x"})
		}},
		{code: mediator.CodeUserDenied, entry: "network-fetch", scenario: func(w *walk) {
			w.answers("deny")
			w.fetch("reader", w.web.URL+"/ok", map[string]any{"method": "POST", "body": "x"})
		}},
		{code: mediator.CodePromptCancelled, entry: "agent-call whose run ends while it waits on a prompt", scenario: func(w *walk) {
			runID, _ := openPythonRun(w.h, "py-withdrawn", []string{"network.fetch"}, hostPort(w.web.URL))
			w.answers("late")
			n := w.prompts.count()
			got := make(chan struct{})
			go func() {
				defer close(got)
				w.h.client.Call(context.Background(), "agent-call", map[string]any{"runId": runID, "agentId": "py-withdrawn", "operation": "fetch",
					"params": map[string]any{"url": w.web.URL + "/ok", "options": map[string]any{"method": "POST", "body": "x"}}})
			}()
			deadline := time.Now().Add(10 * time.Second)
			for w.prompts.count() == n && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			w.h.call("python-run-end", map[string]any{"runId": runID, "agentId": "py-withdrawn", "status": "timeout"})
			<-got
		}},
		{code: mediator.CodeAnswerNotOffered, entry: "network-fetch answered with a scope the prompt did not offer", scenario: func(w *walk) {
			w.answers("allow-forever")
			w.fetch("forger", w.web.URL+"/ok", map[string]any{"method": "POST", "body": "x"})
		}},
		{code: mediator.CodeAnswerMismatch, entry: "network-fetch answered from a window that showed another prompt", scenario: func(w *walk) {
			w.answers("mismatched")
			w.fetch("forger", w.web.URL+"/ok", map[string]any{"method": "POST", "body": "x"})
		}},
		{code: mediator.CodeBlockedByUser, entry: "network-fetch", scenario: func(w *walk) {
			w.answers("always-block")
			w.fetch("blocker", w.web.URL+"/ok", map[string]any{"method": "POST", "body": "x"})
			w.fetch("blocker", w.web.URL+"/ok", map[string]any{"method": "POST", "body": "x"})
		}},
		{code: mediator.CodeBadRequest, entry: "agent-call", scenario: func(w *walk) {
			w.agentCall("py-extra", []string{"console.log"}, "log", map[string]any{"text": "x", "shell": "rm"})
		}},
		{code: mediator.CodeWrongRuntime, entry: "python-run", scenario: func(w *walk) {
			// The smallest valid module: a WebAssembly agent, not Python.
			w.h.mustOK("install-agent", map[string]any{"profile": map[string]any{"agentId": "wasm-agent", "permissions": map[string]any{"required": []string{}}},
				"module": base64.StdEncoding.EncodeToString([]byte("\x00asm\x01\x00\x00\x00"))}, nil)
			w.h.call("python-run", map[string]any{"agentId": "wasm-agent"})
		}},
		{code: mediator.CodeUnknownSession, entry: "python-run", scenario: func(w *walk) {
			w.h.mustOK("install-agent", map[string]any{"profile": pyProfile("py-session", []string{"console.log"}), "module": pySource}, nil)
			w.h.call("python-run", map[string]any{"agentId": "py-session", "sessionId": "never-made"})
		}},
		{code: mediator.CodeInvalidLevel, entry: "python-run", scenario: func(w *walk) {
			w.h.mustOK("install-agent", map[string]any{"profile": pyProfile("py-level", []string{"console.log"}), "module": pySource}, nil)
			w.h.call("python-run", map[string]any{"agentId": "py-level", "sessionLevel": "root"})
		}},
		{code: mediator.CodeInvalidProfile, entry: "install-agent", scenario: func(w *walk) {
			w.h.call("install-agent", map[string]any{"profile": map[string]any{"agentId": "bad-profile", "permissions": map[string]any{"required": []string{}},
				"capabilities": map[string]any{"domAccess": "root"}}})
		}},
		{code: mediator.CodeInvalidAllowedHost, entry: "install-agent", scenario: func(w *walk) {
			w.h.call("install-agent", map[string]any{"profile": map[string]any{"agentId": "bad-host", "permissions": map[string]any{"required": []string{"network.fetch"}},
				"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{"http://*"}}}})
		}},
		{code: mediator.CodeUnknownPermission, entry: "grant", scenario: func(w *walk) {
			w.h.call("grant", map[string]any{"agentId": "reader", "permission": "fs.write"})
		}},
		{code: mediator.CodePermissionOutsideSet, entry: "grant", scenario: func(w *walk) {
			w.h.mustOK("install-agent", map[string]any{"profile": map[string]any{"agentId": "fetch-set", "permissionSet": "network-api",
				"permissions": map[string]any{"required": []string{"network.fetch"}, "optional": []string{"clipboard.read"}}}}, nil)
			w.h.call("grant", map[string]any{"agentId": "fetch-set", "permission": "clipboard.read"})
		}},
		{code: mediator.CodeUnknownType, entry: "any message", scenario: func(w *walk) {
			w.h.call("format-disk", map[string]any{"agentId": "reader"})
		}},
		{code: mediator.CodeOriginNotAllowed, entry: "any message from a caller not installed for", scenario: func(w *walk) {
			other := newHarness(w.t, false)
			other.call("network-fetch", map[string]any{"agentId": "reader", "url": w.web.URL + "/ok"})
			w.st = other.st
		}},
		{code: mediator.CodeTooLarge, entry: "install-agent", scenario: func(w *walk) {
			w.h.call("install-agent", map[string]any{"profile": pyProfile("py-huge", []string{"console.log"}), "module": strings.Repeat("#", 1<<20+1)})
		}},
		{code: mediator.CodeHashMismatch, entry: "install-agent", scenario: func(w *walk) {
			w.h.call("install-agent", map[string]any{"profile": map[string]any{"agentId": "pinned", "moduleSha256": strings.Repeat("0", 64),
				"permissions": map[string]any{"required": []string{}}}, "module": base64.StdEncoding.EncodeToString(emptyModule)})
		}},
		{code: mediator.CodeInvalidModule, entry: "run-agent", scenario: func(w *walk) {
			w.h.mustOK("install-agent", map[string]any{"profile": map[string]any{"agentId": "ill-typed", "permissions": map[string]any{"required": []string{}}},
				"module": base64.StdEncoding.EncodeToString(illTyped)}, nil)
			w.h.call("run-agent", map[string]any{"agentId": "ill-typed"})
		}},
		{code: mediator.CodeModuleLimits, entry: "install-agent", scenario: func(w *walk) {
			w.h.call("install-agent", map[string]any{"profile": map[string]any{"agentId": "five-tables", "permissions": map[string]any{"required": []string{}}},
				"module": base64.StdEncoding.EncodeToString(fiveTables)})
		}},
		{code: mediator.CodeImportNotGranted, entry: "run-agent", scenario: func(w *walk) {
			w.h.mustOK("install-agent", map[string]any{"profile": map[string]any{"agentId": "fetch-unasked", "permissionSet": "network-api",
				"permissions": map[string]any{"required": []string{}}}, "module": base64.StdEncoding.EncodeToString(importsFetch)}, nil)
			w.h.call("run-agent", map[string]any{"agentId": "fetch-unasked"})
		}},
		{code: mediator.CodeSetFallback, entry: "run-agent (a profile stored before sets, whose inference is unsure)", scenario: func(w *walk) {
			ctx := context.Background()
			prof := mediator.Profile{AgentID: "legacy", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermNetworkFetch}},
				Capabilities: mediator.Capabilities{NetworkAccess: true}}
			if err := prof.Normalize(); err != nil {
				w.t.Fatal(err)
			}
			if _, err := w.h.st.PutModule(ctx, importsFetch); err != nil {
				w.t.Fatal(err)
			}
			if _, err := w.h.st.InstallAgent(ctx, prof, sha256Hex(importsFetch)); err != nil {
				w.t.Fatal(err)
			}
			w.h.call("run-agent", map[string]any{"agentId": "legacy"})
		}},
		{code: mediator.CodeInvalidWorkflow, entry: "run-workflow", scenario: func(w *walk) {
			w.h.call("run-workflow", map[string]any{"workflow": map[string]any{"tasks": []any{
				map[string]any{"id": "a", "code": map[string]any{"op": "code:map", "expr": "1"}},
				map[string]any{"id": "a", "code": map[string]any{"op": "code:map", "expr": "2"}}}}})
		}},
		{code: mediator.CodeNotPure, entry: "run-workflow", scenario: func(w *walk) {
			w.h.mustOK("install-agent", map[string]any{"profile": map[string]any{"agentId": "sider", "permissionSet": "network-api",
				"permissions": map[string]any{"required": []string{"network.fetch"}}, "capabilities": map[string]any{"networkAccess": true}},
				"module": base64.StdEncoding.EncodeToString(callsFetch)}, nil)
			w.h.call("run-workflow", map[string]any{"workflow": map[string]any{"tasks": []any{
				map[string]any{"id": "p", "run": map[string]any{"agentId": "sider", "pure": true}}}}})
		}},
		{code: mediator.CodeUnsafeOperation, entry: "run-workflow", scenario: func(w *walk) {
			w.h.call("run-workflow", map[string]any{"workflow": map[string]any{"tasks": []any{
				map[string]any{"id": "sneaky", "code": map[string]any{"op": "code:eval", "expr": "1"}}}}})
		}},
		{code: mediator.CodePageChanged, entry: "log-denial (the extension refuses a page call for a document that is gone)", scenario: func(w *walk) {
			w.h.mustOK("log-denial", map[string]any{"agentId": "reader", "permission": "page.read", "code": "page_changed",
				"context": map[string]any{"reason": "the tab navigated away"}}, nil)
		}},
		{code: mediator.CodePromptTimeout, entry: "the policy, with nobody answering", scenario: func(w *walk) {
			p := mediator.NewPolicy(w.h.st, mediator.PolicyOptions{Prompter: silentPrompter{}, PromptTimeout: time.Millisecond})
			p.Authorize(context.Background(), mediator.Operation{AgentID: "reader", Name: mediator.OpNetworkFetch, Method: "POST", URL: w.web.URL + "/ok", TextLength: 1})
		}},
		{code: mediator.CodeNoBrowser, hostNever: "host mode always has its extension attached; only `nmhost run` without --page and a workflow with no browser return it (cmd/nmhost run.txtar)"},
		{code: mediator.CodeConfirmRequired, hostNever: "host mode always has a prompter (the extension); only `nmhost run` with no terminal returns it"},
		{code: mediator.CodeToolNotAllowed, hostNever: "a refusal of the MCP gateway (nmhost mcp), recorded by the core's CallTool: internal/mcpserve TestGatewayCodesReachTheDenialLog"},
		{code: mediator.CodeToolDefinitions, hostNever: "a refusal of the MCP gateway's listing of a server, recorded by the core: internal/mcpserve TestGatewayCodesReachTheDenialLog"},
		{code: mediator.CodeUnauthorized, hostNever: "the viewer's answer to a request without its token, before any agent or caller is known; the native host has no such request"},
		{code: mediator.CodeSessionLevel, entry: "python-run asking above its session's level", scenario: func(w *walk) {
			w.h.mustOK("set-session", map[string]any{"sessionId": "low one", "level": "low"}, nil)
			w.h.mustOK("install-agent", map[string]any{"profile": pyProfile("py-raise", []string{"console.log"}), "module": pySource}, nil)
			w.h.call("python-run", map[string]any{"agentId": "py-raise", "sessionId": "low one", "sessionLevel": "high"})
		}},
		{code: mediator.CodeQuotaExceeded, entry: "agent-call shell, in a workspace of 16 bytes", scenario: func(w *walk) {
			small := newHarnessWith(w.t, true, store.Options{WorkspaceLimits: workspace.Limits{MaxBytes: 16}})
			runID, _ := openPythonRun(small, "py-full", []string{"shell", "workspace.read", "workspace.write"})
			small.call("agent-call", map[string]any{"runId": runID, "agentId": "py-full", "operation": "shell",
				"params": map[string]any{"command": "echo this line is longer than sixteen bytes > full.txt"}})
			w.st = small.st
		}},
		{code: mediator.CodeMemoryBusy, entry: "run-agent asking more guest memory than the host's whole budget", scenario: func(w *walk) {
			w.h.mustOK("install-agent", map[string]any{"profile": map[string]any{"agentId": "greedy", "permissions": map[string]any{"required": []string{}},
				"capabilities": map[string]any{"maxMemory": 3 << 30}}, "module": base64.StdEncoding.EncodeToString(emptyModule)}, nil)
			w.h.call("run-agent", map[string]any{"agentId": "greedy"})
		}},
		{code: mediator.CodeAdminPolicy, entry: "grant, under an administrator's policy that blocks the permission", scenario: func(w *walk) {
			governed := newHarness(w.t, true, withAdmin(w.t, mediator.AdminPolicy{BlockedPermissions: []mediator.Permission{mediator.PermNetworkFetch}, Source: "admin file /etc/nmhost/policy.json"}))
			governed.install("governed", []string{"console.log"}, true)
			governed.call("grant", map[string]any{"agentId": "governed", "permission": "network.fetch"})
			w.st = governed.st
		}},
		{code: mediator.CodeRevokedByUser, entry: "network-fetch", scenario: func(w *walk) {
			w.h.mustOK("revoke", map[string]any{"agentId": "revoked", "permission": "network.fetch"}, nil)
			w.fetch("revoked", w.web.URL+"/ok", nil)
		}},
	}
}

// TestEveryReasonCodeReachesTheDenialLog walks every reason code the host
// can return: for each refusal, one real scenario through an entry point
// puts it in the denial log with its audit record, so a new surface
// cannot add a refusal nobody records; every code of mediator/codes.go
// has a row.
func TestEveryReasonCodeReachesTheDenialLog(t *testing.T) {
	rows := refusalScenarios()
	var have []mediator.Code
	for _, r := range rows {
		have = append(have, r.code)
	}
	for _, c := range declaredCodes(t) {
		if !slices.Contains(have, c) {
			t.Errorf("reason code %s has no row: add a scenario that puts it in the denial log, or say why it is not a refusal", c)
		}
	}
	web := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/loop" {
			http.Redirect(rw, r, "/loop", http.StatusFound)
			return
		}
		io.WriteString(rw, "ok")
	}))
	defer web.Close()
	can := newCanary(t)
	h := newHarness(t, true)
	h.install("reader", []string{"network.fetch"}, true, hostPort(web.URL), "intra.test")
	h.install("revoked", []string{"network.fetch"}, true, hostPort(web.URL))
	h.install("offline", []string{"network.fetch"}, false, hostPort(web.URL))
	h.install("nogrant", []string{"console.log"}, true, hostPort(web.URL))
	h.install("blocker", []string{"network.fetch"}, true, hostPort(web.URL))
	h.install("forger", []string{"network.fetch"}, true, hostPort(web.URL))
	prompts := &promptScript{}
	h.client.SetHostHandler(prompts.handle)
	w := &walk{t: t, h: h, web: web, canary: can, prompts: prompts}
	for _, r := range rows {
		switch {
		case r.notRefusal != "" && mediator.IsRefusal(r.code):
			t.Errorf("%s is a refusal (mediator.IsRefusal), yet its row says %q", r.code, r.notRefusal)
			continue
		case r.notRefusal != "" || r.hostNever != "":
			continue
		case !mediator.IsRefusal(r.code):
			t.Errorf("%s is not a refusal (mediator.IsRefusal); its row should say why", r.code)
			continue
		}
		t.Run(string(r.code)+" via "+r.entry, func(t *testing.T) {
			w.t, w.st = t, h.st
			r.scenario(w)
			page, err := w.st.ListDenials(context.Background(), store.DenialFilter{Code: r.code})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Denials) == 0 {
				t.Fatalf("%s: the scenario left no denial with the code", r.code)
			}
			for _, d := range page.Denials {
				if d.AuditSeq == 0 {
					t.Fatalf("denial %+v names no audit record", d)
				}
			}
		})
	}
	if n := can.Hits.Load(); n != 0 {
		t.Fatalf("the canary was reached %d times", n)
	}
}

// silentPrompter never answers: the prompt runs out of time.
type silentPrompter struct{}

func (silentPrompter) Prompt(ctx context.Context, _ mediator.PromptRequest) (mediator.Answer, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

// Hand-made modules: the smallest valid one; one that imports
// restricted_api.fetch and never calls it; one that calls it; one with
// five tables (the limit is four).
var (
	emptyModule  = []byte("\x00asm\x01\x00\x00\x00")
	fetchImport  = "\x01\x07\x01\x60\x02\x7f\x7f\x01\x7f" + "\x02\x18\x01\x0erestricted_api\x05fetch\x00\x00"
	importsFetch = []byte("\x00asm\x01\x00\x00\x00" + fetchImport)
	// start is function 1 (type 0 would need params: a second type () -> ()).
	callsFetch = []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x0a\x02\x60\x02\x7f\x7f\x01\x7f\x60\x00\x00" +
		"\x02\x18\x01\x0erestricted_api\x05fetch\x00\x00" +
		"\x03\x02\x01\x01" + "\x08\x01\x01" +
		"\x0a\x0b\x01\x09\x00\x41\x00\x41\x00\x10\x00\x1a\x0b")
	// A function of type () -> () that leaves an i32 on the stack: it
	// passes the structural checks and fails wazero's validation.
	illTyped   = []byte("\x00asm\x01\x00\x00\x00" + "\x01\x04\x01\x60\x00\x00" + "\x03\x02\x01\x00" + "\x0a\x06\x01\x04\x00\x41\x00\x0b")
	fiveTables = []byte("\x00asm\x01\x00\x00\x00" + "\x04\x10\x05" + strings.Repeat("\x70\x00\x01", 5))
)

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// declaredCodes reads every Code constant of mediator/codes.go.
func declaredCodes(t *testing.T) []mediator.Code {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../mediator/codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []mediator.Code
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for _, val := range v.Values {
				if lit, ok := val.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, mediator.Code(s))
				}
			}
		}
	}
	if len(out) < 40 {
		t.Fatalf("read only %d codes from mediator/codes.go", len(out))
	}
	return out
}
