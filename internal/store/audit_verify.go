package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/auditlog"
	"github.com/agentgate/nmhost/mediator"
)

// AuditReport is what VerifyAudit found.
type AuditReport struct {
	OK       bool   `json:"ok"`
	Records  int64  `json:"records"`            // records checked: the log's size when OK
	LastSeq  int64  `json:"lastSeq"`            // the last good record
	BadSeq   int64  `json:"badSeq,omitempty"`   // the first bad record (or where one is missing)
	Problem  string `json:"problem,omitempty"`  // what is wrong, in words
	LastHash string `json:"lastHash,omitempty"` // the chain's last link
	// Root is the tree head recomputed from the records (base64, as in a
	// checkpoint); set when the log is intact.
	Root string `json:"root,omitempty"`
	// Checkpoint is the size of the earlier checkpoint the log was proved
	// to extend; 0 when none was given.
	Checkpoint int64 `json:"checkpoint,omitempty"`
}

// VerifyAudit checks the whole log in one read snapshot: every record's
// chain link, its time column against its hashed time, and its leaf and
// the tree hashes stored with it against hashes recomputed from the
// records; then the recomputed tree head against the stored one. Given an
// earlier checkpoint (the signed note AuditCheckpoint returned), it also
// checks the checkpoint's signature with this data dir's key and proves
// that the present log extends it, which catches records removed from the
// end and records rewritten, chain and tree hashes included, since the
// checkpoint was signed.
//
// A problem with the records or the checkpoint is a report with OK false
// and the problem in words; an error means verification could not run.
// The checkpoint is optional (VerifyAudit(ctx) checks the log alone); at
// most one may be given.
func (s *Store) VerifyAudit(ctx context.Context, checkpoint ...[]byte) (AuditReport, error) {
	s.settle()
	if len(checkpoint) > 1 {
		return AuditReport{}, mediator.Errorf(mediator.CodeBadRequest, "verify audit: one checkpoint at a time, not %d", len(checkpoint))
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return AuditReport{}, storeErr("verify audit", err)
	}
	defer tx.Rollback()
	rep, root, err := verifyLog(ctx, tx)
	if err != nil {
		return AuditReport{}, storeErr("verify audit", err)
	}
	if !rep.OK || len(checkpoint) == 0 || len(checkpoint[0]) == 0 {
		return rep, nil
	}
	if err := s.checkCheckpoint(ctx, tx, &rep, root, checkpoint[0]); err != nil {
		return AuditReport{}, err
	}
	return rep, nil
}

// logWalker checks records one at a time in seq order; verification and
// the migration that builds the tree share it.
type logWalker struct {
	rep      AuditReport
	prevHash string
	tree     treeBuilder
}

// next checks the record that follows the last one and returns the tree
// hashes it should have stored. With stored non-nil it also compares them
// with the stored row. On a problem it fills rep and returns false.
func (w *logWalker) next(seq, ts int64, body []byte, prev, hash string, stored []byte, checkStored bool) ([]tlog.Hash, bool) {
	bad := func(seq int64, format string, args ...any) ([]tlog.Hash, bool) {
		w.rep.BadSeq, w.rep.Problem = seq, fmt.Sprintf(format, args...)
		return nil, false
	}
	want := w.rep.LastSeq + 1
	switch {
	case seq != want:
		return bad(want, "record %d is missing (the next one is %d): removed", want, seq)
	case prev != w.prevHash:
		return bad(seq, "record %d does not link to record %d: removed, reordered or edited", seq, seq-1)
	case auditHash(prev, seq, body) != hash:
		return bad(seq, "record %d's content does not match its hash: edited", seq)
	}
	if bts, ok := bodyTime(body); !ok {
		return bad(seq, "record %d's body does not begin with its time: edited", seq)
	} else if bts != ts {
		return bad(seq, "record %d's time column (%s) is not its hashed time (%s): the timestamp was moved",
			seq, time.UnixMilli(ts).UTC().Format(time.RFC3339Nano), time.UnixMilli(bts).UTC().Format(time.RFC3339Nano))
	}
	hs, err := w.tree.add(tlog.RecordHash(body))
	if err != nil {
		return bad(seq, "record %d: %v", seq, err)
	}
	if checkStored {
		switch {
		case stored == nil:
			return bad(seq, "record %d has no leaf in the log's tree: its stored hashes were removed", seq)
		case len(stored) < tlog.HashSize || !bytes.Equal(stored[:tlog.HashSize], hs[0][:]):
			return bad(seq, "record %d's content does not match its leaf in the log's tree: the record (chain re-hashed) or its stored hashes were edited", seq)
		case !bytes.Equal(stored, joinHashes(hs)):
			return bad(seq, "the tree hashes stored with record %d do not match the records: the stored hashes were edited", seq)
		}
	}
	w.rep.Records++
	w.rep.LastSeq, w.rep.LastHash, w.prevHash = seq, hash, hash
	return hs, true
}

