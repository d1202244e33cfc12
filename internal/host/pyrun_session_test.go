package host

import (
	"context"
	"os"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestPythonRunWithoutSessionIsEphemeral: a Python run that names no
// session works in a fresh one, named in the reply, which python-run-end
// removes with its workspace and memory; a run in a named session leaves
// it.
func TestPythonRunWithoutSessionIsEphemeral(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, true)
	h.mustOK("install-agent", map[string]any{"profile": pyProfile("pyeph", []string{"console.log"}), "module": pySource}, nil)
	h.mustOK("set-session", map[string]any{"sessionId": "kept", "level": "medium"}, nil)
	for _, tc := range []struct {
		name, session string
		ephemeral     bool
	}{
		{"no session", "", true},
		{"a named session", "kept", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out struct{ RunID, SessionID string }
			h.mustOK("python-run", map[string]any{"agentId": "pyeph", "sessionId": tc.session}, &out)
			if out.SessionID == "" || (!tc.ephemeral && out.SessionID != tc.session) {
				t.Fatalf("python-run = %+v", out)
			}
			// What the run leaves: a memory entry (memory_write, written
			// here as the host writes it) and a workspace.
			if _, err := h.st.WriteMemory(ctx, out.SessionID, "a note", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := h.st.SessionSettings(ctx, out.SessionID); err != nil {
				t.Fatalf("during the run: %v", err)
			}
			h.mustOK("python-run-end", map[string]any{"runId": out.RunID, "agentId": "pyeph", "status": "ok"}, nil)
			_, err := h.st.SessionSettings(ctx, out.SessionID)
			n, _ := h.st.MemoryEntries(ctx, out.SessionID)
			_, statErr := os.Stat(h.st.SessionWorkspaceDir(out.SessionID))
			if tc.ephemeral {
				if mediator.CodeOf(err) != mediator.CodeUnknownSession || n != 0 || !os.IsNotExist(statErr) {
					t.Fatalf("after the end: settings %v, %d entries, workspace %v", err, n, statErr)
				}
				return
			}
			if err != nil || n != 1 {
				t.Fatalf("the named session after the end: %v, %d entries", err, n)
			}
		})
	}
}
