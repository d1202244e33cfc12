package store

import (
	"context"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestGroupCommitCarriesTheTail: while this Store is the only one
// committing, each group starts from the tail the last one left and the
// decisions' cache survives the commits without a query; a commit of
// another Store on the same database (another host process, as far as
// SQLite knows) is seen by both: the next group reads the tail again and
// links to the other Store's record, and the next decision reads the
// facts again and sees the other Store's revocation.
func TestGroupCommitCarriesTheTail(t *testing.T) {
	if !walIndexMapped {
		t.Skip("the WAL index is not mapped on this system; nothing is carried") // never in CI: Linux maps it
	}
	ctx := context.Background()
	s, pol, dir := cachedFixture(t)
	for range 5 {
		done, err := pol.Authorize(ctx, cachedFetch)
		if err != nil {
			t.Fatal(err)
		}
		done(nil)
	}
	if n := s.gc.resumed.Load(); n < 8 {
		t.Fatalf("%d of 10 groups started from the last one's tail; want at least 8", n)
	}
	if n := s.cache.factsReads.Load(); n != 1 {
		t.Fatalf("5 decisions between group commits read facts_version %d times; want once", n)
	}

	other := openTestStore(t, dir)
	rec, err := other.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: cachedFetch, Code: mediator.CodeAllowed, Allowed: true})
	if err != nil {
		t.Fatal(err)
	}
	resumed := s.gc.resumed.Load()
	mine, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: cachedFetch, Code: mediator.CodeAllowed, Allowed: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.gc.resumed.Load() != resumed {
		t.Fatal("a group started from its own tail after another Store committed")
	}
	if mine.Seq != rec.Seq+1 || mine.Prev != rec.Hash {
		t.Fatalf("record %d links to %q; want %d after the other Store's %d (%q)", mine.Seq, mine.Prev, rec.Seq+1, rec.Seq, rec.Hash)
	}
	if rep, err := s.VerifyAudit(ctx); err != nil || !rep.OK {
		t.Fatalf("verify after interleaved Stores: %+v %v", rep, err)
	}

	// The cache was carried over this Store's last commit; the other
	// Store's revocation, committed after it, is seen at once.
	if _, err := other.Revoke(ctx, "c", mediator.PermNetworkFetch); err != nil {
		t.Fatal(err)
	}
	if d := pol.Decide(ctx, cachedFetch); d.Code != mediator.CodeRevokedByUser {
		t.Fatalf("decision after the other Store revoked: %+v; want revoked_by_user", d)
	}
}

// TestHeaderIsOursOnlyWhenSettled: the header read after a commit is taken
// as that commit's only with both copies equal and the counter one past.
func TestHeaderIsOursOnlyWhenSettled(t *testing.T) {
	var h [walIndexHeader]byte
	h[8], h[48+8] = 7, 7
	if !headerSettled(&h) || headerChange(&h) != 7 {
		t.Fatalf("a settled header: settled %v, counter %d", headerSettled(&h), headerChange(&h))
	}
	h[8] = 8 // the first copy half rewritten by another commit
	if headerSettled(&h) {
		t.Fatal("a header whose copies differ counted as settled")
	}
}
