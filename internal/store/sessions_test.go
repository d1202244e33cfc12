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
	s := openTestStore(t, freshDir(t))

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

	if set, err = s.UpdateSessionSettings(ctx, "chat-001", []byte(`{"permissionLevel":"low"}`)); err != nil || set.PermissionLevel != mediator.LevelLow {
		t.Fatalf("set low: %+v %v", set, err)
	}
	// A patch without a level keeps the stored one; a workspace naming the
	// host's own root and mode is accepted.
	patch := `{"workspace":{"mode":"session","rootDir":` + quote(root) + `}}`
	if set, err = s.UpdateSessionSettings(ctx, "chat-001", []byte(patch)); err != nil || set.PermissionLevel != mediator.LevelLow {
		t.Fatalf("workspace-only patch: %+v %v", set, err)
	}
	if got, err := s.SessionSettings(ctx, "chat-001"); err != nil || got != set {
		t.Fatalf("read back %+v %v; want %+v", got, err, set)
	}
	// Sessions are separate: B's workspace is not A's.
	b, err := s.UpdateSessionSettings(ctx, "chat-002", []byte(`{"permissionLevel":"high"}`))
	if err != nil || b.Workspace.RootDir == set.Workspace.RootDir || b.PermissionLevel != mediator.LevelHigh {
		t.Fatalf("session B: %+v %v", b, err)
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func TestSessionSettingsRefusesHostilePatches(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	before, err := s.UpdateSessionSettings(ctx, "s1", []byte(`{"permissionLevel":"low"}`))
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
	for _, s := range []string{`{}`, `{"permissionLevel":"low"}`, `{"workspace":{"mode":"session"}}`, `{"workspace":{"rootDir":"/"}}`, `{"permissionLevel":null}`} {
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

// TestMigrationNamesSessionSettingsAsTheWire: settings stored with the old
// member names (schema 12) read back with the level they had; a row of
// another shape is not rewritten into a level it never had.
func TestMigrationNamesSessionSettingsAsTheWire(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestStore(t, dir)
	root := s.SessionWorkspaceDir("old")
	rows := map[string]string{
		"old":   `{"permission_level":"high","workspace":{"mode":"session","root_dir":"` + root + `"}}`,
		"other": `{"permissionLevel":"low","workspace":{"mode":"session","rootDir":"x"}}`,
	}
	for id, settings := range rows {
		if _, err := s.db.Exec(`INSERT INTO session_settings (session_id, settings, created_at, updated_at) VALUES (?, ?, 1, 1)`, id, settings); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec(`PRAGMA user_version = 12`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestStore(t, dir)
	set, err := s.SessionSettings(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if set.PermissionLevel != "high" || set.Workspace.RootDir != root {
		t.Fatalf("migrated settings %+v; want level high, root %s", set, root)
	}
	var raw string
	if err := s.db.QueryRow(`SELECT settings FROM session_settings WHERE session_id = 'other'`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != rows["other"] {
		t.Fatalf("a row already in the new shape was rewritten: %s", raw)
	}
}
