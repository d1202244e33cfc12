package store

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

func BenchmarkPolicy(b *testing.B) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := mediator.Profile{AgentID: "bench", Permissions: mediator.Permissions{Required: mediator.KnownPermissions()}, Capabilities: mediator.Capabilities{NetworkAccess: true, DOMAccess: mediator.DOMFull}}
	if err := p.Normalize(); err != nil {
		b.Fatal(err)
	}
	if _, err := s.InstallAgent(ctx, p, ""); err != nil {
		b.Fatal(err)
	}
	pol := mediator.NewPolicy(s, mediator.PolicyOptions{})
	// Decide reads the agent from memory (cache.go); with GOMAXPROCS
	// goroutines it also shows what the cache's locks cost under load.
	op := mediator.Operation{AgentID: "bench", Name: mediator.OpNetworkFetch, Method: "GET", Host: "example.com", URL: "https://example.com/"}
	b.Run("Decide", func(b *testing.B) {
		for b.Loop() {
			if d := pol.Decide(ctx, op); !d.Allowed {
				b.Fatal(d)
			}
		}
	})
	b.Run("Decide parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if d := pol.Decide(ctx, op); !d.Allowed {
					b.Error(d)
					return
				}
			}
		})
	})
	b.Run("Authorize+executed (two durable appends)", func(b *testing.B) {
		for b.Loop() {
			done, err := pol.Authorize(ctx, op)
			if err != nil {
				b.Fatal(err)
			}
			done(nil)
		}
	})
	b.Run("AppendAudit", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: op, Allowed: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Under concurrency the appends share commits (group commit): ns/op is
	// the amortised cost of one durable append.
	b.Run("AppendAudit 64 goroutines", func(b *testing.B) {
		parallel64(b)
		before := s.commits()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: op, Allowed: true}); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/float64(max(1, s.commits()-before)), "appends/commit")
	})
	// A decision and its durable record, amortised over 64 callers.
	b.Run("Decide+AppendAudit 64 goroutines", func(b *testing.B) {
		parallel64(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				d := pol.Decide(ctx, op)
				if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: op, Class: d.Level,
					Allowed: d.Allowed, Code: d.Code, DecidedBy: d.DecidedBy, Reason: d.Reason}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("Authorize+executed 64 goroutines", func(b *testing.B) {
		parallel64(b)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				done, err := pol.Authorize(ctx, op)
				if err != nil {
					b.Error(err)
					return
				}
				done(nil)
			}
		})
	})
	// The log durability class: each op is one log call of a run of 20;
	// the records are queued, and each run waits once, on its barrier.
	logOp := mediator.Operation{AgentID: "bench", Name: mediator.OpLog, TextLength: 12}
	logRuns := func(b *testing.B, pb interface{ Next() bool }) {
		for more := true; more; {
			bar := mediator.NewAuditBarrier()
			auth := pol.WithBarrier(bar)
			for range 20 {
				if more = pb.Next(); !more {
					break
				}
				done, err := auth.Authorize(ctx, logOp)
				if err != nil {
					b.Error(err)
					return
				}
				done(nil)
			}
			if err := bar.Wait(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	}
	b.Run("log call, runs of 20", func(b *testing.B) {
		logRuns(b, &loopNext{b: b})
	})
	b.Run("log call, runs of 20, 64 goroutines", func(b *testing.B) {
		parallel64(b)
		b.RunParallel(func(pb *testing.PB) { logRuns(b, pb) })
	})
}

// parallel64 makes RunParallel use 64 goroutines whatever GOMAXPROCS is.
func parallel64(b *testing.B) {
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
}

// loopNext adapts b.Loop to the pb.Next shape.
type loopNext struct{ b *testing.B }

func (l *loopNext) Next() bool { return l.b.Loop() }

// BenchmarkVerifyAudit1M builds a valid log of 1,000,000 records (chain
// and tree) in one transaction, signs a checkpoint of its first half, then
// times verifying the whole log against that checkpoint.
func BenchmarkVerifyAudit1M(b *testing.B) {
	ctx := context.Background()
	s, cp := benchLogWithCheckpoint(b)
	const n = benchLogRecords
	for b.Loop() {
		rep, err := s.VerifyAudit(ctx, cp)
		if err != nil || !rep.OK || rep.Records != n || rep.Checkpoint != n/2 {
			b.Fatalf("%+v %v", rep, err)
		}
	}
}

// fillBenchLog appends records from..to as AppendAudit would, in one
// transaction and without a transaction per record.
func fillBenchLog(ctx context.Context, s *Store, from, to int64) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO audit (seq, ts, body, prev, hash) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		leaf, err := tx.PrepareContext(ctx, `INSERT INTO audit_tree (seq, hashes) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer leaf.Close()
		prev := ""
		if from > 1 {
			if err := tx.QueryRowContext(ctx, `SELECT hash FROM audit WHERE seq = ?`, from-1).Scan(&prev); err != nil {
				return err
			}
		}
		for seq := from; seq <= to; seq++ {
			body, _ := auditBody(seq, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "bench", Name: mediator.OpNetworkFetch, Method: "GET",
				URL: fmt.Sprintf("https://example.com/%d", seq), Host: "example.com"}, Class: mediator.AlwaysSafe, Allowed: true, Code: mediator.CodeAllowed, DecidedBy: "class:ALWAYS_SAFE"})
			h := auditHash(prev, seq, body)
			if _, err := ins.ExecContext(ctx, seq, seq, string(body), prev, h); err != nil {
				return err
			}
			hs, err := tlog.StoredHashes(seq-1, body, dbHashes{ctx, tx})
			if err != nil {
				return err
			}
			if _, err := leaf.ExecContext(ctx, seq, joinHashes(hs)); err != nil {
				return err
			}
			prev = h
		}
		return nil
	})
}

// benchLogRecords is the size of the benchmarks' audit log.
const benchLogRecords = 1_000_000

// benchLogWithCheckpoint is a valid log of benchLogRecords records (chain
// and tree) and a checkpoint of its first half, as a kept checkpoint is
// an older head of the same log.
func benchLogWithCheckpoint(b *testing.B) (*Store, []byte) {
	b.Helper()
	ctx := context.Background()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := fillBenchLog(ctx, s, 1, benchLogRecords/2); err != nil {
		b.Fatal(err)
	}
	cp, _, _, err := s.AuditCheckpoint(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := fillBenchLog(ctx, s, benchLogRecords/2+1, benchLogRecords); err != nil {
		b.Fatal(err)
	}
	return s, cp
}
