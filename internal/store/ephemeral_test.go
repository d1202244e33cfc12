package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// ephemeralLeft reports what is left of session id: its settings, its
// workspace directory, its memory entries, memory indexes of any session,
// and its listing as ephemeral.
func ephemeralLeft(t *testing.T, s *Store, id string) []string {
	t.Helper()
	ctx := context.Background()
	var left []string
	if _, err := s.SessionSettings(ctx, id); mediator.CodeOf(err) != mediator.CodeUnknownSession {
		left = append(left, "settings")
	}
	if _, err := os.Lstat(s.SessionWorkspaceDir(id)); !os.IsNotExist(err) {
		left = append(left, "workspace directory")
	}
	if n, err := s.MemoryEntries(ctx, id); err != nil || n != 0 {
		left = append(left, "memory count")
	}
	var n int
	if err := testMemoryDB(t, s).QueryRow(`SELECT count(*) FROM memory_entries WHERE session_id = ?`, id).Scan(&n); err != nil || n != 0 {
		left = append(left, "memory entries")
	}
	if err := s.db.QueryRow(`SELECT count(*) FROM ephemeral_sessions WHERE session_id = ?`, id).Scan(&n); err != nil || n != 0 {
		left = append(left, "ephemeral listing")
	}
	return left
}

// memoryIndexes counts the per-session memory indexes in memory.db.
func memoryIndexes(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := testMemoryDB(t, s).QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name GLOB 'memory_fts_[0-9]*' AND sql IS NOT NULL AND sql LIKE 'CREATE VIRTUAL%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// useRun leaves what a run leaves: a file in the workspace and an entry
// in the session's memory.
func useRun(t *testing.T, s *Store, in Run) {
	t.Helper()
	if err := in.Workspace.WriteFile("notes.txt", []byte("kept?"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteMemory(context.Background(), in.Session, "a note of the run", []string{"run"}); err != nil {
		t.Fatal(err)
	}
}

// TestRunWithoutSessionLeavesNothing: a run that names no session works
// in a fresh session, named in the Run, that Close removes whole; a run
// that names one leaves it as it was.
func TestRunWithoutSessionLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	if _, err := s.UpdateSessionSettings(ctx, "named", []byte(`{"permissionLevel":"low"}`)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, session, level string
		ephemeral            bool
	}{
		{"no session", "", "", true},
		{"no session, asking for low", "", "low", true},
		{"a named session", "named", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := memoryIndexes(t, s)
			in, err := s.OpenRun(ctx, tc.session, tc.level)
			if err != nil {
				t.Fatal(err)
			}
			if in.Ephemeral != tc.ephemeral || in.Session == "" || (tc.ephemeral && !strings.HasPrefix(in.Session, "run-")) {
				t.Fatalf("run %+v; want ephemeral %v", in, tc.ephemeral)
			}
			useRun(t, s, in)
			if left := ephemeralLeft(t, s, in.Session); len(left) < 3 {
				t.Fatalf("during the run only %v of the session exist", left)
			}
			if err := in.Close(); err != nil {
				t.Fatal(err)
			}
			left := ephemeralLeft(t, s, in.Session)
			if tc.ephemeral {
				if len(left) != 0 {
					t.Fatalf("after Close the run's session left %v", left)
				}
				if after := memoryIndexes(t, s); after != before {
					t.Fatalf("memory indexes %d -> %d", before, after)
				}
				for _, si := range must(s.ListSessions(ctx)) {
					if si.ID == in.Session {
						t.Fatalf("the session is still listed: %+v", si)
					}
				}
				return
			}
			if hits, err := s.SearchMemory(ctx, "named", "note", 0); err != nil || len(hits) != 1 {
				t.Fatalf("the named session's memory after Close: %+v %v", hits, err)
			}
			if _, err := os.Stat(filepath.Join(s.SessionWorkspaceDir("named"), "notes.txt")); err != nil {
				t.Fatalf("the named session's workspace after Close: %v", err)
			}
			// Nothing removes a session that is not ephemeral.
			if err := s.DeleteEphemeralSession(ctx, "named"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.SessionSettings(ctx, "named"); err != nil {
				t.Fatalf("DeleteEphemeralSession removed a named session: %v", err)
			}
		})
	}
	t.Run("the zero Run closes", func(t *testing.T) {
		if err := (Run{}).Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestKilledRunSessionIsSwept: a host killed mid-run never closes its
// Run; the next Open removes the session once it is older than the age,
// and not before.
func TestKilledRunSessionIsSwept(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	open := func(at time.Time) *Store {
		t.Helper()
		s, err := Open(dir, Options{Now: func() time.Time { return at }, EphemeralSessionAge: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(t0)
	if _, err := s.UpdateSessionSettings(ctx, "named", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	in, err := s.OpenRun(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	useRun(t, s, in)
	in.Workspace.Close() // the process ends; Run.Close never runs
	s.Close()

	s = open(t0.Add(59 * time.Minute))
	if left := ephemeralLeft(t, s, in.Session); len(left) != 5 {
		t.Fatalf("younger than the age, the session was swept: only %v left", left)
	}
	s.Close()
	s = open(t0.Add(time.Hour))
	defer s.Close()
	if left := ephemeralLeft(t, s, in.Session); len(left) != 0 {
		t.Fatalf("at the age, the session left %v", left)
	}
	if memoryIndexes(t, s) != 0 {
		t.Fatalf("a memory index is left")
	}
	if _, err := s.SessionSettings(ctx, "named"); err != nil {
		t.Fatalf("the sweep removed a named session: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
