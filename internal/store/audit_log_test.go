package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/auditlog"
	"github.com/agentgate/nmhost/mediator"
)

// TestStoredOwnerMatchesTlog: every stored-hash index a leaf writes maps
// back to that leaf's row and its place in it, so a proof reads the hash
// tlog expects.
func TestStoredOwnerMatchesTlog(t *testing.T) {
	var b treeBuilder
	for n := int64(0); n < 3000; n++ {
		hs, err := b.add(tlog.RecordHash([]byte{byte(n), byte(n >> 8)}))
		if err != nil {
			t.Fatal(err)
		}
		if got := tlog.StoredHashIndex(0, n+1) - tlog.StoredHashIndex(0, n); got != int64(len(hs)) {
			t.Fatalf("leaf %d stores %d hashes; tlog expects %d", n, len(hs), got)
		}
		for pos := range hs {
			seq, p := storedOwner(tlog.StoredHashIndex(0, n) + int64(pos))
			if seq != n+1 || p != int64(pos) {
				t.Fatalf("index of leaf %d hash %d maps to record %d position %d", n, pos, seq, p)
			}
		}
	}
}

// TestAuditCheckpointsAndProofs: for logs of every size up to 33, the
// signed checkpoint opens with the verifier key alone, every record's
// inclusion proof checks, and every earlier size is proved a prefix.
func TestAuditCheckpointsAndProofs(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	vkey, err := s.AuditVerifierKey()
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	var heads []tlog.Hash // heads[n] is the head of the log of n records
	for size := int64(0); size <= 33; size++ {
		if size > 0 {
			appendN(t, s, 1)
		}
		cp, n, root, err := s.AuditCheckpoint(ctx)
		if err != nil || n != size {
			t.Fatalf("checkpoint of %d: %d %v", size, n, err)
		}
		opened, err := note.Open(cp, note.VerifierList(verifier))
		if err != nil {
			t.Fatalf("checkpoint of %d: %v\n%s", size, err, cp)
		}
		tree, err := tlog.ParseTree([]byte(opened.Text))
		if err != nil || tree.N != size || tree.Hash != root {
			t.Fatalf("checkpoint of %d holds %+v %v; want %d %s", size, tree, err, size, root)
		}
		heads = append(heads, root)
		for seq := int64(1); seq <= size; seq++ {
			p, err := s.ProveAuditInclusion(ctx, seq)
			if err != nil {
				t.Fatalf("prove %d of %d: %v", seq, size, err)
			}
			b, _ := json.Marshal(p)
			if _, got, err := auditlog.CheckProof(b, vkey); err != nil || got.N != size || got.Hash != root {
				t.Fatalf("proof %d of %d: %v (%+v)\n%s", seq, size, err, got, b)
			}
		}
		for old := int64(0); old <= size; old++ {
			c, err := s.ProveAuditConsistency(ctx, old)
			if err != nil || c.OldRoot != heads[old] || c.Root != root || c.Size != size {
				t.Fatalf("consistency %d..%d: %+v %v", old, size, c, err)
			}
			if old > 0 {
				if err := tlog.CheckTree(c.Proof, size, root, old, heads[old]); err != nil {
					t.Fatalf("consistency %d..%d does not check: %v", old, size, err)
				}
			}
		}
		if rep, err := s.VerifyAudit(ctx, cp); err != nil || !rep.OK || rep.Records != size || rep.Checkpoint != size || rep.Root != root.String() {
			t.Fatalf("verify at %d: %+v %v", size, rep, err)
		}
	}
	if _, err := s.ProveAuditInclusion(ctx, 34); mediator.CodeOf(err) != mediator.CodeBadRequest {
		t.Fatalf("proof of a record beyond the log: %v", err)
	}
	if _, err := s.ProveAuditConsistency(ctx, 34); mediator.CodeOf(err) != mediator.CodeBadRequest {
		t.Fatalf("consistency with a longer log: %v", err)
	}
}

