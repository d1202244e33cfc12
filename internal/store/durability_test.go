package store

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// countingRecords is the Store, counting how the policy writes.
type countingRecords struct {
	*Store
	waited, queued atomic.Int64
}

func (c *countingRecords) AppendAudit(ctx context.Context, e mediator.AuditEntry) (mediator.AuditRecord, error) {
	c.waited.Add(1)
	return c.Store.AppendAudit(ctx, e)
}

func (c *countingRecords) EnqueueAudit(ctx context.Context, e mediator.AuditEntry, after mediator.AuditTicket) mediator.AuditTicket {
	c.queued.Add(1)
	return c.Store.EnqueueAudit(ctx, e, after)
}

// TestDurabilityClasses: an operation with an effect outside the host runs
// only once its decision is committed, with or without a barrier; a
// local-only one is queued under a barrier and is committed once the
// barrier returns; an aggregated one (log) under a barrier leaves one
// aggregate record at the barrier; without a barrier the decision is
// waited for and the outcome queued (a read of the trail sees it).
func TestDurabilityClasses(t *testing.T) {
	ctx := context.Background()
	logOp := mediator.Operation{AgentID: "c", Name: mediator.OpLog, TextLength: 5}
	readOp := mediator.Operation{AgentID: "c", Name: mediator.OpPageGetPageText, Origin: "https://example.com"}
	cases := []struct {
		name           string
		op             mediator.Operation
		barrier        bool
		waited, queued int64 // decision + executed
	}{
		{"log under a barrier", logOp, true, 0, 1},
		{"page read under a barrier", readOp, true, 0, 2},
		{"fetch under a barrier", cachedFetch, true, 1, 1},
		{"log without a barrier", logOp, false, 1, 1},
		{"fetch without a barrier", cachedFetch, false, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _, _ := cachedFixture(t)
			rec := &countingRecords{Store: s}
			pol := mediator.NewPolicy(rec, mediator.PolicyOptions{})
			var auth mediator.Authorizer = pol
			bar := (*mediator.AuditBarrier)(nil)
			if c.barrier {
				bar = mediator.NewAuditBarrier()
				auth = pol.WithBarrier(bar)
			}
			done, err := auth.Authorize(ctx, c.op)
			if err != nil {
				t.Fatal(err)
			}
			if c.waited > 0 {
				// Durable before the operation runs: on disk right now.
				if p, err := s.ListAudit(ctx, 0, 10, false); err != nil || len(p.Records) != 1 || p.Records[0].Operation.Name != c.op.Name {
					t.Fatalf("decision not on disk when Authorize returned: %+v %v", p, err)
				}
			}
			done(nil)
			if bar != nil {
				if err := bar.Wait(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if w, q := rec.waited.Load(), rec.queued.Load(); w != c.waited || q != c.queued {
				t.Fatalf("%d waited and %d queued appends; want %d and %d", w, q, c.waited, c.queued)
			}
			p, err := s.ListAudit(ctx, 0, 10, false)
			if c.op.Name == mediator.OpLog && c.barrier {
				if err != nil || len(p.Records) != 1 || p.Records[0].Kind != mediator.AuditAggregated || p.Records[0].Aggregate.Count != 1 {
					t.Fatalf("trail after the barrier: %+v %v; want one aggregate record", p, err)
				}
				return
			}
			if err != nil || len(p.Records) != 2 || p.Records[0].Kind != mediator.AuditDecision || p.Records[1].Kind != mediator.AuditExecuted || p.Records[1].Ref != p.Records[0].Seq {
				t.Fatalf("trail after the barrier: %+v %v; want the decision and its executed record", p, err)
			}
		})
	}
}

// TestDenialsNameTheirAuditRecord: a denial decided outside the policy
// gets its decision's record in the same transaction; the policy's own
// denials name the decision it appended, and add no second record.
func TestDenialsNameTheirAuditRecord(t *testing.T) {
	ctx := context.Background()
	t.Run("decided outside the policy", func(t *testing.T) {
		s := openTestStore(t, freshDir(t))
		// Hostile: the extension's record claims a host rule and an id.
		d, err := s.LogDenial(ctx, mediator.Denial{ID: 99, AgentID: "x", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
			Context: mediator.DenialContext{Layer: "extension", Reason: "not listed", Details: map[string]string{"decidedBy": "grant:network.fetch"}}})
		if err != nil || d.AuditSeq != 1 {
			t.Fatalf("denial %+v %v; want auditSeq 1", d, err)
		}
		p, err := s.ListAudit(ctx, 0, 10, false)
		if err != nil || len(p.Records) != 1 || p.Records[0].Code != mediator.CodeHostNotAllowed || p.Records[0].DecidedBy != "extension:grant:network.fetch" {
			t.Fatalf("trail %+v %v", p, err)
		}
		page, err := s.ListDenials(ctx, DenialFilter{})
		if err != nil || len(page.Denials) != 1 || page.Denials[0].AuditSeq != 1 {
			t.Fatalf("listed %+v %v; want auditSeq 1", page, err)
		}
	})
	t.Run("decided by the policy", func(t *testing.T) {
		s, pol, _ := cachedFixture(t)
		if _, err := s.Revoke(ctx, "c", mediator.PermNetworkFetch); err != nil {
			t.Fatal(err)
		}
		if _, err := pol.Authorize(ctx, cachedFetch); mediator.CodeOf(err) != mediator.CodeRevokedByUser {
			t.Fatalf("Authorize: %v; want revoked_by_user", err)
		}
		page, err := s.ListDenials(ctx, DenialFilter{})
		if err != nil || len(page.Denials) != 1 {
			t.Fatalf("denials %+v %v", page, err)
		}
		p, err := s.ListAudit(ctx, 0, 10, false)
		if err != nil || len(p.Records) != 1 || page.Denials[0].AuditSeq != p.Records[0].Seq || p.Records[0].Code != mediator.CodeRevokedByUser {
			t.Fatalf("trail %+v, denial %+v %v; want one record the denial names", p, page.Denials[0], err)
		}
		if rep, err := s.VerifyAudit(ctx); err != nil || !rep.OK {
			t.Fatalf("verify %+v %v", rep, err)
		}
	})
}

// TestQueuedRecordsPrecedeAnEffect: records commit in the order they were
// queued, so once an operation with an effect outside the host may run,
// every local-only record queued before it is on disk too: what a page or
// clipboard read handed the agent cannot leave through a fetch ahead of
// the read's record.
func TestQueuedRecordsPrecedeAnEffect(t *testing.T) {
	ctx := context.Background()
	s, pol, _ := cachedFixture(t)
	bar := mediator.NewAuditBarrier()
	auth := pol.WithBarrier(bar)
	read := mediator.Operation{AgentID: "c", Name: mediator.OpPageGetPageText, Origin: "https://example.com"}
	for range 10 {
		done, err := auth.Authorize(ctx, read)
		if err != nil {
			t.Fatal(err)
		}
		done(nil)
	}
	if _, err := auth.Authorize(ctx, cachedFetch); err != nil {
		t.Fatal(err)
	}
	// No barrier wait yet: the fetch's decision alone was waited for.
	p, err := s.ListAudit(ctx, 0, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	reads := 0
	for _, r := range p.Records {
		if r.Kind == mediator.AuditDecision && r.Operation.Name == mediator.OpPageGetPageText {
			reads++
		}
	}
	last := p.Records[len(p.Records)-1]
	if reads != 10 || last.Operation.Name != mediator.OpNetworkFetch {
		t.Fatalf("%d read decisions on disk before the fetch's (last record %+v); want all 10", reads, last)
	}
	if err := bar.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}
