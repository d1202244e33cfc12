package store

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/testkit"
)

// memoryBenchEntries is the entries of each of the two sessions of the
// memory benchmark: a full session, and as many in another one, so the
// session filter has entries to leave out.
const memoryBenchEntries = MaxMemoryEntries

// memoryBenchWord is the i-th word of the benchmark's vocabulary.
func memoryBenchWord(i int) string { return "w" + strconv.Itoa(i) }

// memoryBench is the benchmark's database, built once per test binary:
// 2 x 100,000 entries of 24 words each drawn from 20,000 words with a
// Zipf distribution, as notes in a language are.
var memoryBench = sync.OnceValues(func() (string, error) {
	dir, err := benchTempDir()
	if err != nil {
		return "", err
	}
	s, err := Open(dir, Options{})
	if err != nil {
		return "", err
	}
	defer s.Close()
	mem, err := s.memory(context.Background(), true)
	if err != nil {
		return "", err
	}
	tx, err := mem.Begin()
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	entry, err := tx.Prepare(`INSERT INTO memory_entries (id, session_id, text, tags, created_at) VALUES (?, ?, ?, ?, 0)`)
	if err != nil {
		return "", err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 19_999)
	// The entries are written as WriteMemory would, one transaction for
	// all: the point is the size of the index, not the cost of 200,000
	// commits.
	for num, session := range []string{"bench-a", "bench-b"} {
		if err := createMemoryIndex(context.Background(), tx, int64(num+1)); err != nil {
			return "", err
		}
		index, err := tx.Prepare(`INSERT INTO ` + memoryIndex(int64(num+1)) + ` (rowid, text, tags) VALUES (?, ?, ?)`)
		if err != nil {
			return "", err
		}
		for i := range memoryBenchEntries {
			words := make([]string, 24)
			for j := range words {
				words[j] = memoryBenchWord(int(zipf.Uint64()))
			}
			text, tags := strings.Join(words, " "), "t"+strconv.Itoa(i%50)
			id := int64(num+1)<<memoryIDBits | int64(i+1)
			if _, err := entry.Exec(id, session, text, tags); err != nil {
				return "", err
			}
			if _, err := index.Exec(id, text, tags); err != nil {
				return "", err
			}
		}
		if _, err := tx.Exec(`INSERT INTO memory_sessions VALUES (?, ?, ?)`, session, num+1, memoryBenchEntries); err != nil {
			return "", err
		}
	}
	if err := tx.Commit(); err != nil {
		return "", err
	}
	for num := range int64(2) {
		t := memoryIndex(num + 1)
		if _, err := mem.Exec(`INSERT INTO ` + t + ` (` + t + `) VALUES ('optimize')`); err != nil {
			return "", err
		}
	}
	return dir, nil
})

// memoryBenchDir is the benchmark's temp dir; TestMain removes it.
var memoryBenchDir string

func benchTempDir() (string, error) {
	dir, err := os.MkdirTemp("", "nmhost-memory-bench-")
	memoryBenchDir = dir
	return dir, err
}

// BenchmarkMemorySearch is one search of a 100,000-entry session whose
// database holds another 100,000 entries of another session: the store's
// SearchMemory ("nmhost"), beside the same two statements with the same
// MATCH expression run directly through database/sql on the same file
// ("baseline": the cutoff of the newest matches, then the ranked query), and the one ranked join a first version would write
// ("naive": every match of the session's index scored, no cutoff). Each
// session has its own index (memory.go), so the other session's entries
// are in another table; both are in memory.db (memory_db.go). The
// queries: two words of middling frequency (each in about 1% of the
// entries), and one common word (in about half).
func BenchmarkMemorySearch(b *testing.B) {
	dir, err := memoryBench()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, q := range []struct{ name, query string }{
		{"two words", memoryBenchWord(150) + " " + memoryBenchWord(200)},
		{"one common word", memoryBenchWord(3)},
	} {
		match, err := memoryMatch(q.query)
		if err != nil {
			b.Fatal(err)
		}
		var base float64
		b.Run(q.name+"/baseline", func(b *testing.B) {
			db := benchDB(b, dir)
			cutoff, search := memoryCutoffSQL(1), memorySearchSQL(1)
			for b.Loop() {
				cut := int64(0)
				err := db.QueryRowContext(ctx, cutoff, match, MaxMemoryCandidates-1).Scan(&cut)
				if err != nil && err != sql.ErrNoRows {
					b.Fatal(err)
				}
				rows, err := db.QueryContext(ctx, search, match, cut, "bench-a", DefaultMemoryLimit)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					var id int64
					var snippet, tags string
					if err := rows.Scan(&id, &snippet, &tags); err != nil {
						b.Fatal(err)
					}
					n++
				}
				rows.Close()
				if n == 0 {
					b.Fatal("the baseline found nothing")
				}
			}
			base = testkit.NsPerOp(b)
		})
		b.Run(q.name+"/nmhost", func(b *testing.B) {
			s, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for b.Loop() {
				hits, err := s.SearchMemory(ctx, "bench-a", q.query, 0)
				if err != nil || len(hits) == 0 {
					b.Fatal(hits, err)
				}
			}
			if base > 0 {
				b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
			}
		})
		b.Run(q.name+"/naive", func(b *testing.B) {
			db := benchDB(b, dir)
			for b.Loop() {
				rows, err := db.QueryContext(ctx, memoryNaiveSQL, match, "bench-a", DefaultMemoryLimit)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				rows.Close()
				if n == 0 {
					b.Fatal("the naive query found nothing")
				}
			}
		})
	}
}

// memoryNaiveSQL is the single ranked join over the session's index:
// every match of the session is joined to its entry and scored before
// they are sorted, with no cutoff of the newest.
const memoryNaiveSQL = `
SELECT e.id, snippet(memory_fts_1, 0, '[', ']', '…', 16), e.tags
FROM memory_fts_1 JOIN memory_entries e ON e.id = memory_fts_1.rowid
WHERE memory_fts_1 MATCH ? AND e.session_id = ?
ORDER BY bm25(memory_fts_1, 1.0, 0.5) LIMIT ?`

func benchDB(b *testing.B, dir string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, MemoryDBFileName))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
