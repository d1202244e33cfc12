package store

import (
	"context"
	"database/sql"

	"github.com/agentgate/nmhost/mediator"
)

// schemaAuditTree adds the audit log's tree (audit_tree.go): one row per
// record holding the hashes tlog.StoredHashes returned for its leaf. The
// rows are written in the transaction that appends the record.
//
// The step drops a table left by an earlier run: it runs again only when
// user_version was set back, and then it rebuilds the tree from the chain,
// which it verifies first. Nothing is lost that mattered: the stored hashes
// are derived from the records, and what anchors the log against rewrites
// is a checkpoint kept outside the database, not this table.
const schemaAuditTree = `
DROP TABLE IF EXISTS audit_tree;
CREATE TABLE audit_tree (
	seq    INTEGER PRIMARY KEY,             -- the record (audit.seq); its leaf is seq-1
	hashes BLOB NOT NULL                    -- its stored hashes, 32 bytes each, leaf first
);
`

// fillBatch is how many records the migration reads before writing their
// rows: the reads and writes of one transaction take turns, and a batch
// bounds memory whatever the chain's length. A variable, not a constant,
// only so that TestMigrationBuildsTheAuditLog can cross batch boundaries
// with a few records instead of twenty thousand.
var fillBatch = 10_000

// fillAuditTree builds the tree over a chain written before the log had
// one. It verifies the chain as it goes and refuses a broken one: a signed
// log over records already edited would vouch for them. The transaction
// then rolls back, the database stays at the old version and the host does
// not open it; the error names the record. After building, it verifies
// the log it built.
func fillAuditTree(ctx context.Context, tx *sql.Tx) error {
	var w logWalker
	var after int64
	for {
		rows, err := tx.QueryContext(ctx, `SELECT seq, ts, body, prev, hash FROM audit WHERE seq > ? ORDER BY seq LIMIT ?`, after, fillBatch)
		if err != nil {
			return err
		}
		var seqs []int64
		var hashes [][]byte
		for rows.Next() {
			var seq, ts int64
			var prev, hash string
			var body sql.RawBytes
			if err := rows.Scan(&seq, &ts, &body, &prev, &hash); err != nil {
				rows.Close()
				return err
			}
			hs, ok := w.next(seq, ts, body, prev, hash, nil, false)
			if !ok {
				rows.Close()
				return chainBroken(w.rep)
			}
			seqs = append(seqs, seq)
			hashes = append(hashes, joinHashes(hs))
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		rows.Close()
		if len(seqs) == 0 {
			break
		}
		for i, seq := range seqs {
			if _, err := tx.ExecContext(ctx, `INSERT INTO audit_tree (seq, hashes) VALUES (?, ?)`, seq, hashes[i]); err != nil {
				return err
			}
		}
		after = seqs[len(seqs)-1]
	}
	rep, _, err := verifyLog(ctx, tx)
	if err != nil {
		return err
	}
	if !rep.OK {
		return mediator.Errorf(mediator.CodeInternal, "the audit log built from the chain does not verify: %s", rep.Problem)
	}
	return nil
}

// chainBroken is the error that stops the migration over a broken chain.
func chainBroken(rep AuditReport) error {
	return mediator.Errorf(mediator.CodeInternal,
		"the audit chain is broken at record %d (%s), so no log is built over it and the database is left as it was; move %s aside to keep the evidence, and the host starts a new one",
		rep.BadSeq, rep.Problem, DBFileName)
}
