package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentgate/nmhost/mediator"
)

// DecisionFacts reads, in one query, what the policy needs for one
// decision: the agent's stored profile, whether it holds perm, and the
// remembered answer for operation and target, and whether the user
// revoked the permission (so the denial can say so).
func (s *Store) DecisionFacts(ctx context.Context, agentID string, perm mediator.Permission, operation, target string) (mediator.DecisionFacts, error) {
	var (
		f       mediator.DecisionFacts
		granted sql.NullInt64
		revoked sql.NullInt64
		prefID  sql.NullInt64
		answer  sql.NullString
	)
	err := s.db.QueryRowContext(ctx, `
SELECT a.profile,
	(SELECT 1 FROM grants WHERE agent_id = ?1 AND permission = ?2),
	(SELECT 1 FROM revocations WHERE agent_id = ?1 AND permission = ?2),
	pr.id, pr.answer
FROM agents a LEFT JOIN preferences pr ON pr.agent_id = ?1 AND pr.operation = ?3 AND pr.target = ?4
WHERE a.agent_id = ?1`, agentID, string(perm), operation, target).Scan(&f.ProfileJSON, &granted, &revoked, &prefID, &answer)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return mediator.DecisionFacts{}, unknownAgent(agentID)
	case err != nil:
		return mediator.DecisionFacts{}, storeErr("decide", err)
	}
	f.Granted = granted.Valid
	f.Revoked = !f.Granted && revoked.Valid
	if prefID.Valid {
		f.Preference = mediator.Preference{ID: prefID.Int64, AgentID: agentID, Operation: operation, Target: target, Answer: mediator.Answer(answer.String)}
	}
	return f, nil
}
