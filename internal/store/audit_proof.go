package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

// AuditProofFormat names the inclusion proof's JSON format (AuditProof);
// a checker refuses any other.
const AuditProofFormat = "nmhost-audit-proof/1"

// AuditProof shows that one record is in the log: anyone holding the
// verifier key checks it with golang.org/x/mod/sumdb/tlog and note alone
// (CheckAuditProof; docs/permissions.md, "The audit trail").
type AuditProof struct {
	Format string `json:"format"` // AuditProofFormat
	Seq    int64  `json:"seq"`    // the record; its leaf index is seq-1
	// Record is the record's body, the exact bytes whose tlog.RecordHash
	// is its leaf: canonical JSON holding its time and entry.
	Record string `json:"record"`
	// Proof is the path from the leaf to the checkpoint's tree head
	// (tlog.RecordProof: base64 hashes).
	Proof tlog.RecordProof `json:"proof"`
	// Checkpoint is the signed tree head (a note) the proof leads to.
	Checkpoint string `json:"checkpoint"`
}

// AuditConsistency shows that the log of Size records extends the log of
// OldSize records: tlog.CheckTree(Proof, Size, Root, OldSize, OldRoot).
type AuditConsistency struct {
	OldSize    int64          `json:"oldSize"`
	OldRoot    tlog.Hash      `json:"oldRoot"`
	Size       int64          `json:"size"`
	Root       tlog.Hash      `json:"root"`
	Proof      tlog.TreeProof `json:"proof"`
	Checkpoint string         `json:"checkpoint"` // the signed head of Size
}

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
		signed, err = signTree(key, size, root, s.now())
		return err
	})
	return signed, size, root, err
}

// ProveAuditInclusion returns the proof that record seq is in the log's
// present tree, with that tree's signed head. It checks the record's
// leaf and the proof before handing them out, so a damaged record or tree
// is an error here, not a proof that fails elsewhere.
func (s *Store) ProveAuditInclusion(ctx context.Context, seq int64) (AuditProof, error) {
	key, err := s.auditKey(true)
	if err != nil {
		return AuditProof{}, err
	}
	var p AuditProof
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
		signed, err := signTree(key, size, root, s.now())
		if err != nil {
			return err
		}
		p = AuditProof{Format: AuditProofFormat, Seq: seq, Record: string(body), Proof: proof, Checkpoint: string(signed)}
		return nil
	})
	return p, err
}

// ProveAuditConsistency returns the proof that the log's present tree
// extends its tree of oldSize records, with the present tree's signed
// head. Whoever kept a checkpoint of oldSize records checks it against
// their own copy of the old head.
func (s *Store) ProveAuditConsistency(ctx context.Context, oldSize int64) (AuditConsistency, error) {
	key, err := s.auditKey(true)
	if err != nil {
		return AuditConsistency{}, err
	}
	var c AuditConsistency
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
		signed, err := signTree(key, size, root, s.now())
		if err != nil {
			return err
		}
		c = AuditConsistency{OldSize: oldSize, OldRoot: oldRoot, Size: size, Root: root, Proof: proof, Checkpoint: string(signed)}
		return nil
	})
	return c, err
}

// CheckAuditProof checks an inclusion proof (the JSON ProveAuditInclusion's
// value encodes to) with nothing but the verifier key: the checkpoint's
// signature, then the path from the record's leaf to the signed head. It
// needs no store; `nmhost audit check-proof` is this function.
func CheckAuditProof(proofJSON []byte, verifierKey string) (AuditProof, tlog.Tree, error) {
	var p AuditProof
	if err := mediator.DecodeExact(proofJSON, &p); err != nil {
		return AuditProof{}, tlog.Tree{}, fmt.Errorf("not an audit proof: %w", err)
	}
	if p.Format != AuditProofFormat {
		return AuditProof{}, tlog.Tree{}, fmt.Errorf("not an audit proof: format %q, want %q", p.Format, AuditProofFormat)
	}
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return AuditProof{}, tlog.Tree{}, fmt.Errorf("not a verifier key: %w", err)
	}
	n, err := note.Open([]byte(p.Checkpoint), note.VerifierList(v))
	if err != nil {
		return AuditProof{}, tlog.Tree{}, fmt.Errorf("the proof's checkpoint is not signed by %s: %w", verifierKey, err)
	}
	tree, err := tlog.ParseTree([]byte(n.Text))
	if err != nil {
		return AuditProof{}, tlog.Tree{}, fmt.Errorf("the proof's checkpoint is not a tree head: %w", err)
	}
	if p.Seq < 1 || p.Seq > tree.N {
		return AuditProof{}, tlog.Tree{}, fmt.Errorf("record %d is outside the checkpoint's %d records", p.Seq, tree.N)
	}
	if err := tlog.CheckRecord(p.Proof, tree.N, tree.Hash, p.Seq-1, tlog.RecordHash([]byte(p.Record))); err != nil {
		return AuditProof{}, tlog.Tree{}, fmt.Errorf("record %d is not proved to be in the signed log of %d records: %w", p.Seq, tree.N, err)
	}
	return p, tree, nil
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

// signTree signs a tree head in the note format the Go checksum database
// uses (tlog.FormatTree), so tlog.ParseTree and note.Open read it, with
// one more line that tlog.ParseTree skips: the time of signing
// (checkpointTimeLine), so whoever keeps the checkpoint can say since
// when the log is known to extend it.
func signTree(key auditKey, size int64, root tlog.Hash, at time.Time) ([]byte, error) {
	text := string(tlog.FormatTree(tlog.Tree{N: size, Hash: root})) + checkpointTimeLine(at)
	return note.Sign(&note.Note{Text: text}, key.signer)
}

// readSnapshot runs fn in one read transaction, so everything it reads is
// from the same moment of the log even while other processes append.
func (s *Store) readSnapshot(ctx context.Context, op string, fn func(q querier) error) error {
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
