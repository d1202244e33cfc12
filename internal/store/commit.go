package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentgate/nmhost/mediator"
)

// Group commit. Every append to the audit trail and the denial log goes
// through one committer goroutine per Store: it takes every request that
// arrived while the previous commit ran and writes them in one BEGIN
// IMMEDIATE transaction with one fsync; the records go through one
// auditWriter, so the group costs a few statements, not a few per record.
// When one request fails, the group is rolled back and each request runs
// again in a transaction of its own, so a failure takes nobody else's
// record with it. A request is durable when its done channel closes
// without an error. Across processes SQLite's write lock still
// serialises: each process's batches are separate transactions, and each
// reads the last link inside its transaction, so the chain and the tree
// stay in step.

// maxBatch bounds one group commit; queueCap bounds what waits for the next
// one, so an agent that logs faster than the disk syncs is slowed down to
// the disk's pace instead of growing the queue without end.
const (
	maxBatch = 1024
	queueCap = 4096
)

// commitReq is one request to the committer. fn may run more than once
// (see runBatch): it must compute its results afresh each time.
type commitReq struct {
	fn   batchFunc
	err  error
	done chan struct{}
}

// batchFunc writes one request inside the group's transaction, appending
// audit records through w.
type batchFunc func(ctx context.Context, tx dbtx, w *auditWriter) error

// dbtx is what a write inside a transaction needs: a *sql.Tx, or the
// committer's connection while it holds a transaction open.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// committer is the per-Store group-commit state.
type committer struct {
	mu      sync.RWMutex // held for reading while sending; Close takes it to stop sends
	closed  bool
	reqs    chan *commitReq
	quit    chan struct{}
	stopped chan struct{}
	commits atomic.Int64 // transactions committed by the committer; tests read it
	resumed atomic.Int64 // groups that started from the last one's tail; tests read it
	// queued and finished count requests in and out; while they differ
	// a read of the trail first waits for the queue (settle).
	queued, finished atomic.Int64

	// conn is the committer's own connection and stmts the statements
	// prepared on it: parsing SQL costs more than running it here, so a
	// group's statements are parsed once per process, not once per group.
	// Only the committer goroutine uses them.
	conn  *sql.Conn
	stmts map[string]*sql.Stmt

	// tail is what the last group left for the next (commit_tail.go);
	// nil: read it from the database.
	tail *tail
}

// prepared returns q prepared on the committer's connection.
func (g *committer) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := g.stmts[q]; ok {
		return st, nil
	}
	st, err := g.conn.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	g.stmts[q] = st
	return st, nil
}

// dropConn closes the committer's connection after a failure that may have
// left it broken or inside a transaction; the next group opens another.
func (g *committer) dropConn() {
	for _, st := range g.stmts {
		st.Close()
	}
	g.stmts = nil
	if g.conn != nil {
		g.conn.Close()
		g.conn = nil
	}
}

var errClosed = mediator.Errorf(mediator.CodeInternal, "store: closed")

func (s *Store) startCommitter() {
	s.gc = &committer{reqs: make(chan *commitReq, queueCap), quit: make(chan struct{}), stopped: make(chan struct{})}
	go s.commitLoop()
}

// enqueue hands fn to the committer and returns at once; the request's done
// channel closes once it is committed or has failed.
func (s *Store) enqueue(fn batchFunc) *commitReq {
	r := &commitReq{fn: fn, done: make(chan struct{})}
	g := s.gc
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		r.err = errClosed
		close(r.done)
		return r
	}
	g.queued.Add(1)
	g.reqs <- r
	return r
}

// settle returns once every request queued before it has been committed
// (or has failed). The records nobody waits for (an operation's outcome,
// see mediator.Policy) are then on the trail for a read of this process:
// the host's list-audit, a checkpoint, a proof, a verification or an
// export never misses a record queued before it was asked.
func (s *Store) settle() {
	g := s.gc
	if g.queued.Load() == g.finished.Load() {
		return
	}
	<-s.enqueue(nil).done
}

