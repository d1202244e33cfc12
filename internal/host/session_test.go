package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

var fsprobe = sync.OnceValues(func() ([]byte, error) { return testwasm.Build("../../wasmhost/testdata/fsprobe") })

// TestRunsWorkInTheirSession: a run writes a file in its session's
// workspace, a second run of the same session reads it, a run in another
// session does not see it; a run may lower its session's level, never
// raise it; a run without a session gets a fresh one, named in its result.
func TestRunsWorkInTheirSession(t *testing.T) {
	module, err := fsprobe()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, true)
	// A Go module's first compile counts against executionTimeout, and
	// under the race detector on a busy machine it takes many seconds.
	h.mustOK("install-agent", map[string]any{"profile": map[string]any{
		"agentId": "files", "permissionSet": "filesystem", "permissions": map[string]any{"required": []string{}},
		"capabilities": map[string]any{"maxMemory": 33554432, "executionTimeout": 300000},
	}, "module": base64.StdEncoding.EncodeToString(module)}, nil)
	ctx := context.Background()
	for _, id := range []string{"s1", "s2"} {
		if _, err := h.st.UpdateSessionSettings(ctx, id, []byte(`{"permission_level":"medium"}`)); err != nil {
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
	if set, err := h.st.SessionSettings(ctx, fresh); err != nil || set.PermissionLevel != mediator.LevelMedium {
		t.Fatalf("%v %+v", err, set)
	}
}
