package store

// schemaMemory adds the sessions' memory (memory.go): the entries, each
// session's number and entry count, and an FTS5 index over the entries'
// text and tags. The index keeps no copy of the text (content=memory_entries);
// snippets read it from the entries. Its rank is bm25 with a tag match
// worth half a text match. IF NOT EXISTS: the step runs again
// on a database set back to an older version (the migration tests do).
const schemaMemory = `
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
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
	text, tags,
	content = 'memory_entries', content_rowid = 'id',
	tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO memory_fts (memory_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5)');
`
