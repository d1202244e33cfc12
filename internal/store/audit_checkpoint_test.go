package store

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

// signWithDataDirKey signs a tree head of the caller's choosing with the
// data dir's own key: what someone who read the key file could do.
func signWithDataDirKey(t *testing.T, s *Store, tree tlog.Tree) []byte {
	t.Helper()
	key, err := s.auditKey(false)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := note.Sign(&note.Note{Text: string(tlog.FormatTree(tree))}, key.signer)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestCheckAuditCheckpointExtends(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	empty, size, _, err := s.AuditCheckpoint(ctx)
	if err != nil || size != 0 {
		t.Fatalf("checkpoint of the empty log: %d %v", size, err)
	}
	signedAt, ok := CheckpointTime(empty)
	if !ok || signedAt.IsZero() {
		t.Fatalf("the checkpoint %q has no time line", empty)
	}
	appendN(t, s, 3)
	ext, err := s.CheckAuditCheckpoint(ctx, empty)
	if err != nil {
		t.Fatalf("empty checkpoint: %v", err)
	}
	if ext.OldSize != 0 || ext.Size != 3 || !ext.OldTime.Equal(signedAt) || !ext.Time.After(signedAt) {
		t.Fatalf("extension %+v; want 0 -> 3 records, old time %s", ext, signedAt)
	}
	if at, ok := CheckpointTime(ext.Checkpoint); !ok || !at.Equal(ext.Time) {
		t.Fatalf("new checkpoint's time %s %v; want %s", at, ok, ext.Time)
	}
	// The new checkpoint is the one to keep: it checks, and so does the
	// thorough verification.
	appendN(t, s, 2)
	next, err := s.CheckAuditCheckpoint(ctx, ext.Checkpoint)
	if err != nil || next.OldSize != 3 || next.Size != 5 || !next.OldTime.Equal(ext.Time) {
		t.Fatalf("second check: %+v %v", next, err)
	}
	if rep, err := s.VerifyAudit(ctx, next.Checkpoint); err != nil || !rep.OK || rep.Checkpoint != 5 {
		t.Fatalf("VerifyAudit of the new checkpoint: %+v %v", rep, err)
	}
	// A checkpoint without a time line (as tlog alone formats one) checks;
	// it just cannot say when it was signed.
	head, root, err := treeHead(ctx, s.db)
	if err != nil {
		t.Fatal(err)
	}
	bare := signWithDataDirKey(t, s, tlog.Tree{N: head, Hash: root})
	if ext, err := s.CheckAuditCheckpoint(ctx, bare); err != nil || !ext.OldTime.IsZero() || ext.OldSize != 5 {
		t.Fatalf("checkpoint without time: %+v %v", ext, err)
	}
}

// TestCheckAuditCheckpointRefusesTampering: a log of 7 records whose first
// 5 were signed into a checkpoint, then tampered with, or the checkpoint
// forged; each refusal carries its reason code.
func TestCheckAuditCheckpointRefusesTampering(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		tamper     func(t *testing.T, s *Store)
		checkpoint func(t *testing.T, s *Store, honest []byte) []byte
		code       mediator.Code
	}{
		{name: "newest records deleted with their leaves", tamper: execSQL(`DELETE FROM audit WHERE seq > 3; DELETE FROM audit_tree WHERE seq > 3`),
			code: mediator.CodeAuditTruncated},
		{name: "newest records deleted, leaves left", tamper: execSQL(`DELETE FROM audit WHERE seq > 3`),
			code: mediator.CodeAuditTruncated},
		{name: "records after the checkpoint deleted, leaves left", tamper: execSQL(`DELETE FROM audit WHERE seq > 6`),
			code: mediator.CodeAuditInconsistent},
		{name: "whole log emptied", tamper: execSQL(`DELETE FROM audit; DELETE FROM audit_tree`),
			code: mediator.CodeAuditTruncated},
		{name: "record edited and re-hashed forward", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string {
				b[2] = strings.Replace(b[2], `"allowed":false`, `"allowed":true`, 1)
				return b
			})
		}, code: mediator.CodeAuditInconsistent},
		{name: "record deleted in the middle, the rest renumbered and re-hashed", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string { return append(b[:2:2], b[3:]...) })
		}, code: mediator.CodeAuditInconsistent},
		{name: "records reordered and re-hashed", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string { b[0], b[1] = b[1], b[0]; return b })
		}, code: mediator.CodeAuditInconsistent},
		{name: "the checkpoint's newest record edited, tree left", tamper: func(t *testing.T, s *Store) {
			var body string
			s.db.QueryRow(`SELECT body FROM audit WHERE seq = 5`).Scan(&body)
			execSQL(`UPDATE audit SET body = ? WHERE seq = 5`, strings.Replace(body, `"allowed":false`, `"allowed":true`, 1))(t, s)
		}, code: mediator.CodeAuditInconsistent},
		{name: "stored leaf edited", tamper: editHashes(5, func(b []byte) { b[0] ^= 1 }),
			code: mediator.CodeAuditInconsistent},
		{name: "stored hashes removed", tamper: execSQL(`DELETE FROM audit_tree WHERE seq = 6`),
			code: mediator.CodeAuditInconsistent},
		// Record 6 is leaf 5: its row holds the leaf and the level-1 node
		// of leaves 4-5, which the head of 7 reads.
		{name: "stored hashes cut short", tamper: execSQL(`UPDATE audit_tree SET hashes = substr(hashes, 1, 32) WHERE seq = 6`),
			code: mediator.CodeAuditInconsistent},
		{name: "the newest record deleted, its leaf left", tamper: execSQL(`DELETE FROM audit WHERE seq = 7`),
			code: mediator.CodeAuditInconsistent},
		{name: "signed by another key", checkpoint: func(t *testing.T, s *Store, _ []byte) []byte { return foreignCheckpoint(t, s) },
			code: mediator.CodeAuditBadSignature},
		{name: "size altered after signing", checkpoint: func(t *testing.T, s *Store, cp []byte) []byte {
			return []byte(strings.Replace(string(cp), "\n5\n", "\n3\n", 1))
		}, code: mediator.CodeAuditBadSignature},
		{name: "time altered after signing", checkpoint: func(t *testing.T, s *Store, cp []byte) []byte {
			return []byte(strings.Replace(string(cp), "\ntime 2", "\ntime 1", 1))
		}, code: mediator.CodeAuditBadSignature},
		{name: "signature cut", checkpoint: func(t *testing.T, s *Store, cp []byte) []byte {
			text, _, _ := strings.Cut(string(cp), "\n\n")
			return []byte(text + "\n\n")
		}, code: mediator.CodeBadRequest},
		{name: "a bigger tree, signed with the key", checkpoint: func(t *testing.T, s *Store, _ []byte) []byte {
			return signWithDataDirKey(t, s, tlog.Tree{N: 9, Hash: tlog.Hash{1}})
		}, code: mediator.CodeAuditTruncated},
		{name: "a different head, signed with the key", checkpoint: func(t *testing.T, s *Store, _ []byte) []byte {
			return signWithDataDirKey(t, s, tlog.Tree{N: 5, Hash: tlog.Hash{1}})
		}, code: mediator.CodeAuditInconsistent},
		{name: "a different empty head, signed with the key", checkpoint: func(t *testing.T, s *Store, _ []byte) []byte {
			return signWithDataDirKey(t, s, tlog.Tree{N: 0, Hash: tlog.Hash{1}})
		}, code: mediator.CodeAuditInconsistent},
		{name: "signed note that is not a tree head", checkpoint: func(t *testing.T, s *Store, _ []byte) []byte {
			key, _ := s.auditKey(false)
			cp, _ := note.Sign(&note.Note{Text: "hello\n"}, key.signer)
			return cp
		}, code: mediator.CodeBadRequest},
		{name: "key removed", tamper: func(t *testing.T, s *Store) {
			if err := removeKey(s); err != nil {
				t.Fatal(err)
			}
		}, code: mediator.CodeAuditBadSignature},
		{name: "key replaced", tamper: func(t *testing.T, s *Store) {
			skey, vkey, err := note.GenerateKey(rand.Reader, AuditKeyName)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeFile0600(s, skey+"\n"+vkey+"\n"); err != nil {
				t.Fatal(err)
			}
		}, code: mediator.CodeAuditBadSignature},
		{name: "garbage", checkpoint: func(*testing.T, *Store, []byte) []byte { return []byte("not a checkpoint\x00\xff") },
			code: mediator.CodeBadRequest},
		{name: "empty", checkpoint: func(*testing.T, *Store, []byte) []byte { return []byte{} }, code: mediator.CodeBadRequest},
		{name: "oversized", checkpoint: func(_ *testing.T, _ *Store, cp []byte) []byte {
			return append(cp, strings.Repeat("x", MaxAuditCheckpointBytes)...)
		}, code: mediator.CodeTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTestStore(t, freshDir(t))
			appendN(t, s, 5)
			cp, _, _, err := s.AuditCheckpoint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			appendN(t, s, 2)
			if c.checkpoint != nil {
				cp = c.checkpoint(t, s, cp)
			}
			if c.tamper != nil {
				c.tamper(t, s)
			}
			ext, err := s.CheckAuditCheckpoint(ctx, cp)
			if err == nil {
				t.Fatalf("accepted: %+v", ext)
			}
			wantCode(t, err, c.code)
			t.Log(err)
		})
	}
}

