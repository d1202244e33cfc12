package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// checkProof is all a third party needs to check what `nmhost audit
// prove SEQ` printed: the JSON, the verifier key (`nmhost audit key`),
// encoding/json and golang.org/x/mod/sumdb's tlog and note. Nothing of
// nmhost.
func checkProof(proofJSON []byte, verifierKey string) (seq int64, record string, logSize int64, err error) {
	var p struct {
		Format     string   `json:"format"`     // "nmhost-audit-proof/1"
		Seq        int64    `json:"seq"`        // the record; its leaf is seq-1
		Record     string   `json:"record"`     // the exact bytes hashed into the leaf
		Proof      []string `json:"proof"`      // base64 hashes from the leaf to the head
		Checkpoint string   `json:"checkpoint"` // the signed tree head
	}
	if err := json.Unmarshal(proofJSON, &p); err != nil {
		return 0, "", 0, err
	}
	if p.Format != "nmhost-audit-proof/1" {
		return 0, "", 0, fmt.Errorf("format %q", p.Format)
	}
	// 1. The checkpoint is signed by the key we trust.
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return 0, "", 0, err
	}
	n, err := note.Open([]byte(p.Checkpoint), note.VerifierList(v))
	if err != nil {
		return 0, "", 0, err
	}
	tree, err := tlog.ParseTree([]byte(n.Text))
	if err != nil {
		return 0, "", 0, err
	}
	// 2. The record's leaf hashes up to the signed head along the path.
	proof := make(tlog.RecordProof, len(p.Proof))
	for i, s := range p.Proof {
		if proof[i], err = tlog.ParseHash(s); err != nil {
			return 0, "", 0, err
		}
	}
	if p.Seq < 1 || p.Seq > tree.N {
		return 0, "", 0, errors.New("record outside the signed log")
	}
	if err := tlog.CheckRecord(proof, tree.N, tree.Hash, p.Seq-1, tlog.RecordHash([]byte(p.Record))); err != nil {
		return 0, "", 0, err
	}
	return p.Seq, p.Record, tree.N, nil
}

// Example_auditProof: the host proves one record of its audit log, and a
// third party who holds only the verifier key checks the proof.
func Example_auditProof() {
	dir, err := os.MkdirTemp("", "nmhost-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	at := time.UnixMilli(1_767_225_600_000) // 2026-01-01T00:00:00Z
	st, err := store.Open(dir, store.Options{Now: func() time.Time { return at }})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for _, reason := range []string{"first", "second", "third"} {
		op := mediator.Operation{AgentID: "summarizer", Name: mediator.OpLog}
		if _, err := st.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: op, Allowed: true, Reason: reason}); err != nil {
			log.Fatal(err)
		}
	}

	// On the host: nmhost audit key, nmhost audit prove 2.
	vkey, err := st.AuditVerifierKey()
	if err != nil {
		log.Fatal(err)
	}
	p, err := st.ProveAuditInclusion(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	proofJSON, err := json.Marshal(p)
	if err != nil {
		log.Fatal(err)
	}

	// Anywhere else, with the JSON and the key alone.
	seq, record, size, err := checkProof(proofJSON, vkey)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("record %d of the signed log of %d records:\n%s\n", seq, size, record)

	// Changing one byte of the record breaks the proof.
	p.Record = p.Record[:len(p.Record)-2] + "X}"
	forged, _ := json.Marshal(p)
	if _, _, _, err := checkProof(forged, vkey); err != nil {
		fmt.Println("edited record:", err)
	}
	// Output:
	// record 2 of the signed log of 3 records:
	// {"ts":1767225600000,"kind":"decision","operation":{"agentId":"summarizer","permission":"","operation":"log"},"allowed":true,"reason":"second"}
	// edited record: invalid transparency proof
}
