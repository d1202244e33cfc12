package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// SetPreference remembers an answer for the agent, operation and target,
// replacing an earlier one (and forgetting that one's uses): an "always"
// answer, one bound to a session, one for 24 hours (ExpiresAt set by the
// policy), or allow-and-log. ModuleSHA256 is the agent's code the answer
// was given for.
func (s *Store) SetPreference(ctx context.Context, p mediator.Preference) (mediator.Preference, error) {
	if !p.Answer.Remembered() {
		return mediator.Preference{}, mediator.Errorf(mediator.CodeBadRequest, "%q is not an answer that is remembered", mediator.Truncate(string(p.Answer), 32))
	}
	if err := mediator.ValidAgentID(p.AgentID); err != nil {
		return mediator.Preference{}, err
	}
	switch {
	case p.Answer == mediator.AnswerAllow24h && p.ExpiresAt <= 0:
		return mediator.Preference{}, mediator.Errorf(mediator.CodeBadRequest, "an allow-24h answer needs its end")
	case p.Answer == mediator.AnswerAllowSession && p.SessionID == "":
		return mediator.Preference{}, mediator.Errorf(mediator.CodeBadRequest, "an allow-session answer needs its session")
	case p.Answer != mediator.AnswerAllow24h:
		p.ExpiresAt = 0
	}
	if p.Answer != mediator.AnswerAllowSession {
		p.SessionID = ""
	}
	p.Scope = p.Answer.Scope()
	p.CreatedAt = s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `
INSERT INTO preferences (agent_id, operation, target, answer, created_at, expires_at, session_id, module_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (agent_id, operation, target) DO UPDATE SET answer = excluded.answer, created_at = excluded.created_at,
	expires_at = excluded.expires_at, session_id = excluded.session_id, module_sha256 = excluded.module_sha256
RETURNING id`, p.AgentID, p.Operation, p.Target, string(p.Answer), p.CreatedAt, p.ExpiresAt, p.SessionID, p.ModuleSHA256).Scan(&p.ID)
		if err != nil {
			return err
		}
		// A new answer starts its own count.
		return forgetUsesTx(ctx, tx, p.ID)
	})
	if err != nil {
		return mediator.Preference{}, fmt.Errorf("agent[%s] preference[%s]: %w", p.AgentID, p.Operation, err)
	}
	return p, nil
}

// ListPreferences returns the remembered answers, of one agent when agentID
// is not empty, oldest first, with their last use. Expired answers are
// removed first; rows whose answer is not one that is remembered are left
// out, as the policy ignores them.
func (s *Store) ListPreferences(ctx context.Context, agentID string) ([]mediator.Preference, error) {
	s.flushUses(ctx)
	if err := s.sweepExpiredPreferences(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `
SELECT p.id, p.agent_id, p.operation, p.target, p.answer, p.created_at, p.expires_at, p.session_id, p.module_sha256,
	coalesce(u.last_used, 0), coalesce(u.uses, 0)
FROM preferences p LEFT JOIN preference_uses u ON u.pref_id = p.id
WHERE (? = '' OR p.agent_id = ?) ORDER BY p.id`, agentID, agentID)
	if err != nil {
		return nil, storeErr("list preferences", err)
	}
	defer rows.Close()
	out := []mediator.Preference{}
	for rows.Next() {
		var p mediator.Preference
		var answer string
		if err := rows.Scan(&p.ID, &p.AgentID, &p.Operation, &p.Target, &answer, &p.CreatedAt, &p.ExpiresAt, &p.SessionID, &p.ModuleSHA256,
			&p.LastUsed, &p.Uses); err != nil {
			return nil, storeErr("list preferences", err)
		}
		if p.Answer = mediator.Answer(answer); p.Answer.Remembered() {
			p.Scope = p.Answer.Scope()
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

// sweepExpiredPreferences removes the answers whose end has passed: on
// open, before a list, and when a decision finds one (facts.go).
func (s *Store) sweepExpiredPreferences(ctx context.Context) error {
	now := s.now().UnixMilli()
	var any bool
	if err := s.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM preferences WHERE expires_at > 0 AND expires_at <= ?)`, now).Scan(&any); err != nil {
		return storeErr("find expired answers", err)
	}
	if !any {
		return nil // the common case: one read, no write
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM preferences WHERE expires_at > 0 AND expires_at <= ?`, now)
		return err
	})
}
