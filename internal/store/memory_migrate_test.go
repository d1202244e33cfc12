package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// memoryWrite is one entry a host of an older version wrote.
type memoryWrite struct{ session, text string }

// buildMemoryDatabase writes dir/nmhost.db as a host of main schema
// version v left it: the first v migrations, then writes kept in the
// main database as that host kept them (from version 10: the memory
// tables; at 10 one shared index, from 11 one per session).
func buildMemoryDatabase(t *testing.T, dir string, v int, writes []memoryWrite) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: filepath.Join(dir, DBFileName)}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA journal_mode=WAL`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i := range v {
		m := migrations[i]
		if m.sql != "" {
			if _, err := tx.Exec(m.sql); err != nil {
				t.Fatalf("migration %d: %v", i, err)
			}
		}
		if m.fill != nil {
			if err := m.fill(ctx, tx); err != nil {
				t.Fatalf("migration %d: %v", i, err)
			}
		}
	}
	for _, w := range writes {
		oldWriteMemory(t, tx, v, w.session, w.text)
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, v)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// oldWriteMemory writes an entry as WriteMemory did in the main database
// at version v.
func oldWriteMemory(t *testing.T, tx *sql.Tx, v int, session, text string) {
	t.Helper()
	var num, seq int64
	err := tx.QueryRow(`SELECT num, entries FROM memory_sessions WHERE session_id = ?`, session).Scan(&num, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRow(`INSERT INTO memory_sessions (session_id, num, entries)
			SELECT ?, coalesce(max(num), 0) + 1, 0 FROM memory_sessions RETURNING num`, session).Scan(&num)
		if err == nil && v > memoryTablesVersion {
			err = createMemoryIndex(context.Background(), tx, num)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	seq++
	id := num<<memoryIDBits | seq
	index := "memory_fts"
	if v > memoryTablesVersion {
		index = memoryIndex(num)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO memory_entries (id, session_id, text, tags, created_at) VALUES (?, ?, ?, '', 0)`, []any{id, session, text}},
		{`INSERT INTO ` + index + ` (rowid, text, tags) VALUES (?, ?, '')`, []any{id, text}},
		{`UPDATE memory_sessions SET entries = ? WHERE session_id = ?`, []any{seq, session}},
	} {
		if _, err := tx.Exec(q.sql, q.args...); err != nil {
			t.Fatal(q.sql, err)
		}
	}
}

// mainMemoryTables names what of the memory is left in nmhost.db.
func mainMemoryTables(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.db.Query(`SELECT name FROM sqlite_schema WHERE name GLOB 'memory_*' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	return names
}

// memoryContent is memory.db's sessions and entries, in order, and its
// indexes' names.
func memoryContent(t *testing.T, s *Store) (sessions, entries, indexes []string) {
	t.Helper()
	db := testMemoryDB(t, s)
	read := func(q string) []string {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		return out
	}
	return read(`SELECT session_id || ' ' || num || ' ' || entries FROM memory_sessions ORDER BY num`),
		read(`SELECT id || ' ' || session_id || ' ' || text FROM memory_entries ORDER BY id`),
		read(`SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%' ORDER BY name`)
}

// searchIDs is the ids of session's hits for query, best first.
func searchIDs(t *testing.T, s *Store, session, query string) []int64 {
	t.Helper()
	hits, err := s.SearchMemory(context.Background(), session, query, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	return ids
}

var oldMemoryWrites = []memoryWrite{
	{"a", "alpha first"}, {"b", "alpha beta"}, {"a", "alpha alpha second"},
	{"c", "gamma only"}, {"a", "third of a"}, {"b", "beta again"},
}

// TestMemoryMigration: a database from before the memory schema (version
// 9) is brought to the current one with no memory in it, and no
// memory.db made; the first write makes it.
func TestMemoryMigration(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	buildMemoryDatabase(t, dir, memoryTablesVersion-1, nil)
	s := openTestStore(t, dir)
	if left := mainMemoryTables(t, s); len(left) != 0 {
		t.Fatalf("memory tables in nmhost.db: %v", left)
	}
	if _, err := os.Stat(filepath.Join(dir, MemoryDBFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the migration made memory.db: %v", err)
	}
	if _, err := s.WriteMemory(ctx, "s", "after the migration", nil); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, s, "s", "migration"); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("search after the migration: %v", ids)
	}
}

// TestMemorySplitMigration: a database whose sessions share one index
// (schema version 10) gets one index per session holding that session's
// entries, in memory.db, searchable as before; nothing of the memory is
// left in nmhost.db.
func TestMemorySplitMigration(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	buildMemoryDatabase(t, dir, memoryTablesVersion, oldMemoryWrites)
	s := openTestStore(t, dir)
	if left := mainMemoryTables(t, s); len(left) != 0 {
		t.Fatalf("memory tables in nmhost.db: %v", left)
	}
	_, _, indexes := memoryContent(t, s)
	if want := []string{"memory_fts_1", "memory_fts_2", "memory_fts_3"}; !slices.Equal(indexes, want) {
		t.Fatalf("memory.db's indexes %v; want %v", indexes, want)
	}
	if ids := searchIDs(t, s, "a", "alpha"); !slices.Equal(ids, []int64{2, 1}) {
		t.Fatalf("session a: %v", ids)
	}
	if ids := searchIDs(t, s, "b", "alpha"); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("session b: %v", ids)
	}
	if _, err := s.WriteMemory(ctx, "d", "alpha fourth session", nil); err != nil {
		t.Fatal(err)
	}
	if ids := searchIDs(t, s, "d", "alpha"); !slices.Equal(ids, []int64{1}) {
		t.Fatalf("a new session after the migration: %v", ids)
	}
}

