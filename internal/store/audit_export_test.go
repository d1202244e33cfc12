package store

import (
	"context"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

// TestListAuditBodiesAreTheHashedText: what an export ships as a record's
// body is byte for byte its leaf in the log's tree, with the fields read
// from it, within the bounds asked; denials come oldest first from id 0.
func TestListAuditBodiesAreTheHashedText(t *testing.T) {
	s := openTestStore(t, freshDir(t))
	ctx := context.Background()
	for _, agent := range []string{"a", "b", "c", "d"} {
		if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Allowed: true, Operation: mediator.Operation{AgentID: agent, Name: "log"}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := s.LogDenial(ctx, mediator.Denial{AgentID: "e", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name                   string
		after, through         int64
		limit                  int
		wantFirst, wantRecords int64
	}{
		{"all", 0, 0, 100, 1, 7},
		{"after", 2, 0, 100, 3, 5},
		{"through", 0, 3, 100, 1, 3},
		{"limit", 1, 0, 2, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, err := s.ListAuditBodies(ctx, c.after, c.through, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(recs)) != c.wantRecords || recs[0].Seq != c.wantFirst {
				t.Fatalf("%d records from %d; want %d from %d", len(recs), recs[0].Seq, c.wantRecords, c.wantFirst)
			}
			for _, r := range recs {
				leaf, err := dbHashes{ctx, s.db}.ReadHashes([]int64{tlog.StoredHashIndex(0, r.Seq-1)})
				if err != nil || leaf[0] != tlog.RecordHash(r.Body) {
					t.Fatalf("record %d's body is not its leaf: %v", r.Seq, err)
				}
				if r.TS == 0 || r.Kind != mediator.AuditDecision {
					t.Fatalf("record %d's fields were not read: %+v", r.Seq, r.AuditRecord)
				}
			}
		})
	}
	dens, err := s.ListDenialsAfter(ctx, 0, 2)
	if err != nil || len(dens) != 2 || dens[0].ID != 1 || dens[1].ID != 2 || dens[0].AuditSeq != 5 {
		t.Fatalf("ListDenialsAfter(0, 2) = %+v, %v", dens, err)
	}
	if dens, _ := s.ListDenialsAfter(ctx, 2, 10); len(dens) != 1 || dens[0].ID != 3 {
		t.Fatalf("ListDenialsAfter(2) = %+v", dens)
	}
}
