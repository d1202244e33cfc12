package store

// schemaPolicy adds remembered answers and the audit chain. Not yet
// released: it may change freely until the first release.
const schemaPolicy = `
-- One remembered answer per agent, operation and target; a newer answer
-- replaces the older one. answer is deliberately unconstrained: a row
-- holding anything but the two "always" answers is ignored when deciding,
-- so a damaged row makes the host ask again instead of failing.
CREATE TABLE preferences (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	agent_id   TEXT NOT NULL,
	operation  TEXT NOT NULL,
	target     TEXT NOT NULL DEFAULT '',
	answer     TEXT NOT NULL,
	created_at INTEGER NOT NULL,            -- ms since the epoch
	UNIQUE (agent_id, operation, target)
);
-- The audit chain: append-only. hash = SHA-256 over prev, seq and body
-- (see audit.go); seq has no gaps, so a removed record shows.
CREATE TABLE audit (
	seq  INTEGER PRIMARY KEY,
	ts   INTEGER NOT NULL,                  -- ms since the epoch
	body TEXT NOT NULL,                     -- canonical JSON of the record
	prev TEXT NOT NULL,                     -- hash of seq-1, "" for seq 1
	hash TEXT NOT NULL
);
`

// originKeys drops remembered answers written before answers were keyed by
// the canonical origin (mediator.TargetKey): a fetch answer keyed
// "POST host:port" did not say http or https, so it cannot be carried
// over without guessing. Those operations are asked about again, which is
// the safe direction: nothing is allowed that was not, and an "always
// block" becomes a prompt, never a silent allow.
const originKeys = `
DELETE FROM preferences WHERE operation = 'network.fetch'
	AND target NOT GLOB '* http://*:[0-9]*' AND target NOT GLOB '* https://*:[0-9]*';
DELETE FROM preferences WHERE operation = 'page.write.setElementText'
	AND target NOT GLOB 'http://*:[0-9]*' AND target NOT GLOB 'https://*:[0-9]*';
`