// TestMemoryMovesToItsOwnDatabase: the memory a version-14 host kept in
// nmhost.db is in memory.db after the migration, sessions with their
// numbers and counts, entries with their ids, each session's index
// ranking as before, and nmhost.db holds none of it.
func TestMemoryMovesToItsOwnDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	buildMemoryDatabase(t, dir, 14, oldMemoryWrites)
	s := openTestStore(t, dir)
	if v := schemaVersionOf(t, dir); v != schemaVersion {
		t.Fatalf("schema version %d; want %d", v, schemaVersion)
	}
	if left := mainMemoryTables(t, s); len(left) != 0 {
		t.Fatalf("memory tables in nmhost.db: %v", left)
	}
	sessions, entries, indexes := memoryContent(t, s)
	wantEntries := []string{
		"1048577 a alpha first", "1048578 a alpha alpha second", "1048579 a third of a",
		"2097153 b alpha beta", "2097154 b beta again", "3145729 c gamma only",
	}
	if want := []string{"a 1 3", "b 2 2", "c 3 1"}; !slices.Equal(sessions, want) {
		t.Fatalf("sessions %v; want %v", sessions, want)
	}
	if !slices.Equal(entries, wantEntries) {
		t.Fatalf("entries %v; want %v", entries, wantEntries)
	}
	if want := []string{"memory_fts_1", "memory_fts_2", "memory_fts_3"}; !slices.Equal(indexes, want) {
		t.Fatalf("indexes %v; want %v", indexes, want)
	}
	if ids := searchIDs(t, s, "a", "alpha"); !slices.Equal(ids, []int64{2, 1}) {
		t.Fatalf("session a: %v", ids)
	}
	if id, err := s.WriteMemory(ctx, "a", "alpha once more", nil); err != nil || id != 4 {
		t.Fatalf("the next entry of a: %d %v; want 4", id, err)
	}
	if _, err := s.WriteMemory(ctx, "e", "a new session", nil); err != nil {
		t.Fatal(err)
	}
	if sessions, _, _ := memoryContent(t, s); sessions[len(sessions)-1] != "e 4 1" {
		t.Fatalf("the new session's number: %v", sessions)
	}
}

// TestMemoryMoveInterrupted: a crash after memory.db holds the moved
// memory and before nmhost.db drops it leaves nmhost.db at version 14
// with its tables; the next open moves them again, replacing what
// memory.db holds, so no entry is lost or doubled, even one the old
// host wrote in between.
func TestMemoryMoveInterrupted(t *testing.T) {
	dir := t.TempDir()
	buildMemoryDatabase(t, dir, 14, oldMemoryWrites)
	crash := errors.New("killed between the two files")
	for range 2 { // twice: a move done again is done again the same way
		_, err := Open(dir, Options{Now: fixedClock(), memHooks: memHooks{moved: func() error { return crash }}})
		if !errors.Is(err, crash) {
			t.Fatalf("Open with the crash: %v", err)
		}
		if v := schemaVersionOf(t, dir); v != 14 {
			t.Fatalf("schema version %d after the crash; want 14", v)
		}
		// memory.db was written whole before the crash.
		if n := countRows(t, filepath.Join(dir, MemoryDBFileName), "memory_entries"); n != len(oldMemoryWrites) {
			t.Fatalf("memory.db holds %d entries after the crash; want %d", n, len(oldMemoryWrites))
		}
	}
	// The old host runs again and writes.
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: filepath.Join(dir, DBFileName)}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	oldWriteMemory(t, tx, 14, "c", "gamma later")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s := openTestStore(t, dir)
	if left := mainMemoryTables(t, s); len(left) != 0 {
		t.Fatalf("memory tables in nmhost.db: %v", left)
	}
	sessions, entries, indexes := memoryContent(t, s)
	if want := []string{"a 1 3", "b 2 2", "c 3 2"}; !slices.Equal(sessions, want) {
		t.Fatalf("sessions %v; want %v", sessions, want)
	}
	if len(entries) != len(oldMemoryWrites)+1 || entries[len(entries)-1] != "3145730 c gamma later" {
		t.Fatalf("entries %v", entries)
	}
	if len(indexes) != 3 {
		t.Fatalf("indexes %v", indexes)
	}
	if ids := searchIDs(t, s, "c", "gamma"); len(ids) != 2 {
		t.Fatalf("session c: %v", ids)
	}
	if ids := searchIDs(t, s, "a", "alpha"); !slices.Equal(ids, []int64{2, 1}) {
		t.Fatalf("session a: %v", ids)
	}
}

// countRows counts table's rows in the database file at path.
func countRows(t *testing.T, path, table string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
