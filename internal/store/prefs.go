package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// SetPreference remembers an always-allow or always-block answer for the
// agent, operation and target, replacing an earlier one.
func (s *Store) SetPreference(ctx context.Context, p mediator.Preference) (mediator.Preference, error) {
	if p.Answer != mediator.AnswerAlwaysAllow && p.Answer != mediator.AnswerAlwaysBlock {
		return mediator.Preference{}, mediator.Errorf(mediator.CodeBadRequest, "only always-allow and always-block are remembered, not %q", mediator.Truncate(string(p.Answer), 32))
	}
	if err := mediator.ValidAgentID(p.AgentID); err != nil {
		return mediator.Preference{}, err
	}
	p.CreatedAt = s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `
INSERT INTO preferences (agent_id, operation, target, answer, created_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (agent_id, operation, target) DO UPDATE SET answer = excluded.answer, created_at = excluded.created_at
RETURNING id`, p.AgentID, p.Operation, p.Target, string(p.Answer), p.CreatedAt).Scan(&p.ID)
	})
	if err != nil {
		return mediator.Preference{}, fmt.Errorf("agent[%s] preference[%s]: %w", p.AgentID, p.Operation, err)
	}
	return p, nil
}

// ListPreferences returns the remembered answers, of one agent when agentID
// is not empty, oldest first. Rows whose answer is not one of the two
// "always" answers are left out, as the policy ignores them.
func (s *Store) ListPreferences(ctx context.Context, agentID string) ([]mediator.Preference, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT id, agent_id, operation, target, answer, created_at FROM preferences
WHERE (? = '' OR agent_id = ?) ORDER BY id`, agentID, agentID)
	if err != nil {
		return nil, storeErr("list preferences", err)
	}
	defer rows.Close()
	out := []mediator.Preference{}
	for rows.Next() {
		var p mediator.Preference
		var answer string
		if err := rows.Scan(&p.ID, &p.AgentID, &p.Operation, &p.Target, &answer, &p.CreatedAt); err != nil {
			return nil, storeErr("list preferences", err)
		}
		if p.Answer = mediator.Answer(answer); p.Answer == mediator.AnswerAlwaysAllow || p.Answer == mediator.AnswerAlwaysBlock {
			out = append(out, p)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr("list preferences", err)
	}
	return out, nil
}

// RevokePreference forgets a remembered answer; the next such operation
// asks again. It reports whether there was one.
func (s *Store) RevokePreference(ctx context.Context, id int64) (bool, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM preferences WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("preference[%d]: %w", id, err)
	}
	return n > 0, nil
}
