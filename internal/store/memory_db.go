package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// MemoryDBFileName is the name of the sessions' memory database inside
// the data directory.
const MemoryDBFileName = "memory.db"

// The sessions' memory lives in a database of its own, memory.db, beside
// nmhost.db. Each session's entries are ranked in an FTS5 table of their
// own (memory.go), five schema entries each, and SQLite parses a
// database's whole schema on the first statement of every connection:
// kept in nmhost.db, every host start, every CLI command and every new
// pooled connection paid for every session that ever stored memory
// (20 ms after 600 sessions), and each session's first entry made every
// other connection parse it all again. In a file of its own, only a
// process that reads or writes memory opens it, on its first memory
// operation, never in Open. RATIONALE.md, "Why is the sessions' memory
// a database of its own?".
//
// Two files share no transaction. A session's memory is deleted in
// memory.db first, then the session's rows in nmhost.db (ephemeral.go):
// a crash between leaves the session listed, and its deletion is done
// again. The move out of nmhost.db (moveMemory) writes memory.db whole
// first, then drops the tables from nmhost.db in the main migration's
// transaction: a crash between leaves nmhost.db at the old version with
// its tables, and the next open moves them again, replacing what
// memory.db holds, so nothing is lost or counted twice.

// memoryMigrations[i] takes memory.db from user_version i to i+1, as
// migrations does for nmhost.db. Only append.
var memoryMigrations = []migration{
	{sql: memoryTables}, // 0 -> 1: the entries and the sessions' numbers; each session's index is made with its first entry (memory.go)
}

// memoryTablesVersion is the first main schema version that held the
// memory tables (schemaMemory).
const memoryTablesVersion = 10

// memoryDB is a Store's handle of memory.db.
type memoryDB struct {
	mu     sync.Mutex // guards db and closed; held while memory.db opens
	db     *sql.DB    // nil until a memory operation opened it
	closed bool

	// wmu serialises this process's memory.db write transactions, as
	// Store.wmu does nmhost.db's.
	wmu sync.Mutex

	opens atomic.Int64 // times memory.db was opened; tests read it
}

// memHooks stop a two-file step halfway, as a crash would; only tests
// set them (Options.memHooks). A hook's error fails the step.
type memHooks struct {
	// moved runs once memory.db holds the memory moved out of nmhost.db,
	// before nmhost.db drops it.
	moved func() error
	// deleted runs once a session's memory is deleted, before its rows
	// in nmhost.db are.
	deleted func(sessionID string) error
}

