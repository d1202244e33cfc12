package store

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

func BenchmarkPolicy(b *testing.B) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	p := mediator.Profile{AgentID: "bench", Permissions: mediator.Permissions{Required: mediator.KnownPermissions}, Capabilities: mediator.Capabilities{NetworkAccess: true, DOMAccess: mediator.DOMFull}}
	if err := p.Normalize(); err != nil {
		b.Fatal(err)
	}
	if _, err := s.InstallAgent(ctx, p, ""); err != nil {
		b.Fatal(err)
	}
	pol := mediator.NewPolicy(s, mediator.PolicyOptions{})
	op := mediator.Operation{AgentID: "bench", Name: mediator.OpNetworkFetch, Method: "GET", Host: "example.com", URL: "https://example.com/"}
	b.Run("Decide", func(b *testing.B) {
		for b.Loop() {
			if d := pol.Decide(ctx, op); !d.Allowed {
				b.Fatal(d)
			}
		}
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
}

// BenchmarkVerifyAudit1M builds a valid chain of 1,000,000 records in one
// transaction, then times walking it.
func BenchmarkVerifyAudit1M(b *testing.B) {
	ctx := context.Background()
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 1_000_000
	err = s.write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO audit (seq, ts, body, prev, hash) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		prev := ""
		for seq := int64(1); seq <= n; seq++ {
			body, _ := auditBody(seq, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "bench", Name: mediator.OpNetworkFetch, Method: "GET",
				URL: fmt.Sprintf("https://example.com/%d", seq), Host: "example.com"}, Class: mediator.AlwaysSafe, Allowed: true, Code: mediator.CodeAllowed, DecidedBy: "class:ALWAYS_SAFE"})
			h := auditHash(prev, seq, body)
			if _, err := stmt.ExecContext(ctx, seq, seq, string(body), prev, h); err != nil {
				return err
			}
			prev = h
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rep, err := s.VerifyAudit(ctx)
		if err != nil || !rep.OK || rep.Records != n {
			b.Fatalf("%+v %v", rep, err)
		}
	}
}
