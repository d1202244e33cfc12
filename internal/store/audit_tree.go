package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// The audit log is a tlog tree (RFC 6962, as the Go checksum database
// uses it): record seq is leaf seq-1, and its leaf hash is
// tlog.RecordHash of the record's body, the canonical bytes that also
// carry its time. Appending leaf n stores the hashes tlog.StoredHashes
// returns for it (the leaf and every subtree it completes, 1 + log₂ n at
// most, two on average); they occupy the stored-hash indexes from
// tlog.StoredHashIndex(0, n) on, so one row per record in audit_tree
// holds them all, concatenated. Tree heads and proofs then read at most
// 2·log₂ n stored hashes and never recompute the tree.

// querier is what reading stored hashes needs: a *sql.DB, *sql.Tx or
// *sql.Conn, so a reader can see a transaction's snapshot.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// storedOwner returns the record that wrote stored-hash index idx and the
// hash's position in that record's row: a level-L node m is completed by
// leaf ((m+1)<<L)-1, whose row holds it L places after its leaf hash.
func storedOwner(idx int64) (seq int64, pos int64) {
	level, m := tlog.SplitStoredHashIndex(idx)
	n := (m+1)<<level - 1
	return n + 1, idx - tlog.StoredHashIndex(0, n)
}

// joinHashes is the audit_tree row for a record's stored hashes.
func joinHashes(hs []tlog.Hash) []byte {
	b := make([]byte, 0, len(hs)*tlog.HashSize)
	for _, h := range hs {
		b = append(b, h[:]...)
	}
	return b
}

// dbHashes reads stored hashes from audit_tree through q.
type dbHashes struct {
	ctx context.Context
	q   querier
}

// ReadHashes implements tlog.HashReader: one query for all the rows the
// indexes fall in (at most 2·log₂ n for a proof).
func (r dbHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	if len(indexes) == 0 {
		return nil, nil
	}
	rows := map[int64][]byte{}
	args := make([]any, 0, len(indexes))
	for _, idx := range indexes {
		seq, _ := storedOwner(idx)
		if _, ok := rows[seq]; !ok {
			rows[seq] = nil
			args = append(args, seq)
		}
	}
	q := `SELECT seq, hashes FROM audit_tree WHERE seq IN (?` + strings.Repeat(",?", len(args)-1) + `)`
	rs, err := r.q.QueryContext(r.ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var seq int64
		var b []byte
		if err := rs.Scan(&seq, &b); err != nil {
			return nil, err
		}
		rows[seq] = b
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		seq, pos := storedOwner(idx)
		b := rows[seq]
		if b == nil {
			return nil, fmt.Errorf("the stored hashes of record %d are missing", seq)
		}
		if len(b)%tlog.HashSize != 0 || int64(len(b)) < (pos+1)*tlog.HashSize {
			return nil, fmt.Errorf("the stored hashes of record %d are damaged (%d bytes)", seq, len(b))
		}
		copy(out[i][:], b[pos*tlog.HashSize:])
	}
	return out, nil
}

// treeSize is the number of leaves the stored tree holds.
func treeSize(ctx context.Context, q querier) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM audit_tree`).Scan(&n)
	return n, err
}

// treeBuilder recomputes the tree leaf by leaf, keeping only the frontier:
// the newest stored hash of each level, which is all that tlog.StoredHashes
// reads for the next leaf and all that tlog.TreeHash reads for the head.
// It is how verification and the migration walk a million records in
// O(log n) memory.
type treeBuilder struct {
	n        int64 // leaves added
	frontier [64]struct {
		idx  int64
		hash tlog.Hash
	}
}

// ReadHashes implements tlog.HashReader over the frontier.
func (b *treeBuilder) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, idx := range indexes {
		level, _ := tlog.SplitStoredHashIndex(idx)
		if f := b.frontier[level]; f.idx == idx {
			out[i] = f.hash
			continue
		}
		return nil, fmt.Errorf("audit tree: hash %d is not on the frontier", idx)
	}
	return out, nil
}

// add appends the next leaf and returns the hashes a store keeps for it.
func (b *treeBuilder) add(leaf tlog.Hash) ([]tlog.Hash, error) {
	hs, err := tlog.StoredHashesForRecordHash(b.n, leaf, b)
	if err != nil {
		return nil, err
	}
	for level, h := range hs {
		b.frontier[level].idx = tlog.StoredHashIndex(level, b.n>>level)
		b.frontier[level].hash = h
	}
	b.n++
	return hs, nil
}

// root is the head of the tree built so far.
func (b *treeBuilder) root() (tlog.Hash, error) { return tlog.TreeHash(b.n, b) }
