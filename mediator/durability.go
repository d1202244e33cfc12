package mediator

import (
	"context"
	"errors"
	"sync"
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
}

type barrierKey struct{}

// WithAuditBarrier returns a context under which the policy may let
// local-only operations (OperationRule.LocalOnly) run before their decision
// record is durable, and "executed" records be written without waiting,
// together with the barrier that collects them. Without a barrier in the
// context every decision is durable before its operation runs.
func WithAuditBarrier(ctx context.Context) (context.Context, *AuditBarrier) {
	b := &AuditBarrier{limit: 1024}
	return context.WithValue(ctx, barrierKey{}, b), b
}

func barrierFrom(ctx context.Context) *AuditBarrier {
	b, _ := ctx.Value(barrierKey{}).(*AuditBarrier)
	return b
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
			if _, err := p.Result(); err != nil && b.err == nil {
				b.err = err
			}
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
	pending := b.pending
	b.pending = nil
	err := b.err
	b.mu.Unlock()
	for _, t := range pending {
		select {
		case <-t.Done():
		case <-ctx.Done():
			return &Error{Code: CodeTimeout, Msg: "the run's audit records were not confirmed on disk in time", Err: ctx.Err()}
		}
		if _, terr := t.Result(); terr != nil && err == nil {
			err = terr
		}
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
