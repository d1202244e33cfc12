package store

import (
	"context"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/agentgate/nmhost/mediator"
)

// AuditExportRecord is one record with the exact body that was hashed into
// the chain and the log's tree, for shipping elsewhere: whoever receives
// the bodies and a checkpoint can recompute the tree head
// (tlog.RecordHash of each body) without trusting the sender's decoding.
type AuditExportRecord struct {
	mediator.AuditRecord
	Body []byte
}

// ListAuditBodies returns up to limit records after afterSeq and at most
// throughSeq (0: no upper bound), oldest first, each with its hashed body.
// Like ListAudit, the fields are read from the body; a damaged body keeps
// its fields empty (verify reports it) and is still shipped as it is.
func (s *Store) ListAuditBodies(ctx context.Context, afterSeq, throughSeq int64, limit int) ([]AuditExportRecord, error) {
	s.settle()
	if limit <= 0 || limit > MaxDenialPage {
		limit = DefaultDenialPage
	}
	q := `SELECT seq, body, prev, hash FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`
	args := []any{afterSeq, limit}
	if throughSeq > 0 {
		q = `SELECT seq, body, prev, hash FROM audit WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`
		args = []any{afterSeq, throughSeq, limit}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, storeErr("list audit bodies", err)
	}
	defer rows.Close()
	var out []AuditExportRecord
	for rows.Next() {
		var r AuditExportRecord
		if err := rows.Scan(&r.Seq, &r.Body, &r.Prev, &r.Hash); err != nil {
			return nil, storeErr("list audit bodies", err)
		}
		// jsonv2: twice as fast as encoding/json on these bodies, which
		// encoding/json wrote in canonical form (exact names, no repeats).
		var b hashedBody
		if jsonv2.Unmarshal(r.Body, &b) == nil {
			r.TS, r.AuditEntry = b.TS, b.AuditEntry
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr("list audit bodies", err)
	}
	return out, nil
}

// ListDenialsAfter returns up to limit denials with an id above afterID,
// oldest first, afterID 0 included (ListDenials reads a zero AfterID as
// "newest first"): what an export ships next.
func (s *Store) ListDenialsAfter(ctx context.Context, afterID int64, limit int) ([]mediator.Denial, error) {
	if limit <= 0 || limit > MaxDenialPage {
		limit = DefaultDenialPage
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, agent_id, permission, ts, code, context, audit_seq
		FROM denials WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, storeErr("list denials", err)
	}
	defer rows.Close()
	var out []mediator.Denial
	for rows.Next() {
		var d mediator.Denial
		var code, ctxJSON string
		if err := rows.Scan(&d.ID, &d.AgentID, &d.Permission, &d.Timestamp, &code, &ctxJSON, &d.AuditSeq); err != nil {
			return nil, storeErr("list denials", err)
		}
		d.Code = mediator.Code(code)
		// A context that no longer decodes is still a denial: it ships
		// with its code and ids, without the context.
		_ = json.Unmarshal([]byte(ctxJSON), &d.Context)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr("list denials", err)
	}
	return out, nil
}
