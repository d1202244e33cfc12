package store

import (
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

// MaxAuditCheckpointBytes bounds a checkpoint handed in to be checked
// (auditlog.MaxCheckpointBytes).
const MaxAuditCheckpointBytes = auditlog.MaxCheckpointBytes

// CheckpointTime returns when a checkpoint was signed (auditlog.CheckpointTime).
func CheckpointTime(signed []byte) (time.Time, bool) { return auditlog.CheckpointTime(signed) }

// AuditExtension is what CheckAuditCheckpoint found: the log holds every
// record the kept checkpoint signed, unchanged, and possibly more.
type AuditExtension struct {
	OldSize int64     // records the kept checkpoint signed
	OldTime time.Time // when it was signed; zero when it does not say
	Size    int64     // records the log holds now
	Time    time.Time // when Checkpoint was signed
	// Checkpoint is the present tree head, signed: the one to keep now.
	// It is proved to extend the kept one.
	Checkpoint []byte
}

// CheckAuditCheckpoint checks a checkpoint that was kept outside the data
// dir (the extension's storage, the viewer page's) against the log as it
// is now, in one read snapshot, and signs the present head. It refuses:
//
//   - audit_bad_signature: the checkpoint is not signed by this data dir's
//     key (forged, altered, made by another data dir, or the key was
//     replaced or removed since);
//   - audit_truncated: the log holds fewer records than the checkpoint
//     signed;
//   - audit_inconsistent: the log's tree does not extend the checkpoint's
//     (records it signed were rewritten, every hash recomputed), or the
//     records and their stored hashes disagree where it looks;
//   - bad_request / too_large: the text is not a checkpoint.
//
// It reads O(log n) stored hashes plus the two records at the checkpoint's
// and the log's ends, so it is cheap enough for every start of a client.
// VerifyAudit with the same checkpoint is the thorough check: it reads
// every record (`nmhost audit verify --checkpoint`).
func (s *Store) CheckAuditCheckpoint(ctx context.Context, cp []byte) (AuditExtension, error) {
	s.settle()
	if len(cp) > MaxAuditCheckpointBytes || len(cp) == 0 {
		_, _, err := auditlog.Open(cp, nil, "")
		return AuditExtension{}, err
	}
	key, err := s.auditKey(false)
	if errors.Is(err, fs.ErrNotExist) {
		return AuditExtension{}, mediator.Errorf(mediator.CodeAuditBadSignature, "this data dir has no audit key (%s), so it cannot have signed the checkpoint: the key was removed, or the checkpoint is from elsewhere", AuditKeyFile)
	}
	if err != nil {
		return AuditExtension{}, err
	}
	old, oldTime, err := auditlog.Open(cp, key.verifier, key.vkey)
	if err != nil {
		return AuditExtension{}, err
	}
	ext := AuditExtension{OldSize: old.N, OldTime: oldTime}
	err = s.readSnapshot(ctx, "check audit checkpoint", func(q querier) error {
		size, err := s.checkLogEnds(ctx, q, old.N)
		if err != nil {
			return err
		}
		hr := checkedHashes{dbHashes{ctx, q}}
		root, err := tlog.TreeHash(size, hr)
		if err != nil {
			return err
		}
		if err := auditlog.CheckExtends(old, size, root, hr); err != nil {
			return err
		}
		ext.Time = s.now()
		ext.Size = size
		ext.Checkpoint, err = s.signDurable(ctx, key, size, root, ext.Time)
		return err
	})
	if err != nil {
		return AuditExtension{}, err
	}
	return ext, nil
}

// checkLogEnds returns the log's size after the cheap checks that the
// records and the tree agree at their ends: the newest record and the
// newest leaf have the same number, at least oldSize, and the records at
// both ends (the kept checkpoint's newest and the log's newest) match
// their leaves. Counting rows would catch a record removed from the middle
// too, but costs a scan of the whole log; VerifyAudit catches that.
func (s *Store) checkLogEnds(ctx context.Context, q querier, oldSize int64) (int64, error) {
	var leaves, maxSeq int64
	err := q.QueryRowContext(ctx, `SELECT
		(SELECT coalesce(max(seq), 0) FROM audit_tree), (SELECT coalesce(max(seq), 0) FROM audit)`).Scan(&leaves, &maxSeq)
	if err != nil {
		return 0, err
	}
	size := min(leaves, maxSeq)
	switch {
	case oldSize > size:
		gone := fmt.Sprintf("records %d-%d were", size+1, oldSize)
		if size+1 == oldSize {
			gone = fmt.Sprintf("record %d was", oldSize)
		}
		return 0, mediator.Errorf(mediator.CodeAuditTruncated, "the log has %d records but the checkpoint signed %d: %s removed since", size, oldSize, gone)
	case leaves != maxSeq:
		return 0, mediator.Errorf(mediator.CodeAuditInconsistent, "the log's newest record is %d but its tree's newest leaf is %d: records or their stored hashes were removed (run nmhost audit verify)", maxSeq, leaves)
	}
	for _, seq := range []int64{oldSize, size} {
		if seq == 0 {
			continue
		}
		var body []byte
		err := q.QueryRowContext(ctx, `SELECT body FROM audit WHERE seq = ?`, seq).Scan(&body)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, mediator.Errorf(mediator.CodeAuditInconsistent, "audit record %d is missing (run nmhost audit verify)", seq)
		}
		if err != nil {
			return 0, err
		}
		stored, err := checkedHashes{dbHashes{ctx, q}}.ReadHashes([]int64{tlog.StoredHashIndex(0, seq-1)})
		if err != nil {
			return 0, err
		}
		if stored[0] != tlog.RecordHash(body) {
			return 0, mediator.Errorf(mediator.CodeAuditInconsistent, "audit record %d does not match its leaf in the log's tree: it was edited (run nmhost audit verify)", seq)
		}
	}
	return size, nil
}

// checkedHashes reads stored hashes like dbHashes, and tells a row that is
// missing or cut short (the tree was tampered with: audit_inconsistent)
// from a failure to read (internal_error).
type checkedHashes struct{ dbHashes }

func (r checkedHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	hs, err := r.dbHashes.ReadHashes(indexes)
	if err == nil || r.ctx.Err() != nil {
		return hs, err
	}
	for _, idx := range indexes {
		seq, pos := storedOwner(idx)
		var n int64
		switch e := r.q.QueryRowContext(r.ctx, `SELECT length(hashes) FROM audit_tree WHERE seq = ?`, seq).Scan(&n); {
		case errors.Is(e, sql.ErrNoRows):
			return nil, mediator.Errorf(mediator.CodeAuditInconsistent, "the stored hashes of audit record %d are missing: they were removed (run nmhost audit verify)", seq)
		case e == nil && (n%tlog.HashSize != 0 || n < (pos+1)*tlog.HashSize):
			return nil, mediator.Errorf(mediator.CodeAuditInconsistent, "the stored hashes of audit record %d are cut short: they were edited (run nmhost audit verify)", seq)
		}
	}
	return nil, err
}
