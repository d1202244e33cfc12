package store

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// holdCommitter parks the committer inside a batch of its own until the
// returned func is called: whatever is queued meanwhile is the next batch.
func holdCommitter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, held := make(chan struct{}), make(chan struct{})
	r := s.enqueue(func(context.Context, dbtx, *auditWriter) error {
		close(started)
		<-held
		return nil
	})
	<-started
	return func() {
		close(held)
		<-r.done
	}
}

// TestGroupCommit: N goroutines append at once; all N records are in the
// trail, it verifies, and they took fewer commits than records. The
// committer is held until every append is queued, so the batching is
// certain, not a matter of timing.
func TestGroupCommit(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	const n = 64
	release := holdCommitter(t, s)
	before := s.commits()
	var wg sync.WaitGroup
	seqs := make([]int64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision,
				Operation: mediator.Operation{AgentID: "g", Name: mediator.OpLog}, Reason: strconv.Itoa(i)})
			seqs[i], errs[i] = rec.Seq, err
		}()
	}
	// Ready when all n are queued behind the held batch.
	for len(s.gc.reqs) < n {
		runtime.Gosched()
	}
	release()
	wg.Wait()
	seen := map[int64]bool{}
	for i := range n {
		if errs[i] != nil || seqs[i] < 1 || seqs[i] > n || seen[seqs[i]] {
			t.Fatalf("append %d: seq %d, %v", i, seqs[i], errs[i])
		}
		seen[seqs[i]] = true
	}
	commits := s.commits() - before - 1 // the held batch
	if commits >= n || commits < 1 {
		t.Fatalf("%d appends took %d commits; want fewer than %d", n, commits, n)
	}
	t.Logf("%d appends in %d commits", n, commits)
	rep, err := s.VerifyAudit(ctx)
	if err != nil || !rep.OK || rep.Records != n {
		t.Fatalf("verify: %+v %v; want %d intact records", rep, err, n)
	}
}

// TestGroupCommitIsolatesAFailure: in one batch, an append that fails
// (its reference failed) takes no other record with it.
func TestGroupCommitIsolatesAFailure(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	bad := &auditTicket{req: &commitReq{err: mediator.Errorf(mediator.CodeInternal, "lost"), done: make(chan struct{})}}
	close(bad.req.done)
	release := holdCommitter(t, s)
	ok1 := s.EnqueueAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Reason: "one"}, nil)
	failed := s.EnqueueAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditExecuted, Reason: "refers to a lost record"}, bad)
	ok2 := s.EnqueueAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditExecuted, Reason: "two"}, ok1)
	release()
	if _, err := failed.Result(); mediator.CodeOf(err) != mediator.CodeInternal {
		t.Fatalf("append referring to a failed record: %v; want internal_error", err)
	}
	r1, err1 := ok1.Result()
	r2, err2 := ok2.Result()
	if err1 != nil || err2 != nil || r1.Seq != 1 || r2.Seq != 2 || r2.Ref != 1 {
		t.Fatalf("records %+v %v, %+v %v; want seq 1 and seq 2 referring to 1", r1, err1, r2, err2)
	}
	if rep, err := s.VerifyAudit(ctx); err != nil || !rep.OK || rep.Records != 2 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestCloseCommitsQueuedAppends: records queued without waiting are on
// disk after Close, and appends after Close fail rather than vanish.
func TestCloseCommitsQueuedAppends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var tickets []mediator.AuditTicket
	for i := range 100 {
		tickets = append(tickets, s.EnqueueAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Reason: strconv.Itoa(i)}, nil))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, tk := range tickets {
		if _, err := tk.Result(); err != nil {
			t.Fatalf("queued append %d: %v", i, err)
		}
	}
	if _, err := s.EnqueueAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision}, nil).Result(); err == nil {
		t.Fatal("an append after Close succeeded")
	}
	s2 := openTestStore(t, dir)
	if rep, err := s2.VerifyAudit(ctx); err != nil || !rep.OK || rep.Records != 100 {
		t.Fatalf("verify after Close: %+v %v; want 100 records", rep, err)
	}
}
