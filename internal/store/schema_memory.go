package store

import (
	"context"
	"database/sql"
)

// memoryTables are the sessions' memory's tables: the entries, and each
// session's number and entry count. They were in the main database from
// version 10 to 14 (schemaMemory); they are memory.db's first step
// (memory_db.go). IF NOT EXISTS: the step runs again on a database set
// back to an older version (the migration tests do).
const memoryTables = `
CREATE TABLE IF NOT EXISTS memory_entries (
	id         INTEGER PRIMARY KEY,         -- the session's num << 20 | its place in the session
	session_id TEXT NOT NULL,
	text       TEXT NOT NULL,
	tags       TEXT NOT NULL,               -- space-separated, each from the tag alphabet
	created_at INTEGER NOT NULL             -- ms since the epoch
);
CREATE TABLE IF NOT EXISTS memory_sessions (
	session_id TEXT PRIMARY KEY,
	num        INTEGER NOT NULL UNIQUE,     -- the session's block of entry ids (memory.go)
	entries    INTEGER NOT NULL
) WITHOUT ROWID;
`

// schemaMemory added the sessions' memory (memory.go) to the main
// database: memoryTables, and an FTS5 index over the entries' text and
// tags (one for all sessions; splitMemoryIndex, the next step, replaces
// it with one per session, and moveMemory, step 14 -> 15, takes them all
// to memory.db). The index keeps no copy of the text
// (content=memory_entries); snippets read it from the entries. Its rank
// is bm25 with a tag match worth half a text match.
const schemaMemory = memoryTables + `
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
	text, tags,
	content = 'memory_entries', content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO memory_fts (memory_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)');
`

// splitMemoryIndex moves the memory from the one shared index to one
// FTS5 table per session (memory.go, memoryIndex): each session's entries
// are indexed afresh in its own table, in id order, and the shared table
// is dropped, so no ranking counts another session's words from then on.
func splitMemoryIndex(ctx context.Context, tx *sql.Tx) error {
	if err := indexMemorySessions(ctx, tx); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS memory_fts`)
	return err
}

// indexMemorySessions makes each session's index in tx's database and
// fills it with the session's entries, in id order, as WriteMemory
// would have added them.
func indexMemorySessions(ctx context.Context, tx *sql.Tx) error {
	nums, err := queryColumn[int64](ctx, tx, `SELECT num FROM memory_sessions ORDER BY num`)
	if err != nil {
		return err
	}
	for _, n := range nums {
		if err := createMemoryIndex(ctx, tx, n); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+memoryIndex(n)+` (rowid, text, tags)
			SELECT id, text, tags FROM memory_entries WHERE id BETWEEN ? AND ? ORDER BY id`,
			n<<memoryIDBits, n<<memoryIDBits|memoryIDMask); err != nil {
			return err
		}
	}
	return nil
}
