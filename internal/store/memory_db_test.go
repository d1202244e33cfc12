package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenDoesNotOpenMemory: with 20 sessions' memory stored, what
// every host start and CLI command does (Open, a read, Close) never
// opens memory.db, so it never parses a memory index's schema, and
// nmhost.db holds none of them. The first memory operation opens it,
// once. What is checked is counted (the store's opens of memory.db, the
// tables in each file), not timed, so 20 sessions show it as 200 did:
// each session's first write changes memory.db's schema, which SQLite
// parses again whole, and 200 took 6 s of CPU under the race detector.
func TestOpenDoesNotOpenMemory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestStore(t, dir)
	if _, err := s.ListAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SearchMemory(ctx, "s", "anything", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MemoryEntries(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if n := s.mem.opens.Load(); n != 0 {
		t.Fatalf("memory.db opened %d times on a data dir without it", n)
	}
	if _, err := os.Stat(filepath.Join(dir, MemoryDBFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reads made memory.db: %v", err)
	}
	const sessions = 20
	for i := range sessions {
		if _, err := s.WriteMemory(ctx, fmt.Sprintf("session-%d", i), "a note to keep", nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.mem.opens.Load(); n != 1 {
		t.Fatalf("memory.db opened %d times by %d writes; want once", n, sessions)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteMemory(ctx, "session-0", "after Close", nil); err == nil {
		t.Fatal("a memory write after Close succeeded")
	}

	s = openTestStore(t, dir)
	if _, err := s.ListAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if n := s.mem.opens.Load(); n != 0 {
		t.Fatalf("Open and ListAgents opened memory.db %d times", n)
	}
	if left := mainMemoryTables(t, s); len(left) != 0 {
		t.Fatalf("memory tables in nmhost.db: %v", left)
	}
	if n, err := s.MemoryEntries(ctx, fmt.Sprintf("session-%d", sessions-1)); err != nil || n != 1 {
		t.Fatalf("MemoryEntries = %d, %v", n, err)
	}
	if n := s.mem.opens.Load(); n != 1 {
		t.Fatalf("memory.db opened %d times by a memory read; want once", n)
	}
	if _, _, indexes := memoryContent(t, s); len(indexes) != sessions {
		t.Fatalf("memory.db holds %d indexes; want %d", len(indexes), sessions)
	}
}

// TestTwoStoresShareMemory: two Stores on one data dir (two processes)
// see each other's memory, and numbers stay apart.
func TestTwoStoresShareMemory(t *testing.T) {
	ctx := context.Background()
	dir := freshDir(t)
	s1, s2 := openTestStore(t, dir), openTestStore(t, dir)
	for i, s := range []*Store{s1, s2, s1, s2} {
		if _, err := s.WriteMemory(ctx, "shared", fmt.Sprintf("note %d from a store", i), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteMemory(ctx, fmt.Sprintf("own-%d", i), "own note", nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Store{s1, s2} {
		if n, err := s.MemoryEntries(ctx, "shared"); err != nil || n != 4 {
			t.Fatalf("shared entries %d %v; want 4", n, err)
		}
		if ids := searchIDs(t, s, "shared", "note"); len(ids) != 4 {
			t.Fatalf("shared hits %v", ids)
		}
	}
	sessions, _, indexes := memoryContent(t, s1)
	if len(sessions) != 5 || len(indexes) != 5 {
		t.Fatalf("sessions %v, indexes %v", sessions, indexes)
	}
}

// TestEphemeralMemoryDeletionInterrupted: a failure (or a crash) after a
// run's session lost its memory in memory.db and before its rows in
// nmhost.db leaves the session listed as ephemeral, with no memory; the
// next sweep removes the rest.
func TestEphemeralMemoryDeletionInterrupted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	crash := errors.New("killed between the two files")
	s, err := Open(dir, Options{Now: func() time.Time { return t0 }, EphemeralSessionAge: time.Hour,
		memHooks: memHooks{deleted: func(string) error { return crash }}})
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.OpenRun(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	useRun(t, s, in)
	if err := in.Close(); !errors.Is(err, crash) {
		t.Fatalf("Close with the crash: %v", err)
	}
	// (Reading its settings makes its workspace directory again.)
	left := ephemeralLeft(t, s, in.Session)
	if fmt.Sprint(left) != "[settings workspace directory ephemeral listing]" {
		t.Fatalf("after the crash the session left %v; want all but its memory", left)
	}
	s.Close()

	s, err = Open(dir, Options{Now: func() time.Time { return t0.Add(time.Hour) }, EphemeralSessionAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if left := ephemeralLeft(t, s, in.Session); len(left) != 0 {
		t.Fatalf("after the sweep the session left %v", left)
	}
}

// TestCheckMemory: doctor's check finds no memory.db on a fresh data
// dir, reads one that is there, and reports one that is not a database.
func TestCheckMemory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestStore(t, dir)
	if found, err := s.CheckMemory(ctx); found || err != nil {
		t.Fatalf("fresh: %v %v", found, err)
	}
	if _, err := s.WriteMemory(ctx, "s", "a note", nil); err != nil {
		t.Fatal(err)
	}
	if found, err := s.CheckMemory(ctx); !found || err != nil {
		t.Fatalf("after a write: %v %v", found, err)
	}
	s.Close()

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, MemoryDBFileName), []byte("not a database, not at all, for sure"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, bad)
	if found, err := s.CheckMemory(ctx); err == nil {
		t.Fatalf("a broken memory.db passed: %v", found)
	}
	if n := s.mem.opens.Load(); n != 1 {
		t.Fatalf("opens %d", n)
	}
}

// TestMemoryWritesAreOnDiskWhenAcknowledged: memory.db is in WAL mode
// with synchronous=FULL, so a memory write's commit is fsynced before
// WriteMemory returns, with no syncer to wait for, in the default
// (written) durability as in the strict one; and the file is private.
func TestMemoryWritesAreOnDiskWhenAcknowledged(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{SyncWindow: MaxSyncWindow})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.WriteMemory(context.Background(), "s", "a note", nil); err != nil {
		t.Fatal(err)
	}
	var mode string
	var sync, version int
	db := testMemoryDB(t, s)
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || sync != 2 || version != len(memoryMigrations) {
		t.Fatalf("journal_mode=%s synchronous=%d user_version=%d; want wal 2 (FULL) %d", mode, sync, version, len(memoryMigrations))
	}
	for _, name := range []string{MemoryDBFileName, MemoryDBFileName + "-wal"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is %#o; want 0600", name, fi.Mode().Perm())
		}
	}
}
