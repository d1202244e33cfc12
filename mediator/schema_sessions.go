package mediator

// schemaSessions adds per-session settings (seed 001). Not yet released: it
// may change freely until the first release.
const schemaSessions = `
CREATE TABLE session_settings (
	session_id TEXT PRIMARY KEY,
	settings   TEXT NOT NULL,
	updated_at INTEGER NOT NULL
) WITHOUT ROWID;
`
