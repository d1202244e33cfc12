package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// userRevocations remembers which permissions the user took back from an
// agent. A grant row alone cannot say "the user said no": without this,
// installing the same profile and module again (`nmhost run` does that on
// every run) put the grant back as if it had never been revoked. A row
// lives until the user grants the permission again, the agent's profile or
// module changes (a new consent), or the agent is uninstalled.
// IF NOT EXISTS: the migrations after it must be able to run again on a
// database whose version was set back, as the migration tests do.
const userRevocations = `
CREATE TABLE IF NOT EXISTS revocations (
	agent_id   TEXT NOT NULL REFERENCES agents(agent_id) ON DELETE CASCADE,
	permission TEXT NOT NULL,
	revoked_at INTEGER NOT NULL,            -- ms since the epoch
	PRIMARY KEY (agent_id, permission)
) WITHOUT ROWID;
`

// Revocations lists the permissions the user revoked from the agent and has
// not granted again, sorted. An agent that is not installed has none.
func (s *Store) Revocations(ctx context.Context, agentID string) ([]mediator.Permission, error) {
	if mediator.ValidAgentID(agentID) != nil {
		return nil, nil
	}
	out, err := revocationsTx(ctx, s.db, agentID)
	if err != nil {
		return nil, fmt.Errorf("agent[%s]: %w", agentID, err)
	}
	return out, nil
}

func revocationsTx(ctx context.Context, q queryer, id string) ([]mediator.Permission, error) {
	rows, err := q.QueryContext(ctx, `SELECT permission FROM revocations WHERE agent_id = ? ORDER BY permission`, id)
	if err != nil {
		return nil, storeErr("read revocations", err)
	}
	defer rows.Close()
	var out []mediator.Permission
	for rows.Next() {
		var p mediator.Permission
		if err := rows.Scan(&p); err != nil {
			return nil, storeErr("read revocations", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr("read revocations", err)
	}
	return out, nil
}

// sameAgentTx reports whether the agent is installed with exactly this
// normalised profile and module: installing it again then changes nothing
// the user consented to. sum "" (no module brought) keeps the stored one.
func sameAgentTx(ctx context.Context, tx *sql.Tx, id, profileJSON, sum string) (bool, error) {
	var oldProfile, oldSum string
	err := tx.QueryRowContext(ctx, `SELECT profile, module_sha256 FROM agents WHERE agent_id = ?`, id).Scan(&oldProfile, &oldSum)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return oldProfile == profileJSON && (sum == "" || sum == oldSum), nil
}
