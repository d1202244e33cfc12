package store

// factsVersion counts the changes to what decisions read: every insert,
// update or delete of an agent, grant, revocation or remembered answer
// bumps it, in the same transaction, whoever writes (this host, another
// host process, an older nmhost, the sqlite3 shell). The cache (cache.go)
// asks it when the database changed at all: a commit that only appended to
// the audit trail or the denial log leaves it alone, so the cached facts
// survive the commits every decision causes. IF NOT EXISTS: the step runs
// again when user_version was set back.
const factsVersion = `
CREATE TABLE IF NOT EXISTS facts_version (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	v  INTEGER NOT NULL
);
INSERT OR IGNORE INTO facts_version (id, v) VALUES (1, 0);
CREATE TRIGGER IF NOT EXISTS facts_agents_insert AFTER INSERT ON agents BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_agents_update AFTER UPDATE ON agents BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_agents_delete AFTER DELETE ON agents BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_grants_insert AFTER INSERT ON grants BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_grants_update AFTER UPDATE ON grants BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_grants_delete AFTER DELETE ON grants BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_revocations_insert AFTER INSERT ON revocations BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_revocations_update AFTER UPDATE ON revocations BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_revocations_delete AFTER DELETE ON revocations BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_preferences_insert AFTER INSERT ON preferences BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_preferences_update AFTER UPDATE ON preferences BEGIN UPDATE facts_version SET v = v + 1; END;
CREATE TRIGGER IF NOT EXISTS facts_preferences_delete AFTER DELETE ON preferences BEGIN UPDATE facts_version SET v = v + 1; END;
`
