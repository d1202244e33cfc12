package store

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/auditlog"
	"github.com/agentgate/nmhost/mediator"
)

// AuditCheckpoint signs the log's present tree head with the data dir's
// key (created on first use) and returns the signed note, the log's size
// and its head. Keep the note outside the data dir: VerifyAudit given it
// later proves that the log still extends it.
func (s *Store) AuditCheckpoint(ctx context.Context) (signed []byte, size int64, root tlog.Hash, err error) {
	key, err := s.auditKey(true)
	if err != nil {
		return nil, 0, tlog.Hash{}, err
	}
	err = s.readSnapshot(ctx, "audit checkpoint", func(q querier) error {
		size, root, err = treeHead(ctx, q)
		if err != nil {
			return err
		}
		signed, err = s.signDurable(ctx, key, size, root, s.now())
		return err
	})
	return signed, size, root, err
}

// ProveAuditInclusion returns the proof that record seq is in the log's
// present tree, with that tree's signed head. It checks the record's
// leaf and the proof before handing them out, so a damaged record or tree
// is an error here, not a proof that fails elsewhere.
func (s *Store) ProveAuditInclusion(ctx context.Context, seq int64) (auditlog.Proof, error) {
	key, err := s.auditKey(true)
	if err != nil {
		return auditlog.Proof{}, err
	}
	var p auditlog.Proof
	err = s.readSnapshot(ctx, "prove audit inclusion", func(q querier) error {
		size, root, err := treeHead(ctx, q)
		if err != nil {
			return err
		}
		if seq < 1 || seq > size {
			return mediator.Errorf(mediator.CodeBadRequest, "no audit record %d: the log holds records 1-%d", seq, size)
		}
		var body []byte
		if err := q.QueryRowContext(ctx, `SELECT body FROM audit WHERE seq = ?`, seq).Scan(&body); errors.Is(err, sql.ErrNoRows) {
			return mediator.Errorf(mediator.CodeInternal, "audit record %d is missing from the log's records (run nmhost audit verify)", seq)
		} else if err != nil {
			return err
		}
		leaf := tlog.RecordHash(body)
		hr := dbHashes{ctx, q}
		stored, err := hr.ReadHashes([]int64{tlog.StoredHashIndex(0, seq-1)})
		if err != nil {
			return err
		}
		if stored[0] != leaf {
			return mediator.Errorf(mediator.CodeInternal, "audit record %d does not match its leaf in the log's tree (run nmhost audit verify)", seq)
		}
		proof, err := tlog.ProveRecord(size, seq-1, hr)
		if err != nil {
			return err
		}
		if err := tlog.CheckRecord(proof, size, root, seq-1, leaf); err != nil {
			return mediator.Errorf(mediator.CodeInternal, "the log's stored hashes do not prove record %d (run nmhost audit verify): %v", seq, err)
		}
		signed, err := s.signDurable(ctx, key, size, root, s.now())
		if err != nil {
			return err
		}
		p = auditlog.Proof{Format: auditlog.ProofFormat, Seq: seq, Record: string(body), Proof: proof, Checkpoint: string(signed)}
		return nil
	})
	return p, err
}

// ProveAuditConsistency returns the proof that the log's present tree
// extends its tree of oldSize records, with the present tree's signed
// head. Whoever kept a checkpoint of oldSize records checks it against
// their own copy of the old head.
func (s *Store) ProveAuditConsistency(ctx context.Context, oldSize int64) (auditlog.Consistency, error) {
	key, err := s.auditKey(true)
	if err != nil {
		return auditlog.Consistency{}, err
	}
	var c auditlog.Consistency
	err = s.readSnapshot(ctx, "prove audit consistency", func(q querier) error {
		size, root, err := treeHead(ctx, q)
		if err != nil {
			return err
		}
		if oldSize < 0 || oldSize > size {
			return mediator.Errorf(mediator.CodeBadRequest, "the log holds %d records, not %d", size, oldSize)
		}
		hr := dbHashes{ctx, q}
		oldRoot, err := tlog.TreeHash(oldSize, hr)
		if err != nil {
			return err
		}
		proof := tlog.TreeProof{}
		if oldSize > 0 {
			if proof, err = tlog.ProveTree(size, oldSize, hr); err != nil {
				return err
			}
		}
		signed, err := s.signDurable(ctx, key, size, root, s.now())
		if err != nil {
			return err
		}
		c = auditlog.Consistency{OldSize: oldSize, OldRoot: oldRoot, Size: size, Root: root, Proof: proof, Checkpoint: string(signed)}
		return nil
	})
	return c, err
}

// treeHead is the stored tree's size and head.
func treeHead(ctx context.Context, q querier) (int64, tlog.Hash, error) {
	size, err := treeSize(ctx, q)
	if err != nil {
		return 0, tlog.Hash{}, err
	}
	root, err := tlog.TreeHash(size, dbHashes{ctx, q})
	return size, root, err
}

// signDurable signs a tree head of size records once they are all on
// disk: a signed checkpoint never covers a record a power loss could
// still take (sync.go).
func (s *Store) signDurable(ctx context.Context, key auditKey, size int64, root tlog.Hash, at time.Time) ([]byte, error) {
	if err := s.SyncAudit(ctx, size); err != nil {
		return nil, err
	}
	return signTree(key, size, root, at)
}

// signTree signs a tree head with the data dir's key (auditlog.Sign).
func signTree(key auditKey, size int64, root tlog.Hash, at time.Time) ([]byte, error) {
	return auditlog.Sign(key.signer, size, root, at)
}

// readSnapshot runs fn in one read transaction, so everything it reads is
// from the same moment of the log even while other processes append.
func (s *Store) readSnapshot(ctx context.Context, op string, fn func(q querier) error) error {
	s.settle()
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return storeErr(op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		var e *mediator.Error
		if errors.As(err, &e) {
			return err
		}
		return storeErr(op, err)
	}
	return nil
}