// verifyLog walks every record with its stored hashes and returns the
// report and, when the log is intact, its tree head.
func verifyLog(ctx context.Context, q querier) (AuditReport, tlog.Hash, error) {
	var w logWalker
	bad := false
	err := scanLog(ctx, q, func(r *auditRow) bool {
		_, ok := w.next(r.seq, r.ts, r.body, r.prev, r.hash, r.stored, true)
		bad = !ok
		return ok
	})
	if err != nil {
		return AuditReport{}, tlog.Hash{}, err
	}
	if bad {
		return w.rep, tlog.Hash{}, nil
	}

	// Every record matched its row; a row beyond the last record means
	// records were removed from the end and their leaves left behind.
	size, err := treeSize(ctx, q)
	if err != nil {
		return AuditReport{}, tlog.Hash{}, err
	}
	if size != w.rep.Records {
		w.rep.BadSeq = w.rep.Records + 1
		w.rep.Problem = fmt.Sprintf("the log's tree holds %d leaves but %d records remain: records %d-%d were removed (truncated)", size, w.rep.Records, w.rep.Records+1, size)
		return w.rep, tlog.Hash{}, nil
	}
	root, err := w.tree.root()
	if err != nil {
		return AuditReport{}, tlog.Hash{}, err
	}
	head, err := tlog.TreeHash(size, dbHashes{ctx, q})
	if err != nil {
		return AuditReport{}, tlog.Hash{}, err
	}
	if head != root {
		w.rep.Problem = fmt.Sprintf("the stored tree head %s is not the head of the records, %s", head, root)
		return w.rep, tlog.Hash{}, nil
	}
	w.rep.OK, w.rep.Root = true, root.String()
	return w.rep, root, nil
}

// checkCheckpoint checks cp's signature with the data dir's key and proves
// that the verified log (rep.Records leaves, head root) extends it.
func (s *Store) checkCheckpoint(ctx context.Context, q querier, rep *AuditReport, root tlog.Hash, cp []byte) error {
	fail := func(badSeq int64, format string, args ...any) error {
		rep.OK, rep.BadSeq, rep.Problem = false, badSeq, fmt.Sprintf(format, args...)
		return nil
	}
	key, err := s.auditKey(false)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(0, "this data dir has no audit key (%s), so it cannot have signed the checkpoint: the key was removed, or the checkpoint is from elsewhere", AuditKeyFile)
	}
	if err != nil {
		return err
	}
	tree, _, err := auditlog.Open(cp, key.verifier, key.vkey)
	if err != nil {
		return fail(0, "%s", mediator.MessageOf(err))
	}
	if err := auditlog.CheckExtends(tree, rep.Records, root, dbHashes{ctx, q}); err != nil {
		switch mediator.CodeOf(err) {
		case mediator.CodeAuditTruncated:
			return fail(rep.Records+1, "%s (truncated)", mediator.MessageOf(err))
		case mediator.CodeAuditInconsistent:
			return fail(0, "%s: records were edited, removed or reordered, every hash recomputed, since it was signed", mediator.MessageOf(err))
		}
		return storeErr("verify audit", err)
	}
	rep.Checkpoint = tree.N
	return nil
}