// TestCheckAuditProofRefusesForgeries: a proof checks only for the exact
// record, position and signed head it was made for.
func TestCheckAuditProofRefusesForgeries(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	appendN(t, s, 6)
	vkey, err := s.AuditVerifierKey()
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.ProveAuditInclusion(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	other := openTestStore(t, freshDir(t))
	otherKey, err := other.AuditVerifierKey()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		edit  func(p *auditlog.Proof)
		vkey  string
		wrong string
	}{
		{"record edited", func(p *auditlog.Proof) { p.Record = strings.Replace(p.Record, `"allowed":false`, `"allowed":true`, 1) }, vkey, "not proved"},
		{"another position", func(p *auditlog.Proof) { p.Seq = 4 }, vkey, "not proved"},
		{"path hash changed", func(p *auditlog.Proof) { p.Proof[0][0] ^= 1 }, vkey, "not proved"},
		{"path shortened", func(p *auditlog.Proof) { p.Proof = p.Proof[1:] }, vkey, "not proved"},
		{"checkpoint text changed", func(p *auditlog.Proof) { p.Checkpoint = strings.Replace(p.Checkpoint, "\n6\n", "\n7\n", 1) }, vkey, "not signed"},
		{"another verifier key", func(*auditlog.Proof) {}, otherKey, "not signed"},
		{"beyond the checkpoint", func(p *auditlog.Proof) { p.Seq = 7 }, vkey, "outside"},
		{"other format", func(p *auditlog.Proof) { p.Format = "nmhost-audit-proof/0" }, vkey, "format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := p
			q.Proof = append(tlog.RecordProof(nil), p.Proof...)
			c.edit(&q)
			b, _ := json.Marshal(q)
			if _, _, err := auditlog.CheckProof(b, c.vkey); err == nil || !strings.Contains(err.Error(), c.wrong) {
				t.Fatalf("forged proof: %v; want an error saying %q", err, c.wrong)
			}
		})
	}
	t.Run("unknown member", func(t *testing.T) {
		b, _ := json.Marshal(p)
		b = append(b[:len(b)-1], `,"extra":1}`...)
		if _, _, err := auditlog.CheckProof(b, vkey); err == nil {
			t.Fatal("a proof with an unknown member was accepted")
		}
	})
}

// TestAuditAppendIsAtomicWithItsLeaf: when the leaf cannot be stored the
// record is not appended either, so the chain and the tree never part.
func TestAuditAppendIsAtomicWithItsLeaf(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	appendN(t, s, 3)
	// A stray row makes the tree one leaf ahead of the records.
	if _, err := s.db.Exec(`INSERT INTO audit_tree (seq, hashes) VALUES (4, zeroblob(32))`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "a", Name: mediator.OpLog}}); err == nil {
		t.Fatal("append succeeded with the tree out of step")
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM audit`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d records after the failed append (%v); want 3", n, err)
	}
	if _, err := s.db.Exec(`DELETE FROM audit_tree WHERE seq = 4`); err != nil {
		t.Fatal(err)
	}
	appendN(t, s, 1)
	if rep, err := s.VerifyAudit(ctx); err != nil || !rep.OK || rep.Records != 4 {
		t.Fatalf("after recovery: %+v %v", rep, err)
	}
}

// TestListAuditShowsTheHashedTime: the time listed is the one inside the
// hashed body, so moving the ts column changes nothing shown, and verify
// names the move.
func TestListAuditShowsTheHashedTime(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	appendN(t, s, 2)
	before, err := s.ListAudit(ctx, 0, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE audit SET ts = 86400000 WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	after, err := s.ListAudit(ctx, 0, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Records) != 2 || after.Records[1].TS != before.Records[1].TS || after.Records[1].TS == 86400000 {
		t.Fatalf("listed time %d after moving the column; want the hashed %d", after.Records[1].TS, before.Records[1].TS)
	}
	rep, err := s.VerifyAudit(ctx)
	if err != nil || rep.OK || rep.BadSeq != 2 || !strings.Contains(rep.Problem, "1970-01-02T00:00:00Z") || !strings.Contains(rep.Problem, "moved") {
		t.Fatalf("verify after moving the time: %+v %v", rep, err)
	}
}
