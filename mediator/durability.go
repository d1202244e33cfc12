package mediator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// AuditTicket is an audit record queued for the next group commit. Done is
// closed once the record is durable or has failed; Result then says which.
type AuditTicket interface {
	Done() <-chan struct{}
	Result() (AuditRecord, error)
}

// AuditQueue is what records that commit in groups offer besides
// AppendAudit: queue a record and return at once. When after is not nil,
// e.Ref is set to after's seq as the record is written (after was queued
// first, so it is written first); if after failed, so does e. The store
// implements it.
type AuditQueue interface {
	EnqueueAudit(ctx context.Context, e AuditEntry, after AuditTicket) AuditTicket
}

// AuditBarrier holds the audit records a run queued without waiting for
// them. The run calls Wait before it reports its result: a result is never
// reported while a decision behind it could still be lost.
type AuditBarrier struct {
	mu      sync.Mutex
	pending []AuditTicket
	limit   int // prune the finished tickets when pending reaches it
	err     error

	audit RunAudit
	agg   aggregator
	memo  safeMemo
	// queue writes the aggregate records at Wait, and syncer makes the
	// run's records durable there in the strict durability; both are
	// set by the run's first decision (they are the policy's records).
	queue  AuditQueue
	syncer AuditSyncer
	using  atomic.Bool // queue and syncer are set
	last   int64       // the highest seq among the pruned tickets
}

// NewAuditBarrier returns a barrier for one run. A run decided through
// Policy.WithBarrier(b) may let local-only operations
// (OperationRule.LocalOnly) run before their decision record is durable,
// and write "executed" records without waiting; b collects them, and the
// run waits on it before it reports. The barrier is a value the run
// constructor holds and passes, never something a context carries:
// whoever builds a run sees whether its records may trail its calls.
func NewAuditBarrier() *AuditBarrier { return NewRunBarrier(RunAudit{}) }

// NewRunBarrier returns a barrier for one run whose records are kept as ra
// says (the run constructor resolves it from the host's config and the
// agent's profile).
func NewRunBarrier(ra RunAudit) *AuditBarrier {
	return &AuditBarrier{limit: 1024, audit: ra, agg: aggregator{now: time.Now}}
}

// use remembers the records the run's decisions go to.
func (b *AuditBarrier) use(q AuditQueue, y AuditSyncer) {
	if b.using.Load() {
		return // every call of a run goes through here: no lock once set
	}
	b.mu.Lock()
	if b.queue == nil {
		b.queue, b.syncer = q, y
	}
	b.mu.Unlock()
	b.using.Store(true)
}

// BarrierAuthorizer is an Authorizer that can decide a run's operations
// under that run's audit barrier (the Policy is one).
type BarrierAuthorizer interface {
	Authorizer
	WithBarrier(b *AuditBarrier) Authorizer
}

// WithBarrier returns an Authorizer that decides as p does, with b as the
// run's barrier: its local-only decisions and every "executed" record are
// queued, and b.Wait holds the run's report until they are durable.
func (p *Policy) WithBarrier(b *AuditBarrier) Authorizer { return barriered{p, b} }

type barriered struct {
	p   *Policy
	bar *AuditBarrier
}

func (a barriered) Authorize(ctx context.Context, op Operation) (func(error), error) {
	return a.p.authorize(ctx, op, a.bar)
}

// add keeps t until Wait. Finished tickets are dropped (their errors kept)
// whenever the list grows to its limit, so a run of a million log calls
// holds only the records still on their way to disk.
func (b *AuditBarrier) add(t AuditTicket) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = append(b.pending, t)
	if len(b.pending) < b.limit {
		return
	}
	kept := b.pending[:0]
	for _, p := range b.pending {
		select {
		case <-p.Done():
			rec, err := p.Result()
			if err != nil && b.err == nil {
				b.err = err
			}
			b.last = max(b.last, rec.Seq)
		default:
			kept = append(kept, p)
		}
	}
	clear(b.pending[len(kept):])
	b.pending = kept
	b.limit = max(1024, 2*len(kept))
}

// Wait returns once every record queued under the barrier is durable, or
// with the first error: a record that failed, or ctx ending first. A run
// whose Wait fails must not report success.
func (b *AuditBarrier) Wait(ctx context.Context) error {
	b.mu.Lock()
	q, y := b.queue, b.syncer
	b.mu.Unlock()
	if q != nil {
		// The aggregated calls' records, written now, before the run
		// reports: they are under the barrier like any other.
		for _, e := range b.agg.entries() {
			b.add(q.EnqueueAudit(context.WithoutCancel(ctx), e, nil))
		}
	}
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	err := b.err
	last := b.last
	b.mu.Unlock()
	for _, t := range pending {
		select {
		case <-t.Done():
		case <-ctx.Done():
			return &Error{Code: CodeTimeout, Msg: "the run's audit records were not confirmed on disk in time", Err: ctx.Err()}
		}
		rec, terr := t.Result()
		if terr != nil && err == nil {
			err = terr
		}
		last = max(last, rec.Seq)
	}
	if err == nil && b.audit.Strict && y != nil {
		err = y.SyncAudit(ctx, last)
	}
	if err != nil {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return &Error{Code: CodeInternal, Msg: "an audit record of the run was not written", Err: err}
	}
	return nil
}
