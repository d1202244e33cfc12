package store

import (
	"context"
	"database/sql"
	"sync"

	"github.com/agentgate/nmhost/mediator"
)

// A remembered answer's uses are written after the decision, off its
// path: NotePreferenceUse queues the use and returns, and one writer
// goroutine at a time writes what is queued in one transaction. A busy
// agent's uses then cost one commit per batch, not one per decision, and
// no operation waits for them. Readers of the uses (ListPreferences,
// LoggedUses) write the queue first, so they see every use noted before
// they were called. A host killed with uses queued loses those last-use
// times and digest lines; the decisions themselves are in the audit trail.

// maxQueuedUses bounds the queue; past it, uses are dropped until the
// writer catches up (they are still in the audit trail).
const maxQueuedUses = 4096

// maxLoggedUses is how many of an allow-and-log answer's latest uses the
// digest keeps.
const maxLoggedUses = 20

type useQueue struct {
	mu      sync.Mutex
	pending []mediator.PreferenceUse
	writing bool
	closed  bool
	wg      sync.WaitGroup
	flushMu sync.Mutex // one batch is written at a time, in order
}

// NotePreferenceUse implements mediator.PreferenceUses: it queues u and
// never waits for storage.
func (s *Store) NotePreferenceUse(u mediator.PreferenceUse) {
	q := &s.uses
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || len(q.pending) >= maxQueuedUses {
		return
	}
	q.pending = append(q.pending, u)
	if !q.writing {
		q.writing = true
		q.wg.Add(1)
		go s.writeUses()
	}
}

// writeUses writes the queue until it is empty.
func (s *Store) writeUses() {
	q := &s.uses
	defer q.wg.Done()
	for {
		if !s.flushUses(context.Background()) {
			q.mu.Lock()
			if len(q.pending) == 0 {
				q.writing = false
				q.mu.Unlock()
				return
			}
			q.mu.Unlock()
		}
	}
}

// flushUses writes what is queued now, and reports whether there was
// anything. A failed write drops the batch: last-use times are
// bookkeeping, and retrying could grow without bound.
func (s *Store) flushUses(ctx context.Context) bool {
	ctx = context.WithoutCancel(ctx)
	q := &s.uses
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	q.mu.Lock()
	batch := q.pending
	q.pending = nil
	q.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	_ = s.write(ctx, func(tx *sql.Tx) error {
		for _, u := range batch {
			if _, err := tx.ExecContext(ctx, `
INSERT INTO preference_uses (pref_id, uses, last_used) SELECT ?1, 1, ?2 WHERE EXISTS (SELECT 1 FROM preferences WHERE id = ?1)
ON CONFLICT (pref_id) DO UPDATE SET uses = uses + 1, last_used = max(last_used, excluded.last_used)`, u.ID, u.At); err != nil {
				return err
			}
			if !u.Logged {
				continue
			}
			if _, err := tx.ExecContext(ctx, `
INSERT INTO preference_log (pref_id, ts, target, audit_seq) SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM preferences WHERE id = ?1)`,
				u.ID, u.At, u.Target, u.AuditSeq); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `
DELETE FROM preference_log WHERE pref_id = ?1 AND id <= (SELECT id FROM preference_log WHERE pref_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)`,
				u.ID, maxLoggedUses); err != nil {
				return err
			}
		}
		return nil
	})
	return true
}

// closeUses stops taking uses and writes the queue.
func (s *Store) closeUses() {
	q := &s.uses
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
	s.flushUses(context.Background())
}

func forgetUsesTx(ctx context.Context, tx *sql.Tx, id int64) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM preference_uses WHERE pref_id = ?`, id); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM preference_log WHERE pref_id = ?`, id)
	return err
}

// LoggedUses is the digest of one agent's allow-and-log answers for one
// operation: how many uses, and the latest (newest first).
type LoggedUses struct {
	AgentID   string                   `json:"agentId"`
	Operation string                   `json:"operation"`
	Count     int64                    `json:"count"`
	LastUsed  int64                    `json:"lastUsed"` // ms since the epoch
	Latest    []mediator.PreferenceUse `json:"latest"`
}

// maxDigestUses is how many latest uses the digest shows per agent and
// operation.
const maxDigestUses = 5

// AllowAndLogDigest returns, per agent and operation, the uses of the
// allow-and-log answers in force (of one agent when agentID is not empty).
func (s *Store) AllowAndLogDigest(ctx context.Context, agentID string) ([]LoggedUses, error) {
	s.flushUses(ctx)
	rows, err := s.db.QueryContext(ctx, `
SELECT p.agent_id, p.operation, sum(coalesce(u.uses, 0)), max(coalesce(u.last_used, 0)), group_concat(p.id)
FROM preferences p LEFT JOIN preference_uses u ON u.pref_id = p.id
WHERE p.answer = ? AND (? = '' OR p.agent_id = ?)
GROUP BY p.agent_id, p.operation ORDER BY p.agent_id, p.operation`, string(mediator.AnswerAllowAndLog), agentID, agentID)
	if err != nil {
		return nil, storeErr("digest", err)
	}
	out := []LoggedUses{}
	var ids []string
	for rows.Next() {
		var d LoggedUses
		var idList string
		if err := rows.Scan(&d.AgentID, &d.Operation, &d.Count, &d.LastUsed, &idList); err != nil {
			rows.Close()
			return nil, storeErr("digest", err)
		}
		out = append(out, d)
		ids = append(ids, idList)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, storeErr("digest", err)
	}
	for i := range out {
		latest, err := s.latestUses(ctx, ids[i])
		if err != nil {
			return nil, err
		}
		out[i].Latest = latest
	}
	return out, nil
}

// latestUses reads the newest uses of the answers whose ids idList lists
// (comma-separated, from group_concat over integer ids).
func (s *Store) latestUses(ctx context.Context, idList string) ([]mediator.PreferenceUse, error) {
	rows, err := s.db.QueryContext(ctx, `
SELECT pref_id, ts, target, audit_seq FROM preference_log
WHERE pref_id IN (SELECT value FROM json_each('[' || ? || ']')) ORDER BY ts DESC, id DESC LIMIT ?`, idList, maxDigestUses)
	if err != nil {
		return nil, storeErr("digest uses", err)
	}
	defer rows.Close()
	out := []mediator.PreferenceUse{}
	for rows.Next() {
		u := mediator.PreferenceUse{Logged: true}
		if err := rows.Scan(&u.ID, &u.At, &u.Target, &u.AuditSeq); err != nil {
			return nil, storeErr("digest uses", err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
