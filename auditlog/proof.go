package auditlog

import (
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

// ProofFormat names the inclusion proof's JSON format (Proof); a checker
// refuses any other.
const ProofFormat = "nmhost-audit-proof/1"

// Proof shows that one record is in the log: anyone holding the verifier
// key checks it with CheckProof (docs/permissions.md, "The audit trail").
type Proof struct {
	Format string `json:"format"` // ProofFormat
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

// Consistency shows that the log of Size records extends the log of
// OldSize records: tlog.CheckTree(Proof, Size, Root, OldSize, OldRoot).
type Consistency struct {
	OldSize    int64          `json:"oldSize"`
	OldRoot    tlog.Hash      `json:"oldRoot"`
	Size       int64          `json:"size"`
	Root       tlog.Hash      `json:"root"`
	Proof      tlog.TreeProof `json:"proof"`
	Checkpoint string         `json:"checkpoint"` // the signed head of Size
}

// CheckProof checks an inclusion proof (a Proof as JSON) with nothing but
// the verifier key: the checkpoint's signature, then the path from the
// record's leaf to the signed head. `nmhost audit check-proof` is this
// function; it needs no data dir and no database.
func CheckProof(proofJSON []byte, verifierKey string) (Proof, tlog.Tree, error) {
	var p Proof
	if err := mediator.DecodeExact(proofJSON, &p); err != nil {
		return Proof{}, tlog.Tree{}, fmt.Errorf("not an audit proof: %w", err)
	}
	if p.Format != ProofFormat {
		return Proof{}, tlog.Tree{}, fmt.Errorf("not an audit proof: format %q, want %q", p.Format, ProofFormat)
	}
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return Proof{}, tlog.Tree{}, fmt.Errorf("not a verifier key: %w", err)
	}
	n, err := note.Open([]byte(p.Checkpoint), note.VerifierList(v))
	if err != nil {
		return Proof{}, tlog.Tree{}, fmt.Errorf("the proof's checkpoint is not signed by %s: %w", verifierKey, err)
	}
	tree, err := tlog.ParseTree([]byte(n.Text))
	if err != nil {
		return Proof{}, tlog.Tree{}, fmt.Errorf("the proof's checkpoint is not a tree head: %w", err)
	}
	if p.Seq < 1 || p.Seq > tree.N {
		return Proof{}, tlog.Tree{}, fmt.Errorf("record %d is outside the checkpoint's %d records", p.Seq, tree.N)
	}
	if err := tlog.CheckRecord(p.Proof, tree.N, tree.Hash, p.Seq-1, tlog.RecordHash([]byte(p.Record))); err != nil {
		return Proof{}, tlog.Tree{}, fmt.Errorf("record %d is not proved to be in the signed log of %d records: %w", p.Seq, tree.N, err)
	}
	return p, tree, nil
}
