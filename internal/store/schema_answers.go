package store

import (
	"context"
	"database/sql"
)

// answerScopes gives remembered answers a scope and an end
// (docs/permissions.md, "Remembered answers"): expires_at ends a 24-hour
// answer, session_id binds a session answer, module_sha256 binds every
// answer to the agent's code it was given for. A row written before this
// step is bound to the code installed when the step runs, which is the
// code it has been deciding for (RATIONALE.md, "Why do old answers keep
// holding after the upgrade?").
//
// The uses of an answer are kept apart from it: every decision by an
// answer writes its last use, and a write to preferences would move
// facts_version (schema_facts.go) and throw the decisions' cache away
// each time. preference_log keeps the latest uses of an allow-and-log
// answer for the options page's digest; the audit trail keeps them all.
const answerScopes = `
CREATE INDEX IF NOT EXISTS preferences_expiry ON preferences (expires_at) WHERE expires_at > 0;
CREATE INDEX IF NOT EXISTS preferences_session ON preferences (session_id) WHERE session_id != '';
CREATE TABLE IF NOT EXISTS preference_uses (
	pref_id   INTEGER PRIMARY KEY,
	uses      INTEGER NOT NULL,
	last_used INTEGER NOT NULL              -- ms since the epoch
);
CREATE TABLE IF NOT EXISTS preference_log (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	pref_id   INTEGER NOT NULL,
	ts        INTEGER NOT NULL,             -- ms since the epoch
	target    TEXT NOT NULL,
	audit_seq INTEGER NOT NULL              -- the decision's record; 0 when it was queued
);
CREATE INDEX IF NOT EXISTS preference_log_pref ON preference_log (pref_id, id);
CREATE TRIGGER IF NOT EXISTS preference_uses_gone AFTER DELETE ON preferences BEGIN
	DELETE FROM preference_uses WHERE pref_id = old.id;
	DELETE FROM preference_log WHERE pref_id = old.id;
END;
`

// answerColumns adds the columns answerScopes indexes, once: SQLite has no
// ADD COLUMN IF NOT EXISTS, and a step runs again when user_version was
// set back. The rows it finds are bound to the agent's code installed
// now; a rerun finds the columns and binds nothing again.
var answerColumns = []string{
	`ALTER TABLE preferences ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0`,  // ms since the epoch; 0: no end in time
	`ALTER TABLE preferences ADD COLUMN session_id TEXT NOT NULL DEFAULT ''`,    // a session answer's session
	`ALTER TABLE preferences ADD COLUMN module_sha256 TEXT NOT NULL DEFAULT ''`, // the agent's code the answer was given for
	`UPDATE preferences SET module_sha256 = coalesce((SELECT a.module_sha256 FROM agents a WHERE a.agent_id = preferences.agent_id), '')`,
}

// addAnswerScopes is the step: the columns, then answerScopes.
func addAnswerScopes(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('preferences') WHERE name = 'module_sha256'`).Scan(&n); err != nil {
		return err
	}
	for _, q := range answerColumns {
		if n > 0 {
			break
		}
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, answerScopes)
	return err
}
