package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/agentgate/nmhost/mediator"
)

// Group commit. Every append to the audit trail and the denial log goes
// through one committer goroutine per Store: it takes every request that
// arrived while the previous commit ran and writes them in one BEGIN
// IMMEDIATE transaction with one fsync, each request in its own savepoint
// so that one failing request takes nobody else's record with it. A
// request is durable when its done channel closes without an error. Across
// processes SQLite's write lock still serialises: each process's batches
// are separate transactions, and every append reads the last link inside
// its transaction, so the chain and the tree stay in step.

// maxBatch bounds one group commit; queueCap bounds what waits for the next
// one, so an agent that logs faster than the disk syncs is slowed down to
// the disk's pace instead of growing the queue without end.
const (
	maxBatch = 1024
	queueCap = 4096
)

// commitReq is one request to the committer.
type commitReq struct {
	fn   func(ctx context.Context, tx *sql.Tx) error
	err  error
	done chan struct{}
}

// committer is the per-Store group-commit state.
type committer struct {
	mu      sync.RWMutex // held for reading while sending; Close takes it to stop sends
	closed  bool
	reqs    chan *commitReq
	quit    chan struct{}
	stopped chan struct{}
	commits atomic.Int64 // transactions committed by the committer; tests read it
}

var errClosed = mediator.Errorf(mediator.CodeInternal, "store: closed")

func (s *Store) startCommitter() {
	s.gc = &committer{reqs: make(chan *commitReq, queueCap), quit: make(chan struct{}), stopped: make(chan struct{})}
	go s.commitLoop()
}

// enqueue hands fn to the committer and returns at once; the request's done
// channel closes once it is committed or has failed.
func (s *Store) enqueue(fn func(ctx context.Context, tx *sql.Tx) error) *commitReq {
	r := &commitReq{fn: fn, done: make(chan struct{})}
	g := s.gc
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		r.err = errClosed
		close(r.done)
		return r
	}
	g.reqs <- r
	return r
}

// group runs fn in the next group commit and returns once it is durable.
// Like write, it waits for the commit even when ctx ends first: a record
// that may be on disk is never reported as not written.
func (s *Store) group(fn func(ctx context.Context, tx *sql.Tx) error) error {
	r := s.enqueue(fn)
	<-r.done
	return r.err
}

func (s *Store) commitLoop() {
	g := s.gc
	defer close(g.stopped)
	batch := make([]*commitReq, 0, maxBatch)
	for {
		select {
		case r := <-g.reqs:
			batch = append(batch[:0], r)
		case <-g.quit:
			// Close stopped new requests; commit what is queued.
			for {
				batch = batch[:0]
				for len(batch) < maxBatch {
					select {
					case r := <-g.reqs:
						batch = append(batch, r)
						continue
					default:
					}
					break
				}
				if len(batch) == 0 {
					return
				}
				s.commitBatch(batch)
			}
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		s.commitBatch(batch)
		clear(batch)
	}
}

// commitBatch writes batch in one transaction: each request in a savepoint,
// one commit, one fsync.
func (s *Store) commitBatch(batch []*commitReq) {
	ctx := context.Background()
	s.wmu.Lock()
	err := s.runBatch(ctx, batch)
	s.wmu.Unlock()
	for _, r := range batch {
		if r.err == nil && err != nil {
			r.err = err
		}
		close(r.done)
	}
}

func (s *Store) runBatch(ctx context.Context, batch []*commitReq) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return storeErr("begin", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	for _, r := range batch {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT gc`); err != nil {
			return storeErr("savepoint", err)
		}
		if ferr := r.fn(ctx, tx); ferr != nil {
			r.err = wrapWriteErr(ferr)
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO gc`); err != nil {
				return storeErr("rollback to savepoint", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE gc`); err != nil {
			return storeErr("release savepoint", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return storeErr("commit", err)
	}
	s.gc.commits.Add(1)
	s.wrote()
	return nil
}

// wrapWriteErr keeps a reason code a write function chose and makes any
// other failure internal_error.
func wrapWriteErr(err error) error {
	var e *mediator.Error
	if errors.As(err, &e) {
		return err
	}
	return storeErr("write", err)
}

// stopCommitter commits what is queued and stops the committer.
func (s *Store) stopCommitter() {
	g := s.gc
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.stopped
		return
	}
	g.closed = true
	g.mu.Unlock()
	close(g.quit)
	<-g.stopped
}

// auditTicket is a queued audit record (mediator.AuditTicket).
type auditTicket struct {
	req *commitReq
	rec mediator.AuditRecord
}

func (t *auditTicket) Done() <-chan struct{} { return t.req.done }

func (t *auditTicket) Result() (mediator.AuditRecord, error) {
	<-t.req.done
	if t.req.err != nil {
		return mediator.AuditRecord{}, t.req.err
	}
	return t.rec, nil
}

// EnqueueAudit queues e for the next group commit and returns at once
// (mediator.AuditQueue). With after set, e.Ref is after's seq; a failed
// after fails e too. The record is durable when the ticket's Done closes
// and Result reports no error.
func (s *Store) EnqueueAudit(ctx context.Context, e mediator.AuditEntry, after mediator.AuditTicket) mediator.AuditTicket {
	t := &auditTicket{}
	var ref *auditTicket
	if a, ok := after.(*auditTicket); ok {
		ref = a
	} else if after != nil {
		// A ticket of other records cannot be resolved here.
		t.req = &commitReq{err: mediator.Errorf(mediator.CodeInternal, "audit: ticket of another store"), done: make(chan struct{})}
		close(t.req.done)
		return t
	}
	t.req = s.enqueue(func(ctx context.Context, tx *sql.Tx) error {
		if ref != nil {
			// ref was queued first, so the committer wrote it first: in an
			// earlier batch (done, err final) or earlier in this one.
			select {
			case <-ref.req.done:
				if ref.req.err != nil {
					return ref.req.err
				}
			default:
			}
			if ref.rec.Seq == 0 {
				return mediator.Errorf(mediator.CodeInternal, "audit: the record this one refers to was not written")
			}
			e.Ref = ref.rec.Seq
		}
		rec, err := s.appendAuditTx(ctx, tx, e)
		if err != nil {
			return err
		}
		t.rec = rec
		return nil
	})
	return t
}

// Commits reports how many group commits this Store has made (for tests
// and benchmarks).
func (s *Store) commits() int64 { return s.gc.commits.Load() }
