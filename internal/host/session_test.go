package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

var fsprobe = sync.OnceValues(func() ([]byte, error) { return testwasm.Build("../../wasmhost/testdata/fsprobe") })

// TestRunsWorkInTheirSession: a run writes a file in its session's
// workspace, a second run of the same session reads it, a run in another
// session does not see it; a run may lower its session's level, never
// raise it; a run without a session gets a fresh one, named in its
// result and removed when the run ends.
func TestRunsWorkInTheirSession(t *testing.T) {
	h := newHarness(t, true)
	installFiles(h)
	ctx := context.Background()
	for _, id := range []string{"s1", "s2"} {
		if _, err := h.st.UpdateSessionSettings(ctx, id, []byte(`{"permissionLevel":"medium"}`)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(params map[string]any) (out, session string, r map[string]any) {
		t.Helper()
		params["agentId"] = "files"
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		rep, err := h.client.Call(cctx, "run-agent", params)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Success {
			return "", "", map[string]any{"code": string(rep.Code), "error": rep.Error}
		}
		json.Unmarshal(rep.Data, &r)
		out, _ = r["output"].(string)
		session, _ = r["sessionId"].(string)
		return out, session, r
	}
	if out, s, _ := run(map[string]any{"sessionId": "s1", "input": "write /workspace/note.txt from-s1"}); s != "s1" || !strings.Contains(out, "write /workspace/note.txt: ok") {
		t.Fatalf("%q %q", s, out)
	}
	if out, _, _ := run(map[string]any{"sessionId": "s1", "input": "read /workspace/note.txt"}); !strings.Contains(out, `"from-s1"`) {
		t.Fatalf("same session: %q", out)
	}
	if out, _, _ := run(map[string]any{"sessionId": "s2", "input": "read /workspace/note.txt\nls /workspace"}); !strings.Contains(out, "read /workspace/note.txt: error") || !strings.Contains(out, "ls /workspace: \n") {
		t.Fatalf("other session: %q", out)
	}
	if _, _, r := run(map[string]any{"sessionId": "s1", "sessionLevel": "high"}); r["code"] != string(mediator.CodeSessionLevel) {
		t.Fatalf("raised level: %v", r)
	}
	if _, _, r := run(map[string]any{"sessionId": "never-made"}); r["code"] != string(mediator.CodeUnknownSession) {
		t.Fatalf("unknown session: %v", r)
	}
	_, fresh, _ := run(map[string]any{"input": "ls /workspace"})
	if !strings.HasPrefix(fresh, "run-") {
		t.Fatalf("fresh session %q", fresh)
	}
	// The fresh session was the run's alone: it ended with the run.
	if _, err := h.st.SessionSettings(ctx, fresh); mediator.CodeOf(err) != mediator.CodeUnknownSession {
		t.Fatalf("the run's ephemeral session outlived it: %v", err)
	}
	if _, err := os.Stat(h.st.SessionWorkspaceDir(fresh)); !os.IsNotExist(err) {
		t.Fatalf("the run's ephemeral workspace outlived it: %v", err)
	}
}

// TestSessionRequests: set-session starts a session (fresh id without
// one, medium by default) or changes its level; list-sessions lists what
// set-session, the store and runs made. Hostile parameters are refused
// with their code and change nothing.
func TestSessionRequests(t *testing.T) {
	h := newHarness(t, true)
	var fresh sessionReply
	h.mustOK("set-session", map[string]any{}, &fresh)
	if !strings.HasPrefix(fresh.SessionID, "run-") || fresh.Settings.PermissionLevel != mediator.LevelMedium || fresh.Settings.Workspace.Mode != "session" {
		t.Fatalf("fresh session %+v", fresh)
	}
	var named sessionReply
	h.mustOK("set-session", map[string]any{"sessionId": "notes/../2026 日記", "level": "low"}, &named)
	if named.SessionID != "notes/../2026 日記" || named.Settings.PermissionLevel != mediator.LevelLow {
		t.Fatalf("named session %+v", named)
	}
	h.mustOK("set-session", map[string]any{"sessionId": "notes/../2026 日記"}, &named)
	if named.Settings.PermissionLevel != mediator.LevelLow {
		t.Fatalf("a set-session without a level changed it: %+v", named)
	}
	for _, c := range []struct {
		name   string
		params map[string]any
		code   mediator.Code
	}{
		{"nul in id", map[string]any{"sessionId": "a\x00b"}, mediator.CodeUnknownSession},
		{"newline in id", map[string]any{"sessionId": "a\nforged line"}, mediator.CodeUnknownSession},
		{"escape in id", map[string]any{"sessionId": "\x1b[2J"}, mediator.CodeUnknownSession},
		{"bidi override in id", map[string]any{"sessionId": "chat\u202etxt.exe"}, mediator.CodeUnknownSession},
		{"id over 256 bytes", map[string]any{"sessionId": strings.Repeat("a", 257)}, mediator.CodeUnknownSession},
		{"unknown level", map[string]any{"sessionId": "x", "level": "root"}, mediator.CodeInvalidLevel},
		{"level with case", map[string]any{"sessionId": "x", "level": "HIGH"}, mediator.CodeInvalidLevel},
		{"workspace root from the client", map[string]any{"sessionId": "x", "rootDir": "/etc"}, mediator.CodeBadRequest},
		{"id as a number", map[string]any{"sessionId": 7}, mediator.CodeBadRequest},
		{"list with a filter", nil, mediator.CodeBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.params == nil {
				h.wantCode(h.call("list-sessions", map[string]any{"agentId": "x"}), c.code)
				return
			}
			h.wantCode(h.call("set-session", c.params), c.code)
		})
	}
	var list struct {
		Sessions []store.SessionInfo `json:"sessions"`
	}
	h.mustOK("list-sessions", map[string]any{}, &list)
	got := map[string]string{}
	for _, s := range list.Sessions {
		got[s.ID] = s.Settings.PermissionLevel
		if s.Settings.Workspace.RootDir != h.st.SessionWorkspaceDir(s.ID) || s.CreatedAt == 0 || s.UpdatedAt < s.CreatedAt {
			t.Errorf("listed %+v", s)
		}
	}
	if len(got) != 2 || got[fresh.SessionID] != mediator.LevelMedium || got["notes/../2026 日記"] != mediator.LevelLow {
		t.Fatalf("list-sessions = %v; the refused requests must have made none", got)
	}
}

// TestEveryRunKindHasASession: python-run and run-workflow take a
// session like run-agent: a named one at its level (lowered, never
// raised), or a fresh one named in the reply; a workflow's agent tasks
// work in the session's workspace.
func TestEveryRunKindHasASession(t *testing.T) {
	h := newHarness(t, true)
	installFiles(h)
	h.mustOK("install-agent", map[string]any{"profile": pyProfile("py", []string{"console.log"}), "module": pySource}, nil)
	ctx := context.Background()
	if _, err := h.st.UpdateSessionSettings(ctx, "s/1", []byte(`{"permissionLevel":"medium"}`)); err != nil {
		t.Fatal(err)
	}
	t.Run("python-run", func(t *testing.T) {
		var out struct {
			SessionID string `json:"sessionId"`
		}
		h.mustOK("python-run", map[string]any{"agentId": "py", "sessionId": "s/1", "sessionLevel": "low"}, &out)
		if out.SessionID != "s/1" {
			t.Fatalf("python-run session %q", out.SessionID)
		}
		h.mustOK("python-run", map[string]any{"agentId": "py"}, &out)
		if !strings.HasPrefix(out.SessionID, "run-") {
			t.Fatalf("python-run fresh session %q", out.SessionID)
		}
		h.wantCode(h.call("python-run", map[string]any{"agentId": "py", "sessionId": "s/1", "sessionLevel": "high"}), mediator.CodeSessionLevel)
		h.wantCode(h.call("python-run", map[string]any{"agentId": "py", "sessionId": "never-made"}), mediator.CodeUnknownSession)
		h.wantCode(h.call("python-run", map[string]any{"agentId": "py", "sessionId": "a\x00b"}), mediator.CodeUnknownSession)
	})
	t.Run("run-workflow", func(t *testing.T) {
		wf := map[string]any{"id": "notes", "tasks": []any{
			map[string]any{"id": "w", "run": map[string]any{"agentId": "files", "input": "write /workspace/wf.txt from-workflow"}},
		}}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		rep, err := h.client.Call(cctx, "run-workflow", map[string]any{"sessionId": "s/1", "workflow": wf})
		if err != nil || !rep.Success {
			t.Fatalf("run-workflow: %v %+v", err, rep)
		}
		var sum struct {
			SessionID string `json:"sessionId"`
			Status    string `json:"status"`
		}
		json.Unmarshal(rep.Data, &sum)
		if sum.SessionID != "s/1" || sum.Status != "ok" {
			t.Fatalf("run-workflow reply %s", rep.Data)
		}
		b, err := os.ReadFile(filepath.Join(h.st.SessionWorkspaceDir("s/1"), "wf.txt"))
		if err != nil || string(b) != "from-workflow" {
			t.Fatalf("the workflow's file in the session's workspace: %q %v", b, err)
		}
		h.wantCode(h.call("run-workflow", map[string]any{"sessionId": "s/1", "sessionLevel": "high", "workflow": wf}), mediator.CodeSessionLevel)
		h.wantCode(h.call("run-workflow", map[string]any{"sessionId": "never-made", "workflow": wf}), mediator.CodeUnknownSession)
		rep, err = h.client.Call(cctx, "run-workflow", map[string]any{"workflow": map[string]any{"tasks": []any{
			map[string]any{"id": "c", "code": map[string]any{"op": "code:map", "expr": "1"}}}}})
		if err != nil || !rep.Success {
			t.Fatalf("run-workflow without a session: %v %+v", err, rep)
		}
		json.Unmarshal(rep.Data, &sum)
		if !strings.HasPrefix(sum.SessionID, "run-") {
			t.Fatalf("fresh workflow session %q", sum.SessionID)
		}
	})
}

// installFiles installs the fsprobe module as agent "files" under the
// filesystem set, granted the workspace. A Go module's first compile counts against
// executionTimeout, and under the race detector on a busy machine it
// takes many seconds, hence the long timeout.
func installFiles(h *harness) {
	h.t.Helper()
	module, err := fsprobe()
	if err != nil {
		h.t.Fatal(err)
	}
	h.mustOK("install-agent", map[string]any{"profile": map[string]any{
		"agentId": "files", "permissionSet": "filesystem", "permissions": map[string]any{"required": []string{"workspace.read", "workspace.write"}},
		"capabilities": map[string]any{"maxMemory": 33554432, "executionTimeout": 300000},
	}, "module": base64.StdEncoding.EncodeToString(module)}, nil)
}
