package store

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

func TestSessionSettingsLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, t.TempDir())

	_, err := s.SessionSettings(ctx, "chat-001")
	wantCode(t, err, mediator.CodeUnknownSession)

	set, err := s.UpdateSessionSettings(ctx, "chat-001", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(s.Dir(), "session-workspaces", WorkspaceDirName("chat-001"))
	want := mediator.SessionSettings{PermissionLevel: mediator.LevelMedium, Workspace: mediator.SessionWorkspace{Mode: "session", RootDir: root}}
	if set != want {
		t.Fatalf("new session = %+v; want %+v", set, want)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("workspace dir: %v %v", fi, err)
	}

	if set, err = s.UpdateSessionSettings(ctx, "chat-001", []byte(`{"permission_level":"low"}`)); err != nil || set.PermissionLevel != mediator.LevelLow {
		t.Fatalf("set low: %+v %v", set, err)
	}
	// A patch without a level keeps the stored one; a workspace naming the
	// host's own root and mode is accepted.
	patch := `{"workspace":{"mode":"session","root_dir":` + quote(root) + `}}`
	if set, err = s.UpdateSessionSettings(ctx, "chat-001", []byte(patch)); err != nil || set.PermissionLevel != mediator.LevelLow {
		t.Fatalf("workspace-only patch: %+v %v", set, err)
	}
	if got, err := s.SessionSettings(ctx, "chat-001"); err != nil || got != set {
		t.Fatalf("read back %+v %v; want %+v", got, err, set)
	}
	// Sessions are separate: B's workspace is not A's.
	b, err := s.UpdateSessionSettings(ctx, "chat-002", []byte(`{"permission_level":"high"}`))
	if err != nil || b.Workspace.RootDir == set.Workspace.RootDir || b.PermissionLevel != mediator.LevelHigh {
		t.Fatalf("session B: %+v %v", b, err)
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func TestSessionSettingsRefusesHostilePatches(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, t.TempDir())
	before, err := s.UpdateSessionSettings(ctx, "s1", []byte(`{"permission_level":"low"}`))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/session_patches.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "\t")
		code, patch, _ := strings.Cut(rest, "\t")
		n++
		t.Run(name, func(t *testing.T) {
			_, err := s.UpdateSessionSettings(ctx, "s1", []byte(patch))
			wantCode(t, err, mediator.Code(code))
			if got, _ := s.SessionSettings(ctx, "s1"); got != before {
				t.Errorf("a refused patch changed the settings to %+v", got)
			}
		})
	}
	if n < 15 {
		t.Fatalf("read only %d fixtures", n)
	}
	t.Run("oversized", func(t *testing.T) {
		big := `{"workspace":{"mode":"session"` + strings.Repeat(" ", MaxSessionPatchBytes) + `}}`
		_, err := s.UpdateSessionSettings(ctx, "s1", []byte(big))
		wantCode(t, err, mediator.CodeTooLarge)
	})
}

// FuzzSessionPatch: a patch is refused whole or yields settings with a
// known level and the host's own workspace, never anything else.
func FuzzSessionPatch(f *testing.F) {
	for _, s := range []string{`{}`, `{"permission_level":"low"}`, `{"workspace":{"mode":"session"}}`, `{"workspace":{"root_dir":"/"}}`, `{"permission_level":null}`} {
		f.Add([]byte(s))
	}
	s := openTestStore(f, f.TempDir())
	f.Fuzz(func(t *testing.T, patch []byte) {
		set, err := s.UpdateSessionSettings(context.Background(), "fz", patch)
		if err != nil {
			return
		}
		if _, err := mediator.ParseLevel(set.PermissionLevel); err != nil || set.PermissionLevel == "" {
			t.Fatalf("stored level %q from %q", set.PermissionLevel, patch)
		}
		if set.Workspace != (mediator.SessionWorkspace{Mode: mediator.WorkspaceModeSession, RootDir: s.SessionWorkspaceDir("fz")}) {
			t.Fatalf("workspace %+v from %q", set.Workspace, patch)
		}
	})
}