// memory returns memory.db, opened (and migrated) by the first call. A
// call with create false returns nil when the data directory holds no
// memory.db: no session has memory, so a search or a deletion has
// nothing to read and need not make the file.
func (s *Store) memory(ctx context.Context, create bool) (*sql.DB, error) {
	m := &s.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	if m.db != nil {
		return m.db, nil
	}
	path := filepath.Join(s.dir, MemoryDBFileName)
	if !create {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	// FULL: memory.db has no group syncer (sync.go watches nmhost.db's
	// WAL), and a memory write is durable before it is acknowledged, in
	// either durability, so each commit is fsynced as it returns.
	// A write and a few searches at once.
	db, err := openSQLite(path, s.busyTimeout, "FULL", 4)
	if err != nil {
		return nil, err
	}
	m.opens.Add(1)
	write := func(ctx context.Context, fn func(*sql.Tx) error) error { return commitTx(ctx, &m.wmu, db, fn) }
	if err := s.migrate(ctx, db, memoryMigrations, write); err != nil {
		db.Close()
		return nil, fmt.Errorf("store[%s]: %w", path, err)
	}
	m.db = db
	return db, nil
}

// CheckMemory opens memory.db, when the data directory has one, and
// reads it: `nmhost doctor` reports a memory.db that would fail the first
// memory operation. It reports whether there is one.
func (s *Store) CheckMemory(ctx context.Context) (bool, error) {
	db, err := s.memory(ctx, false)
	if err != nil || db == nil {
		return false, err
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM memory_sessions`).Scan(&n); err != nil {
		return true, storeErr("read memory", err)
	}
	return true, nil
}

// memWrite runs fn in one memory.db transaction and commits it, durable
// when it returns (synchronous=FULL).
func (s *Store) memWrite(ctx context.Context, fn func(tx *sql.Tx) error) error {
	db, err := s.memory(ctx, true)
	if err != nil {
		return err
	}
	return commitTx(ctx, &s.mem.wmu, db, fn)
}

// closeMemory closes memory.db if it was opened; memory operations fail
// from then on.
func (s *Store) closeMemory() error {
	m := &s.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.db == nil {
		return nil
	}
	err := m.db.Close()
	m.db = nil
	return err
}

// deleteMemory removes session's memory from memory.db (deleteMemoryTx).
// Nothing to do when there is no memory.db.
func (s *Store) deleteMemory(ctx context.Context, sessionID string) error {
	db, err := s.memory(ctx, false)
	if err != nil || db == nil {
		return err
	}
	return commitTx(ctx, &s.mem.wmu, db, func(tx *sql.Tx) error { return deleteMemoryTx(ctx, tx, sessionID) })
}

// moveMemory is main step 14 -> 15: the memory tables leave nmhost.db.
// When nmhost.db held them before this migration began, memory.db is
// made to hold exactly what they hold (copyMemory), committed, and only
// then are they dropped here, in the main migration's transaction. A
// migration that began below version 10 made them empty in this very
// transaction: they hold nothing to move, and memory.db, if any, is
// left as it is.
func moveMemory(ctx context.Context, s *Store, tx *sql.Tx, from int) error {
	if from >= memoryTablesVersion {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema
			WHERE type = 'table' AND name IN ('memory_entries', 'memory_sessions')`).Scan(&n); err != nil {
			return err
		}
		if n == 2 {
			if err := s.copyMemory(ctx, tx); err != nil {
				return err
			}
		}
	}
	if h := s.memHooks.moved; h != nil {
		if err := h(); err != nil {
			return err
		}
	}
	if err := dropMemoryIndexes(ctx, tx); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS memory_entries; DROP TABLE IF EXISTS memory_sessions`)
	return err
}

// copyMemory replaces what memory.db holds with the memory tables of
// main, nmhost.db's migration transaction, in one memory.db transaction:
// the sessions with their numbers and counts, the entries with their
// ids, and each session's index built afresh in id order. Run again
// after a crash that kept main's tables, it gives the same memory.db.
func (s *Store) copyMemory(ctx context.Context, main *sql.Tx) error {
	var held bool
	if err := main.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM memory_sessions) OR EXISTS (SELECT 1 FROM memory_entries)`).Scan(&held); err != nil {
		return err
	}
	if !held {
		if _, err := os.Stat(filepath.Join(s.dir, MemoryDBFileName)); errors.Is(err, fs.ErrNotExist) {
			return nil // nothing to move, and nothing to replace
		}
	}
	return s.memWrite(ctx, func(mem *sql.Tx) error {
		if err := dropMemoryIndexes(ctx, mem); err != nil {
			return err
		}
		if _, err := mem.ExecContext(ctx, `DELETE FROM memory_entries; DELETE FROM memory_sessions`); err != nil {
			return err
		}
		if err := copyRows(ctx, main, mem, `SELECT session_id, num, entries FROM memory_sessions`,
			`INSERT INTO memory_sessions (session_id, num, entries) VALUES (?, ?, ?)`, 3); err != nil {
			return err
		}
		if err := copyRows(ctx, main, mem, `SELECT id, session_id, text, tags, created_at FROM memory_entries ORDER BY id`,
			`INSERT INTO memory_entries (id, session_id, text, tags, created_at) VALUES (?, ?, ?, ?, ?)`, 5); err != nil {
			return err
		}
		return indexMemorySessions(ctx, mem)
	})
}

// copyRows inserts each row of query in from with insert in to; a row
// has n columns.
func copyRows(ctx context.Context, from, to *sql.Tx, query, insert string, n int) error {
	ins, err := to.PrepareContext(ctx, insert)
	if err != nil {
		return err
	}
	defer ins.Close()
	rows, err := from.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if _, err := ins.ExecContext(ctx, vals...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// dropMemoryIndexes drops every memory index in tx's database: the
// sessions' tables and the shared one of version 10. They are found in
// the schema, not through memory_sessions, so none is left behind.
func dropMemoryIndexes(ctx context.Context, tx *sql.Tx) error {
	names, err := queryColumn[string](ctx, tx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'
		AND (name = 'memory_fts' OR name GLOB 'memory_fts_[0-9]*')`)
	if err != nil {
		return err
	}
	for _, n := range names {
		// The names matched memory_fts or memory_fts_<digits>: plain
		// identifiers.
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+n); err != nil {
			return err
		}
	}
	return nil
}
