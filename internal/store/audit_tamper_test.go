package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

// appendN appends n log records to s with reasons "0", "1", ...
func appendN(t testing.TB, s *Store, n int) {
	t.Helper()
	for i := range n {
		e := mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "a", Name: mediator.OpLog}, Reason: strings.Repeat("r", i%3) + string(rune('0'+i%10))}
		if _, err := s.AppendAudit(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// rewriteLog is the attacker who knows the code: it takes the records'
// bodies, lets edit change them (drop, reorder, alter), then writes them
// back as a fresh log, numbering them 1..n again and recomputing the
// chain, the time column and every stored tree hash, exactly as appends
// would have. Only a checkpoint kept elsewhere can catch this.
func rewriteLog(t *testing.T, s *Store, edit func(bodies []string) []string) {
	t.Helper()
	ctx := context.Background()
	var bodies []string
	rows, err := s.db.Query(`SELECT body FROM audit ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	rows.Close()
	bodies = edit(bodies)
	err = s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DELETE FROM audit; DELETE FROM audit_tree`); err != nil {
			return err
		}
		var tree treeBuilder
		prev := ""
		for i, b := range bodies {
			seq := int64(i + 1)
			ts, ok := bodyTime([]byte(b))
			if !ok {
				t.Fatalf("body %q has no time", b)
			}
			h := auditHash(prev, seq, []byte(b))
			if _, err := tx.Exec(`INSERT INTO audit (seq, ts, body, prev, hash) VALUES (?, ?, ?, ?, ?)`, seq, ts, b, prev, h); err != nil {
				return err
			}
			hs, err := tree.add(tlog.RecordHash([]byte(b)))
			if err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO audit_tree (seq, hashes) VALUES (?, ?)`, seq, joinHashes(hs)); err != nil {
				return err
			}
			prev = h
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func execSQL(query string, args ...any) func(t *testing.T, s *Store) {
	return func(t *testing.T, s *Store) {
		t.Helper()
		if _, err := s.db.Exec(query, args...); err != nil {
			t.Fatal(err)
		}
	}
}

// editHashes changes record seq's stored hashes in place.
func editHashes(seq int64, edit func(b []byte)) func(t *testing.T, s *Store) {
	return func(t *testing.T, s *Store) {
		t.Helper()
		var b []byte
		if err := s.db.QueryRow(`SELECT hashes FROM audit_tree WHERE seq = ?`, seq).Scan(&b); err != nil {
			t.Fatal(err)
		}
		edit(b)
		execSQL(`UPDATE audit_tree SET hashes = ? WHERE seq = ?`, b, seq)(t, s)
	}
}

// TestVerifyAuditAgainstCheckpointCatchesTampering: a log of 7 records
// whose first 5 were signed into a checkpoint, tampered with in each way
// an attacker with write access to the database could; VerifyAudit given
// the checkpoint must fail and say what happened. logAlone says whether
// the log without the checkpoint already shows it: the rewrites that
// recompute every hash need the checkpoint.
func TestVerifyAuditAgainstCheckpointCatchesTampering(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		tamper func(t *testing.T, s *Store)
		// checkpoint replaces the honest checkpoint when set.
		checkpoint func(t *testing.T, s *Store) []byte
		word       string // in the problem
		badSeq     int64  // the record named, 0 when the problem is the whole log's
		logAlone   bool   // VerifyAudit without the checkpoint fails too
	}{
		{name: "untouched"},
		{name: "timestamp moved", tamper: execSQL(`UPDATE audit SET ts = ts - 86400000 WHERE seq = 2`),
			word: "timestamp was moved", badSeq: 2, logAlone: true},
		{name: "timestamp moved in the body, everything re-hashed", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string {
				b[1] = strings.Replace(b[1], `{"ts":17`, `{"ts":16`, 1)
				return b
			})
		}, word: "rewritten"},
		{name: "newest records deleted", tamper: execSQL(`DELETE FROM audit WHERE seq > 3; DELETE FROM audit_tree WHERE seq > 3`),
			word: "truncated", badSeq: 4},
		{name: "newest records deleted, leaves left", tamper: execSQL(`DELETE FROM audit WHERE seq > 3`),
			word: "truncated", badSeq: 4, logAlone: true},
		{name: "record edited and re-hashed forward", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string {
				b[2] = strings.Replace(b[2], `"allowed":false`, `"allowed":true`, 1)
				return b
			})
		}, word: "rewritten"},
		{name: "record edited, chain re-hashed, tree left", tamper: func(t *testing.T, s *Store) {
			var prev, body string
			s.db.QueryRow(`SELECT prev, body FROM audit WHERE seq = 3`).Scan(&prev, &body)
			body = strings.Replace(body, `"allowed":false`, `"allowed":true`, 1)
			execSQL(`UPDATE audit SET body = ?, hash = ? WHERE seq = 3`, body, auditHash(prev, 3, []byte(body)))(t, s)
			for seq := int64(4); seq <= 7; seq++ {
				s.db.QueryRow(`SELECT hash FROM audit WHERE seq = ?`, seq-1).Scan(&prev)
				s.db.QueryRow(`SELECT body FROM audit WHERE seq = ?`, seq).Scan(&body)
				execSQL(`UPDATE audit SET prev = ?, hash = ? WHERE seq = ?`, prev, auditHash(prev, seq, []byte(body)), seq)(t, s)
			}
		}, word: "leaf", badSeq: 3, logAlone: true},
		{name: "record deleted in the middle", tamper: execSQL(`DELETE FROM audit WHERE seq = 3`),
			word: "missing", badSeq: 3, logAlone: true},
		{name: "record deleted in the middle, the rest renumbered and re-hashed", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string { return append(b[:2:2], b[3:]...) })
		}, word: "rewritten"},
		{name: "records reordered and re-hashed", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string { b[0], b[1] = b[1], b[0]; return b })
		}, word: "rewritten"},
		// Record 4 is leaf 3: its row holds the leaf and the level-1 and
		// level-2 nodes it completes.
		{name: "stored hashes edited (a subtree hash)", tamper: editHashes(4, func(b []byte) { b[tlog.HashSize] ^= 1 }),
			word: "stored hashes were edited", badSeq: 4, logAlone: true},
		{name: "stored hashes edited (a leaf)", tamper: editHashes(5, func(b []byte) { b[0] ^= 1 }),
			word: "leaf", badSeq: 5, logAlone: true},
		{name: "stored hashes removed", tamper: execSQL(`DELETE FROM audit_tree WHERE seq = 6`),
			word: "no leaf", badSeq: 6, logAlone: true},
		{name: "checkpoint signed by another key", checkpoint: foreignCheckpoint, word: "another key"},
		{name: "checkpoint altered", checkpoint: func(t *testing.T, s *Store) []byte {
			cp, _, _, err := s.AuditCheckpoint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return []byte(strings.Replace(string(cp), "\n7\n", "\n3\n", 1))
		}, word: "altered"},
		{name: "key replaced and the rewrite re-signed", tamper: func(t *testing.T, s *Store) {
			rewriteLog(t, s, func(b []string) []string { return b[1:] })
			skey, vkey, err := note.GenerateKey(rand.Reader, AuditKeyName)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeFile0600(s, skey+"\n"+vkey+"\n"); err != nil {
				t.Fatal(err)
			}
		}, word: "another key"},
		{name: "key removed", tamper: func(t *testing.T, s *Store) {
			if err := removeKey(s); err != nil {
				t.Fatal(err)
			}
		}, word: "no audit key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTestStore(t, freshDir(t))
			appendN(t, s, 5)
			cp, size, _, err := s.AuditCheckpoint(ctx)
			if err != nil || size != 5 {
				t.Fatalf("checkpoint: %d %v", size, err)
			}
			appendN(t, s, 2)
			if c.checkpoint != nil {
				cp = c.checkpoint(t, s)
			}
			if c.tamper != nil {
				c.tamper(t, s)
			}
			rep, err := s.VerifyAudit(ctx, cp)
			if err != nil {
				t.Fatal(err)
			}
			if c.word == "" {
				if !rep.OK || rep.Records != 7 || rep.Checkpoint != 5 || rep.Root == "" {
					t.Fatalf("untouched log reported %+v", rep)
				}
				return
			}
			if rep.OK || !strings.Contains(rep.Problem, c.word) || rep.BadSeq != c.badSeq {
				t.Fatalf("report %+v; want a problem naming %q at record %d", rep, c.word, c.badSeq)
			}
			t.Log(rep.Problem)
			alone, err := s.VerifyAudit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if alone.OK == c.logAlone {
				t.Fatalf("without the checkpoint: %+v; want caught=%v", alone, c.logAlone)
			}
		})
	}
}

// foreignCheckpoint is the log's present head, signed with a key that is
// not the data dir's: what a forger without the key can make.
func foreignCheckpoint(t *testing.T, s *Store) []byte {
	t.Helper()
	skey, _, err := note.GenerateKey(rand.Reader, AuditKeyName)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	size, root, err := treeHead(context.Background(), s.db)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := note.Sign(&note.Note{Text: string(tlog.FormatTree(tlog.Tree{N: size, Hash: root}))}, signer)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}