// group runs fn in the next group commit and returns once it is durable.
// Like write, it waits for the commit even when ctx ends first: a record
// that may be on disk is never reported as not written.
func (s *Store) group(fn batchFunc) error {
	r := s.enqueue(fn)
	<-r.done
	return r.err
}

func (s *Store) commitLoop() {
	g := s.gc
	defer close(g.stopped)
	defer g.dropConn()
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

// commitBatch writes batch in one transaction, one commit, one fsync. If
// a request fails, the transaction is rolled back and every request runs
// again alone; a failure to begin or commit fails them all (retrying each
// alone would only wait out the busy timeout once per request).
func (s *Store) commitBatch(batch []*commitReq) {
	ctx := context.Background()
	if !slices.ContainsFunc(batch, func(r *commitReq) bool { return r.fn != nil }) {
		// Only settle's markers: everything before them is committed.
		s.finish(batch, nil)
		return
	}
	s.wmu.Lock()
	err, retry := s.runBatch(ctx, batch)
	if retry && len(batch) > 1 {
		for i, r := range batch {
			r.err, _ = s.runBatch(ctx, batch[i:i+1])
		}
		err = nil
	}
	s.wmu.Unlock()
	s.finish(batch, err)
}

// finish reports the group's outcome to each request: its own error, else
// the group's.
func (s *Store) finish(batch []*commitReq, err error) {
	for _, r := range batch {
		if r.err == nil && err != nil {
			r.err = err
		}
		close(r.done)
	}
	s.gc.finished.Add(int64(len(batch)))
}

// runBatch runs batch in one transaction on the committer's connection;
// retry reports that a request failed (rather than the transaction), so
// running them one by one helps.
func (s *Store) runBatch(ctx context.Context, batch []*commitReq) (err error, retry bool) {
	g := s.gc
	if g.conn == nil {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return storeErr("begin", err), false
		}
		g.conn, g.stmts = conn, map[string]*sql.Stmt{}
	}
	conn := g.conn
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		g.dropConn()
		return storeErr("begin", err), false
	}
	rollback := func() {
		if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
			g.dropConn()
		}
	}
	// Under the write lock the header cannot move: it says whether this
	// process's last group was the last commit of anybody.
	before, mapped := s.walHeader()
	local := s.cache.local.Load()
	w := newAuditWriter(ctx, conn, s.now)
	w.prepared = g.prepared
	if t := g.tail; t != nil && mapped && t.hdr == before {
		w.resume(t)
		g.resumed.Add(1)
	}
	g.tail = nil // a group that fails may leave hashes it never wrote
	for _, r := range batch {
		if r.fn == nil {
			continue // settle's marker: nothing to write
		}
		if ferr := r.fn(ctx, conn, w); ferr != nil {
			rollback()
			return wrapWriteErr(ferr), true
		}
	}
	if err := w.flush(); err != nil {
		rollback()
		return storeErr("audit append", err), false
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		rollback()
		return storeErr("commit", err), false
	}
	g.commits.Add(1)
	s.wrote()
	if after, ok := s.walHeader(); ok && mapped && headerSettled(&after) && headerChange(&after) == headerChange(&before)+1 {
		g.tail = w.tailAfter(after)
		s.cache.carryOver(cacheVersion{hdr: before, local: local}, cacheVersion{hdr: after, local: local + 1})
	}
	return nil, false
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

// auditTicket is a queued audit record (mediator.AuditTicket). rec is
// written by the committer only; it is the record once written into a
// transaction, zero while it is not (so one that refers to it can tell).
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
	t.req = s.enqueue(func(ctx context.Context, _ dbtx, w *auditWriter) error {
		t.rec = mediator.AuditRecord{} // a run of a rolled-back group wrote nothing
		if ref != nil {
			// ref was queued first, so the committer ran it first, on this
			// goroutine: in an earlier batch (its err is final), earlier in
			// this one, or earlier in this one's one-by-one retry (its err
			// set if it failed alone).
			if ref.req.err != nil {
				return ref.req.err
			}
			if ref.rec.Seq == 0 {
				return mediator.Errorf(mediator.CodeInternal, "audit: the record this one refers to was not written")
			}
			e.Ref = ref.rec.Seq
		}
		rec, err := w.append(e)
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