// The cheap check reads the records at the two ends only: a record edited
// in between with its chain re-hashed and its leaf left alone passes it,
// and the thorough check (VerifyAudit, `nmhost audit verify`) catches it.
func TestCheckAuditCheckpointReadsTheEndsOnly(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	appendN(t, s, 5)
	cp, _, _, err := s.AuditCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var prev, body string
	s.db.QueryRow(`SELECT prev, body FROM audit WHERE seq = 3`).Scan(&prev, &body)
	body = strings.Replace(body, `"allowed":false`, `"allowed":true`, 1)
	execSQL(`UPDATE audit SET body = ?, hash = ? WHERE seq = 3`, body, auditHash(prev, 3, []byte(body)))(t, s)
	if _, err := s.CheckAuditCheckpoint(ctx, cp); err != nil {
		t.Fatalf("the cheap check read record 3: %v", err)
	}
	if rep, err := s.VerifyAudit(ctx, cp); err != nil || rep.OK {
		t.Fatalf("VerifyAudit missed the edit: %+v %v", rep, err)
	}
}

// BenchmarkCheckAuditCheckpoint1M: the check the extension and the viewer
// run on every start, on a log of 1,000,000 records against a checkpoint
// of the first 500,000 (BenchmarkVerifyAudit1M is the full walk).
func BenchmarkCheckAuditCheckpoint1M(b *testing.B) {
	ctx := context.Background()
	s, cp := benchLogWithCheckpoint(b)
	const n = benchLogRecords
	for b.Loop() {
		ext, err := s.CheckAuditCheckpoint(ctx, cp)
		if err != nil || ext.Size != n || ext.OldSize != n/2 {
			b.Fatalf("%+v %v", ext, err)
		}
	}
}
