package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentgate/nmhost/mediator"
)

// hashedBody is what a record's body holds: its time first, then the entry.
type hashedBody struct {
	TS int64 `json:"ts"`
	mediator.AuditEntry
}

// auditBody is the canonical encoding that is hashed, into the chain and
// as the record's leaf in the log: Go's encoding/json writes struct fields
// in declaration order, maps never appear, and the time is part of the
// body so that it cannot be edited either.
func auditBody(ts int64, e mediator.AuditEntry) ([]byte, error) {
	return json.Marshal(hashedBody{ts, e})
}

// bodyTime reads the time a canonical body starts with ({"ts":N,...})
// without decoding the rest, so verification can compare it with the ts
// column for a million records in a few milliseconds.
func bodyTime(body []byte) (int64, bool) {
	const prefix = `{"ts":`
	if !bytes.HasPrefix(body, []byte(prefix)) {
		return 0, false
	}
	rest := body[len(prefix):]
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return 0, false
	}
	ts, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return ts, err == nil
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

// AppendAudit adds e to the log and returns it as written, durable. It
// joins the next group commit (commit.go): one transaction and one fsync
// for every append that arrived while the previous one was committed. The
// last link is read inside that BEGIN IMMEDIATE transaction, and the
// record's leaf hashes are stored in it too, so concurrent host processes
// take turns and neither the chain nor the tree ever forks.
func (s *Store) AppendAudit(ctx context.Context, e mediator.AuditEntry) (mediator.AuditRecord, error) {
	rec, err := s.EnqueueAudit(ctx, e, nil).Result()
	if err != nil {
		return mediator.AuditRecord{}, fmt.Errorf("audit append: %w", err)
	}
	return rec, nil
}

// appendAuditTx appends e inside tx, so that a change and its audit record
// commit together or not at all.
func (s *Store) appendAuditTx(ctx context.Context, tx *sql.Tx, e mediator.AuditEntry) (mediator.AuditRecord, error) {
	w := newAuditWriter(ctx, tx, s.now)
	rec, err := w.append(e)
	if err != nil {
		return mediator.AuditRecord{}, err
	}
	return rec, w.flush()
}

// AuditPage is one page of the chain in seq order.
type AuditPage struct {
	Records      []mediator.AuditRecord `json:"records"`
	NextAfterSeq int64                  `json:"nextAfterSeq,omitempty"` // 0 when this was the last page
}

// ListAudit returns up to limit records after afterSeq, oldest first; with
// tail set it returns the newest limit records instead. Every field shown,
// the time included, is read from the hashed body: the ts column is only a
// copy that VerifyAudit checks, so moving it changes nothing that is shown.
func (s *Store) ListAudit(ctx context.Context, afterSeq int64, limit int, tail bool) (AuditPage, error) {
	s.settle()
	if limit <= 0 || limit > MaxDenialPage {
		limit = DefaultDenialPage
	}
	q := `SELECT seq, body, prev, hash FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`
	if tail {
		q = `SELECT * FROM (SELECT seq, body, prev, hash FROM audit WHERE seq > ? ORDER BY seq DESC LIMIT ?) ORDER BY seq`
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
		if err := rows.Scan(&r.Seq, &body, &r.Prev, &r.Hash); err != nil {
			return AuditPage{}, storeErr("list audit", err)
		}
		// A damaged body still lists (verify reports it); its fields, the
		// time among them, stay empty.
		var b hashedBody
		if json.Unmarshal([]byte(body), &b) == nil {
			r.TS, r.AuditEntry = b.TS, b.AuditEntry
		}
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
