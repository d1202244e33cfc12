package store

import (
	"context"
	"testing"
	"time"

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
	s.settle()
	if n, all := s.gc.resumed.Load(), s.commits(); all < 2 || n != all-1 {
		t.Fatalf("%d of %d groups started from the last one's tail; want every one after the first", n, all)
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

// TestOutcomeIsQueuedNotAwaited: outside a run, an operation's outcome
// record does not hold the caller while the committer is busy, and a read
// of the trail made after it is reported sees it, linked to its decision.
func TestOutcomeIsQueuedNotAwaited(t *testing.T) {
	ctx := context.Background()
	s, pol, _ := cachedFixture(t)
	done, err := pol.Authorize(ctx, cachedFetch)
	if err != nil {
		t.Fatal(err)
	}
	release := holdCommitter(t, s)
	returned := make(chan struct{})
	go func() { done(nil); close(returned) }()
	select {
	case <-returned:
	case <-time.After(time.Minute):
		release()
		t.Fatal("the outcome record held its caller while the committer was busy")
	}
	release()
	page, err := s.ListAudit(ctx, 0, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Records); n != 2 || page.Records[1].Kind != mediator.AuditExecuted || page.Records[1].Ref != page.Records[0].Seq {
		t.Fatalf("the trail after the outcome: %+v; want the decision and its executed record", page.Records)
	}
}
