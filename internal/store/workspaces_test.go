package store

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// hostileSessionIDs are ids that would name another directory, or no
// safe one, if an id were a file name. Each is a valid session id.
var hostileSessionIDs = map[string]string{
	"dotdot":           "..",
	"dot":              ".",
	"only-dots":        "....",
	"slash":            "/",
	"climb":            "a/../b",
	"climb-out":        "../../outside",
	"absolute":         "/etc/passwd",
	"backslash":        `..\..\outside`,
	"drive":            `C:\Windows`,
	"very-long":        strings.Repeat("x", mediator.MaxSessionIDLen),
	"long-multibyte":   strings.Repeat("日", mediator.MaxSessionIDLen/3),
	"lookalike-slash":  "a\u2215b",      // DIVISION SLASH
	"lookalike-dots":   "\u2024\u2024",  // ONE DOT LEADER twice
	"fullwidth-dots":   "\uff0e\uff0e/", // FULLWIDTH FULL STOP
	"windows-con":      "CON",
	"windows-nul-ext":  "NUL.txt",
	"windows-com1":     "com1",
	"trailing-dot":     "notes.",
	"trailing-space":   "notes ",
	"spaces":           "chat 2026-11-23",
	"percent":          "50%/done",
	"hidden":           ".ssh",
	"tilde":            "~root",
	"old-looking-name": "s1~" + strings.Repeat("0", 32),
}

// TestHostileSessionIDsStayInTheirWorkspace: every hostile id is a
// session whose workspace is one new entry in session-workspaces, a
// single safe name; a canary file next to session-workspaces and the
// data dir's own files are untouched.
func TestHostileSessionIDsStayInTheirWorkspace(t *testing.T) {
	ctx := context.Background()
	dir := freshDir(t)
	s := openTestStore(t, dir)
	canary := filepath.Join(dir, "canary.txt")
	if err := os.WriteFile(canary, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(dir, "session-workspaces")
	seen := map[string]string{}
	for name, id := range hostileSessionIDs {
		t.Run(name, func(t *testing.T) {
			set, err := s.UpdateSessionSettings(ctx, id, []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			root := set.Workspace.RootDir
			if filepath.Dir(root) != parent {
				t.Fatalf("workspace %q is not directly in %s", root, parent)
			}
			base := filepath.Base(root)
			if len(base) > 64 || base != WorkspaceDirName(id) || strings.ContainsAny(base, `/\.: `) || !utf8.ValidString(base) {
				t.Fatalf("workspace name %q is not one safe short name", base)
			}
			if other, dup := seen[base]; dup {
				t.Fatalf("ids %q and %q share workspace %s", id, other, base)
			}
			seen[base] = id
			ws, err := s.OpenWorkspace(id)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			if err := ws.WriteFile("note.txt", []byte(id), false); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(filepath.Join(root, "note.txt")); err != nil || string(b) != id {
				t.Fatalf("note in %s: %q %v", root, b, err)
			}
			if fi, err := os.Stat(root); err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("workspace mode: %v %v", fi, err)
			}
			if got, err := s.SessionSettings(ctx, id); err != nil || got.Workspace.RootDir != root {
				t.Fatalf("read back %+v %v", got, err)
			}
		})
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "untouched" {
		t.Fatalf("canary: %q %v", b, err)
	}
	// Each workspace is one directory and, beside it, its ledger.
	ents, err := os.ReadDir(parent)
	if err != nil || len(ents) != 2*len(hostileSessionIDs) {
		t.Fatalf("%d entries in session-workspaces for %d sessions (%v)", len(ents), len(hostileSessionIDs), err)
	}
	for _, e := range ents {
		if d, ok := strings.CutSuffix(e.Name(), workspace.LedgerSuffix); ok && seen[d] == "" {
			t.Errorf("ledger %s is beside no workspace", e.Name())
		}
	}
	top, _ := os.ReadDir(dir)
	for _, e := range top {
		if e.Name() != "session-workspaces" && e.Name() != "canary.txt" && !strings.HasPrefix(e.Name(), "nmhost.db") && !strings.HasPrefix(e.Name(), "audit") {
			t.Errorf("unexpected entry %q in the data dir", e.Name())
		}
	}
}

// TestInvalidSessionIDsAreRefused: what is not a session id at all
// (empty, over 256 bytes, not UTF-8, control characters) is
// unknown_session and creates nothing.
func TestInvalidSessionIDsAreRefused(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	for name, id := range map[string]string{
		"empty":       "",
		"too-long":    strings.Repeat("a", mediator.MaxSessionIDLen+1),
		"nul":         "a\x00b",
		"only-nul":    "\x00",
		"newline":     "a\nb",
		"escape":      "a\x1b[2Jb",
		"del":         "a\x7fb",
		"c1-control":  "a\u0085b",
		"not-utf8":    "a\xffb",
		"half-rune":   "\xe6\x97",
		"nul-dotdot":  "..\x00/x",
		"tab":         "a\tb",
		"carriage-cr": "id\r",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.UpdateSessionSettings(ctx, id, []byte(`{}`))
			wantCode(t, err, mediator.CodeUnknownSession)
			_, err = s.SessionSettings(ctx, id)
			wantCode(t, err, mediator.CodeUnknownSession)
			_, err = s.OpenWorkspace(id)
			wantCode(t, err, mediator.CodeUnknownSession)
		})
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Dir(), "session-workspaces")); len(entries) != 0 {
		t.Fatalf("refused ids created %d workspace entries", len(entries))
	}
}

