package store

// schemaSessions adds per-session settings (docs/viewer.md). settings holds the
// normalised SessionSettings as JSON, so a later field needs no migration.
const schemaSessions = `
CREATE TABLE session_settings (
	session_id TEXT PRIMARY KEY,
	settings   TEXT NOT NULL,               -- SessionSettings, JSON
	created_at INTEGER NOT NULL,            -- ms since the epoch
	updated_at INTEGER NOT NULL             -- ms since the epoch
) WITHOUT ROWID;
`
