package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

// auditWriter appends records inside one write transaction. It reads the
// chain's last link and the tree's size once, when the transaction's first
// record is appended, keeps both in memory for the records after it, keeps
// the stored hashes it wrote or read so that the next leaves read none of
// them again, and writes all the rows at flush, a few statements for the
// whole group. A group commit of a hundred records thus costs about as many
// statements as one record did.
type auditWriter struct {
	ctx context.Context
	tx  dbtx
	// prepared, when set, returns a statement prepared once on tx's
	// connection (the committer's); without it statements are parsed
	// each time.
	prepared func(ctx context.Context, q string) (*sql.Stmt, error)
	now      func() time.Time
	loaded   bool
	seq      int64  // the last record's seq
	prev     string // and its hash
	hashes   map[int64]tlog.Hash
	rows     []pendingRow
}

type pendingRow struct {
	seq, ts    int64
	body       []byte
	prev, hash string
	tree       []byte
}

func newAuditWriter(ctx context.Context, tx dbtx, now func() time.Time) *auditWriter {
	return &auditWriter{ctx: ctx, tx: tx, now: now}
}

func (w *auditWriter) exec(q string, args ...any) error {
	if w.prepared != nil {
		st, err := w.prepared(w.ctx, q)
		if err != nil {
			return err
		}
		_, err = st.ExecContext(w.ctx, args...)
		return err
	}
	_, err := w.tx.ExecContext(w.ctx, q, args...)
	return err
}

func (w *auditWriter) queryRow(q string, args ...any) (*sql.Row, error) {
	if w.prepared != nil {
		st, err := w.prepared(w.ctx, q)
		if err != nil {
			return nil, err
		}
		return st.QueryRowContext(w.ctx, args...), nil
	}
	return w.tx.QueryRowContext(w.ctx, q, args...), nil
}

// load reads the last link and the tree's size in one statement. A tree out
// of step with the records (rows removed or added behind the host's back)
// fails the append rather than hash a leaf into the wrong place.
func (w *auditWriter) load() error {
	var leaves int64
	row, err := w.queryRow(`SELECT
		coalesce((SELECT seq FROM audit ORDER BY seq DESC LIMIT 1), 0),
		coalesce((SELECT hash FROM audit ORDER BY seq DESC LIMIT 1), ''),
		coalesce((SELECT max(seq) FROM audit_tree), 0)`)
	if err == nil {
		err = row.Scan(&w.seq, &w.prev, &leaves)
	}
	if err != nil {
		return err
	}
	if leaves != w.seq {
		return fmt.Errorf("audit tree holds %d leaves; record %d cannot be leaf %d", leaves, w.seq+1, w.seq)
	}
	w.loaded, w.hashes = true, map[int64]tlog.Hash{}
	return nil
}

// append adds e as the next record and returns it; the rows are written at
// flush, before the transaction commits.
func (w *auditWriter) append(e mediator.AuditEntry) (mediator.AuditRecord, error) {
	if !w.loaded {
		if err := w.load(); err != nil {
			return mediator.AuditRecord{}, err
		}
	}
	rec := mediator.AuditRecord{AuditEntry: e, TS: w.now().UnixMilli(), Seq: w.seq + 1, Prev: w.prev}
	body, err := auditBody(rec.TS, e)
	if err != nil {
		return mediator.AuditRecord{}, &mediator.Error{Code: mediator.CodeInternal, Msg: "audit record not encodable", Err: err}
	}
	rec.Hash = auditHash(rec.Prev, rec.Seq, body)
	n := rec.Seq - 1
	hs, err := tlog.StoredHashes(n, body, w)
	if err != nil {
		return mediator.AuditRecord{}, err
	}
	base := tlog.StoredHashIndex(0, n)
	for i, h := range hs {
		w.hashes[base+int64(i)] = h
	}
	w.rows = append(w.rows, pendingRow{seq: rec.Seq, ts: rec.TS, body: body, prev: rec.Prev, hash: rec.Hash, tree: joinHashes(hs)})
	w.seq, w.prev = rec.Seq, rec.Hash
	return rec, nil
}

// ReadHashes implements tlog.HashReader: hashes of this transaction from
// memory, older ones from audit_tree (then kept).
func (w *auditWriter) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	var missing []int64
	for _, idx := range indexes {
		if _, ok := w.hashes[idx]; !ok {
			missing = append(missing, idx)
		}
	}
	if len(missing) > 0 {
		var q querier = w.tx
		if w.prepared != nil {
			q = preparedQuerier{w}
		}
		hs, err := dbHashes{w.ctx, q}.ReadHashes(missing)
		if err != nil {
			return nil, err
		}
		for i, idx := range missing {
			w.hashes[idx] = hs[i]
		}
	}
	for i, idx := range indexes {
		out[i] = w.hashes[idx]
	}
	return out, nil
}

// flushRows is how many rows one INSERT writes: far below SQLite's limit
// on bound parameters.
const flushRows = 200

// flush writes the appended rows, the records and their leaves.
func (w *auditWriter) flush() error {
	for len(w.rows) > 0 {
		chunk := w.rows[:min(len(w.rows), flushRows)]
		w.rows = w.rows[len(chunk):]
		recArgs := make([]any, 0, 5*len(chunk))
		treeArgs := make([]any, 0, 2*len(chunk))
		for _, r := range chunk {
			recArgs = append(recArgs, r.seq, r.ts, string(r.body), r.prev, r.hash)
			treeArgs = append(treeArgs, r.seq, r.tree)
		}
		if err := w.exec(`INSERT INTO audit (seq, ts, body, prev, hash) VALUES (?, ?, ?, ?, ?)`+
			strings.Repeat(", (?, ?, ?, ?, ?)", len(chunk)-1), recArgs...); err != nil {
			return err
		}
		if err := w.exec(`INSERT INTO audit_tree (seq, hashes) VALUES (?, ?)`+
			strings.Repeat(", (?, ?)", len(chunk)-1), treeArgs...); err != nil {
			return err
		}
	}
	return nil
}

// preparedQuerier runs queries through the writer's prepared statements.
type preparedQuerier struct{ w *auditWriter }

func (p preparedQuerier) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := p.w.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (p preparedQuerier) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := p.w.prepared(ctx, q)
	if err != nil {
		return p.w.tx.QueryRowContext(ctx, q, args...) // reports the same failure
	}
	return st.QueryRowContext(ctx, args...)
}
