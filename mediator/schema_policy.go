package mediator

// schemaPolicy adds the tables behind remembered answers and the audit
// trail. Not yet released: it may change freely until the first release.
const schemaPolicy = `
CREATE TABLE preferences (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	agent_id   TEXT NOT NULL,
	operation  TEXT NOT NULL,
	target     TEXT NOT NULL DEFAULT '',
	answer     TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE audit (
	seq  INTEGER PRIMARY KEY,
	body TEXT NOT NULL,
	hash TEXT NOT NULL
);
`
