package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// oldVersion is the schema version before the audit log had a tree.
const oldVersion = 6

// buildOldDatabase writes dir/nmhost.db as a host of schema version 6
// left it: the first six migrations, a chain of n records appended the
// way that host appended them, and no audit_tree. edit, when set, then
// changes the file behind the host's back.
func buildOldDatabase(t *testing.T, dir string, n int, edit string) {
	t.Helper()
	path := filepath.Join(dir, DBFileName)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for v := range oldVersion {
		if _, err := db.Exec(migrations[v].sql); err != nil {
			t.Fatalf("migration %d: %v", v, err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA journal_mode=WAL; PRAGMA user_version = %d", oldVersion)); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for i := range n {
		seq := int64(i + 1)
		ts := 1_700_000_000_000 + seq
		body, err := auditBody(ts, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "old", Name: mediator.OpLog}, Reason: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		h := auditHash(prev, seq, body)
		if _, err := tx.Exec(`INSERT INTO audit (seq, ts, body, prev, hash) VALUES (?, ?, ?, ?, ?)`, seq, ts, string(body), prev, h); err != nil {
			t.Fatal(err)
		}
		prev = h
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if edit != "" {
		if _, err := db.Exec(edit); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyOldChain checks a version-5 file the way that host's verify did:
// the chain alone.
func verifyOldChain(t *testing.T, dir string) AuditReport {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: filepath.Join(dir, DBFileName)}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT seq, ts, body, prev, hash FROM audit ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var w logWalker
	for rows.Next() {
		var seq, ts int64
		var body []byte
		var prev, hash string
		if err := rows.Scan(&seq, &ts, &body, &prev, &hash); err != nil {
			t.Fatal(err)
		}
		if _, ok := w.next(seq, ts, body, prev, hash, nil, false); !ok {
			return w.rep
		}
	}
	w.rep.OK = true
	return w.rep
}

func schemaVersionOf(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: filepath.Join(dir, DBFileName)}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrationBuildsTheAuditLog: opening a version-5 database builds the
// tree over its chain in place; the chain verified before still verifies
// after, now as a log that signs checkpoints, proves its records and
// takes new ones.
func TestMigrationBuildsTheAuditLog(t *testing.T) {
	ctx := context.Background()
	// A chain longer than two batches checks that the migration carries
	// the chain and the tree across its batches; batches of 8 records show
	// that with 19 records, where the real 10,000 took 20,003 (24 s under
	// the race detector). No test here runs in parallel with another.
	defer func(b int) { fillBatch = b }(fillBatch)
	fillBatch = 8
	for _, n := range []int{0, 1, 7, 2*fillBatch + 3} {
		t.Run(fmt.Sprintf("%d records", n), func(t *testing.T) {
			dir := t.TempDir()
			buildOldDatabase(t, dir, n, "")
			if rep := verifyOldChain(t, dir); !rep.OK || rep.Records != int64(n) {
				t.Fatalf("the old chain before migrating: %+v", rep)
			}
			s := openTestStore(t, dir)
			if v := schemaVersionOf(t, dir); v != schemaVersion {
				t.Fatalf("schema version %d after opening; want %d", v, schemaVersion)
			}
			rep, err := s.VerifyAudit(ctx)
			if err != nil || !rep.OK || rep.Records != int64(n) {
				t.Fatalf("verify after migrating: %+v %v", rep, err)
			}
			cp, size, _, err := s.AuditCheckpoint(ctx)
			if err != nil || size != int64(n) {
				t.Fatalf("checkpoint: %d %v", size, err)
			}
			if n > 0 {
				if _, err := s.ProveAuditInclusion(ctx, int64(n)); err != nil {
					t.Fatal(err)
				}
			}
			appendN(t, s, 3)
			if rep, err := s.VerifyAudit(ctx, cp); err != nil || !rep.OK || rep.Records != int64(n)+3 || rep.Checkpoint != int64(n) {
				t.Fatalf("verify after appending: %+v %v", rep, err)
			}
		})
	}
}

// TestMigrationRefusesABrokenChain: a chain already edited is not built
// into a log that would vouch for it. Open fails naming the record, and
// the file stays at version 6 with its evidence untouched.
func TestMigrationRefusesABrokenChain(t *testing.T) {
	cases := []struct {
		name, edit, word string
		seq              int64
	}{
		{"edited", `UPDATE audit SET body = replace(body, '"reason":"2"', '"reason":"x"') WHERE seq = 3`, "edited", 3},
		{"removed", `DELETE FROM audit WHERE seq = 2`, "missing", 2},
		{"time moved", `UPDATE audit SET ts = 0 WHERE seq = 4`, "moved", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			buildOldDatabase(t, dir, 5, c.edit)
			s, err := Open(dir, Options{})
			if err == nil {
				s.Close()
				t.Fatal("a broken chain was migrated")
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("record %d", c.seq)) || !strings.Contains(msg, c.word) {
				t.Fatalf("Open: %v; want it to name record %d (%s)", err, c.seq, c.word)
			}
			if v := schemaVersionOf(t, dir); v != oldVersion {
				t.Fatalf("schema version %d after the refusal; want %d", v, oldVersion)
			}
			if rep := verifyOldChain(t, dir); rep.OK || rep.BadSeq != c.seq {
				t.Fatalf("the evidence changed: %+v", rep)
			}
		})
	}
}

// TestMigrationRerunRebuildsTheSameTree: a current database set back to
// version 6 (as the older migration tests do) rebuilds the same tree.
func TestMigrationRerunRebuildsTheSameTree(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTestStore(t, dir)
	appendN(t, s, 9)
	_, _, root, err := s.AuditCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, oldVersion)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestStore(t, dir)
	if _, _, again, err := s.AuditCheckpoint(ctx); err != nil || again != root {
		t.Fatalf("head after the rebuild %s %v; want %s", again, err, root)
	}
}
