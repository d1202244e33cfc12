package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentgate/nmhost/mediator"
)

// auditBody is the canonical encoding that is hashed: Go's encoding/json
// writes struct fields in declaration order, maps never appear, and the
// time is part of the body so that it cannot be edited either.
func auditBody(ts int64, e mediator.AuditEntry) ([]byte, error) {
	return json.Marshal(struct {
		TS int64 `json:"ts"`
		mediator.AuditEntry
	}{ts, e})
}

// auditHash chains a record: SHA-256 over the previous hash, the sequence
// number and the body, separated so no field can bleed into another.
func auditHash(prev string, seq int64, body []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write([]byte{0})
	h.Write([]byte(strconv.FormatInt(seq, 10)))
	h.Write([]byte{0})
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// AppendAudit adds e to the chain and returns it as written. The last link
// is read inside the same BEGIN IMMEDIATE transaction as the insert, so
// concurrent host processes take turns and the chain never forks.
func (s *Store) AppendAudit(ctx context.Context, e mediator.AuditEntry) (mediator.AuditRecord, error) {
	var rec mediator.AuditRecord
	err := s.write(context.WithoutCancel(ctx), func(tx *sql.Tx) error {
		var err error
		rec, err = s.appendAuditTx(ctx, tx, e)
		return err
	})
	if err != nil {
		return mediator.AuditRecord{}, fmt.Errorf("audit append: %w", err)
	}
	return rec, nil
}

// appendAuditTx appends e inside tx, so that a change and its audit record
// commit together or not at all.
func (s *Store) appendAuditTx(ctx context.Context, tx *sql.Tx, e mediator.AuditEntry) (mediator.AuditRecord, error) {
	rec := mediator.AuditRecord{AuditEntry: e, TS: s.now().UnixMilli()}
	body, err := auditBody(rec.TS, e)
	if err != nil {
		return mediator.AuditRecord{}, &mediator.Error{Code: mediator.CodeInternal, Msg: "audit record not encodable", Err: err}
	}
	err = tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1`).Scan(&rec.Seq, &rec.Prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return mediator.AuditRecord{}, err
	}
	rec.Seq++
	rec.Hash = auditHash(rec.Prev, rec.Seq, body)
	_, err = tx.ExecContext(ctx, `INSERT INTO audit (seq, ts, body, prev, hash) VALUES (?, ?, ?, ?, ?)`,
		rec.Seq, rec.TS, string(body), rec.Prev, rec.Hash)
	return rec, err
}

// AuditPage is one page of the chain in seq order.
type AuditPage struct {
	Records      []mediator.AuditRecord `json:"records"`
	NextAfterSeq int64                  `json:"nextAfterSeq,omitempty"` // 0 when this was the last page
}

// ListAudit returns up to limit records after afterSeq, oldest first; with
// tail set it returns the newest limit records instead.
func (s *Store) ListAudit(ctx context.Context, afterSeq int64, limit int, tail bool) (AuditPage, error) {
	if limit <= 0 || limit > MaxDenialPage {
		limit = DefaultDenialPage
	}
	q := `SELECT seq, ts, body, prev, hash FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`
	if tail {
		q = `SELECT * FROM (SELECT seq, ts, body, prev, hash FROM audit WHERE seq > ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`
	}
	rows, err := s.db.QueryContext(ctx, q, afterSeq, limit+1)
	if err != nil {
		return AuditPage{}, storeErr("list audit", err)
	}
	defer rows.Close()
	page := AuditPage{Records: []mediator.AuditRecord{}}
	for rows.Next() {
		var r mediator.AuditRecord
		var body string
		if err := rows.Scan(&r.Seq, &r.TS, &body, &r.Prev, &r.Hash); err != nil {
			return AuditPage{}, storeErr("list audit", err)
		}
		// A damaged body still lists (verify reports it); its fields stay empty.
		_ = json.Unmarshal([]byte(body), &r.AuditEntry)
		page.Records = append(page.Records, r)
	}
	if err := rows.Err(); err != nil {
		return AuditPage{}, storeErr("list audit", err)
	}
	if len(page.Records) > limit {
		if tail {
			page.Records = page.Records[1:]
		} else {
			page.Records = page.Records[:limit]
			page.NextAfterSeq = page.Records[limit-1].Seq
		}
	}
	return page, nil
}

// AuditReport is what VerifyAudit found.
type AuditReport struct {
	OK       bool   `json:"ok"`
	Records  int64  `json:"records"`            // records checked
	LastSeq  int64  `json:"lastSeq"`            // the last good link
	BadSeq   int64  `json:"badSeq,omitempty"`   // the first bad record (or where one is missing)
	Problem  string `json:"problem,omitempty"`  // edited, removed or reordered, in words
	LastHash string `json:"lastHash,omitempty"` // keep it elsewhere to detect truncation later
}

// VerifyAudit walks the chain in seq order and reports the first record
// that was edited, removed or reordered. Removing records from the end
// leaves a valid shorter chain; comparing LastHash with a copy kept
// elsewhere is how that is caught.
func (s *Store) VerifyAudit(ctx context.Context) (AuditReport, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, body, prev, hash FROM audit ORDER BY seq`)
	if err != nil {
		return AuditReport{}, storeErr("verify audit", err)
	}
	defer rows.Close()
	var rep AuditReport
	prevHash := ""
	var body []byte
	for rows.Next() {
		var seq int64
		var prev, hash string
		if err := rows.Scan(&seq, &body, &prev, &hash); err != nil {
			return AuditReport{}, storeErr("verify audit", err)
		}
		switch want := rep.LastSeq + 1; {
		case seq != want:
			rep.BadSeq, rep.Problem = want, fmt.Sprintf("record %d is missing (the next one is %d): removed", want, seq)
		case prev != prevHash:
			rep.BadSeq, rep.Problem = seq, fmt.Sprintf("record %d does not link to record %d: removed, reordered or edited", seq, seq-1)
		case auditHash(prev, seq, body) != hash:
			rep.BadSeq, rep.Problem = seq, fmt.Sprintf("record %d's content does not match its hash: edited", seq)
		}
		if rep.Problem != "" {
			return rep, nil
		}
		rep.Records++
		rep.LastSeq, rep.LastHash, prevHash = seq, hash, hash
	}
	if err := rows.Err(); err != nil {
		return AuditReport{}, storeErr("verify audit", err)
	}
	rep.OK = true
	return rep, nil
}