// TestOldWorkspacesMove: a workspace the old scheme named by the id is
// moved to the new name with its files the first time the session is
// read, set or opened; a link planted under an old name is not followed
// or moved, and an old-looking directory of no session stays.
func TestOldWorkspacesMove(t *testing.T) {
	ctx := context.Background()
	dir := freshDir(t)
	s := openTestStore(t, dir)
	parent := filepath.Join(dir, "session-workspaces")
	for _, id := range []string{"chat-001", "read-me", "open-me", "linked", "stray"} {
		if _, err := s.UpdateSessionSettings(ctx, id, []byte(`{"permissionLevel":"low"}`)); err != nil {
			t.Fatal(err)
		}
	}
	// Put the old layout back: the directory named by the id, with a note.
	outside := filepath.Join(dir, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"chat-001", "read-me", "open-me", "linked", "stray"} {
		if err := os.Remove(s.SessionWorkspaceDir(id)); err != nil {
			t.Fatal(err)
		}
		if id == "linked" {
			if err := os.Symlink(outside, filepath.Join(parent, id)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Join(parent, id, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(parent, id, "sub", "note.txt"), []byte("old "+id), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	steps := map[string]func(id string) error{
		"chat-001": func(id string) error { _, err := s.UpdateSessionSettings(ctx, id, []byte(`{}`)); return err },
		"read-me":  func(id string) error { _, err := s.SessionSettings(ctx, id); return err },
		"open-me": func(id string) error {
			ws, err := s.OpenWorkspace(id)
			if err == nil {
				ws.Close()
			}
			return err
		},
	}
	for id, step := range steps {
		t.Run(id, func(t *testing.T) {
			if err := step(id); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(s.SessionWorkspaceDir(id), "sub", "note.txt"))
			if err != nil || string(b) != "old "+id {
				t.Fatalf("moved note: %q %v", b, err)
			}
			if _, err := os.Lstat(filepath.Join(parent, id)); !os.IsNotExist(err) {
				t.Fatalf("old directory still there: %v", err)
			}
			if set, err := s.SessionSettings(ctx, id); err != nil || set.Workspace.RootDir != s.SessionWorkspaceDir(id) || set.PermissionLevel != mediator.LevelLow {
				t.Fatalf("settings after the move: %+v %v", set, err)
			}
		})
	}
	t.Run("planted-link", func(t *testing.T) {
		ws, err := s.OpenWorkspace("linked")
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if err := ws.WriteFile("x.txt", []byte("x"), false); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(filepath.Join(parent, "linked")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the planted link was moved: %v %v", fi, err)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Fatalf("the link's target got %d entries", len(ents))
		}
	})
	t.Run("untouched-until-used", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(parent, "stray", "sub", "note.txt")); err != nil || string(b) != "old stray" {
			t.Fatalf("%q %v", b, err)
		}
	})
}

func TestWorkspaceDirName(t *testing.T) {
	for _, tc := range []struct{ id, prefix string }{
		{"s1", "s1~"},
		{"chat 2026-11-23", "chat_2026-11-23~"},
		{"..", "__~"},
		{"日記", "______~"},
		{strings.Repeat("ab", 100), strings.Repeat("ab", 12) + "~"},
	} {
		t.Run(tc.id[:min(len(tc.id), 16)], func(t *testing.T) {
			got := WorkspaceDirName(tc.id)
			if !strings.HasPrefix(got, tc.prefix) || len(got) != len(tc.prefix)+32 {
				t.Fatalf("%q -> %q; want %q and 32 hex digits", tc.id, got, tc.prefix)
			}
		})
	}
	if WorkspaceDirName("A") == WorkspaceDirName("a") {
		t.Fatal("ids differing in case share a workspace")
	}
}

// TestOldWorkspaceNameMatchesItsPattern: the hand-written check accepts
// exactly what the old scheme's pattern did.
func TestOldWorkspaceNameMatchesItsPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)
	ids := []string{"", "a", ".", ".a", "a.", "-x", "_", "a b", "a/b", "a\x00", "é", "a\n", "A-Z_0.9",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "a" + strings.Repeat(".", 127)}
	for c := range 256 {
		ids = append(ids, string(rune(c)), "a"+string([]byte{byte(c)}), string([]byte{byte(c)})+"a")
	}
	for _, id := range ids {
		if got, want := oldWorkspaceName(id), re.MatchString(id); got != want {
			t.Errorf("oldWorkspaceName(%q) = %v, pattern says %v", id, got, want)
		}
	}
}
