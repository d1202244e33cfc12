package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// The group syncer. In the default durability (mediator.DurabilityWritten)
// the database runs in WAL mode with synchronous=NORMAL: a COMMIT has
// written its frames to the -wal file, so the operating system holds them
// and a crash of the process loses nothing, but SQLite fsyncs the WAL only
// when it checkpoints. The syncer closes that gap on a timer: at most one
// window (Options.SyncWindow, default 5 ms) after a commit it fsyncs the
// -wal file, which makes every frame written before the fsync started
// durable, the commit records among them. It reads the log's size first,
// so the size it then reports durable was committed before the fsync.
//
// Frames leave the WAL only through a checkpoint, and SQLite (in NORMAL as
// in FULL) fsyncs the WAL before a checkpoint copies it and the database
// file after: whatever a checkpoint moved out of the WAL was already on
// disk, so fsyncing the present -wal file is enough.
//
// In the strict durability the database keeps synchronous=FULL: each
// commit is fsynced before COMMIT returns, and the syncer has nothing to
// do but report the size.

// DefaultSyncWindow bounds how long a committed audit record may stay in
// the operating system's cache before the syncer fsyncs it.
const DefaultSyncWindow = 5 * time.Millisecond

// MaxSyncWindow bounds the window a config may set: what a power loss can
// take stays a moment's records.
const MaxSyncWindow = time.Second

// syncer is the per-Store group syncer.
type syncer struct {
	walPath, dbPath string
	window          time.Duration
	strict          bool // synchronous=FULL: commits are durable as they return
	size            func(ctx context.Context) (int64, error)

	durable atomic.Int64 // the highest seq known to be on disk
	// dirtySince is when the oldest commit no sync has yet started to
	// cover was made (Unix ns), 0 when there is none: the window runs
	// from it, so a commit made while an fsync runs waits no longer.
	dirtySince atomic.Int64

	dirty   chan struct{} // a commit happened; buffered 1
	urgent  chan struct{} // someone waits; sync without waiting out the window
	quit    chan struct{}
	stopped chan struct{}

	// started counts the syncs begun; done is the number of the last one
	// finished (under mu). A commit is covered once a sync begun after it
	// has finished (covered).
	started atomic.Int64
	done    int64

	mu      sync.Mutex
	changed chan struct{} // closed and replaced at each sync
	err     error         // the last sync's failure, nil once one succeeds
	syncs   atomic.Int64  // fsyncs done; tests read it
	wal     *os.File      // the -wal file, kept open between syncs
}

func newSyncer(dbPath string, window time.Duration, strict bool, size func(context.Context) (int64, error)) *syncer {
	if window <= 0 {
		window = DefaultSyncWindow
	}
	y := &syncer{walPath: dbPath + "-wal", dbPath: dbPath, window: window, strict: strict, size: size,
		dirty: make(chan struct{}, 1), urgent: make(chan struct{}, 1), quit: make(chan struct{}),
		stopped: make(chan struct{}), changed: make(chan struct{})}
	go y.loop()
	return y
}

// committed tells the syncer a transaction committed.
func (y *syncer) committed() {
	y.dirtySince.CompareAndSwap(0, time.Now().UnixNano())
	select {
	case y.dirty <- struct{}{}:
	default:
	}
}

func (y *syncer) loop() {
	defer close(y.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-y.quit:
			y.finalSync()
			return
		case <-y.urgent:
		case <-y.dirty:
			since := y.dirtySince.Load()
			if since == 0 {
				continue // a sync that started after the commit covered it
			}
			// Let the window gather the commits that follow this one
			// into the same fsync, unless someone waits for it.
			timer.Reset(time.Until(time.Unix(0, since).Add(y.window)))
			select {
			case <-timer.C:
			case <-y.urgent:
				timer.Stop()
			case <-y.quit:
				timer.Stop()
				y.finalSync()
				return
			}
		}
		// Drop a dirty mark left by a commit that this sync covers.
		select {
		case <-y.dirty:
		default:
		}
		y.sync()
	}
}

// finalSync is the sync at Close: it covers the commits no sync has yet
// covered, and retries one that failed. A process that committed nothing
// (most of the browser's: one list-agents and exit) has nothing of its own
// in the WAL to make durable, and skips the fsync; on a file SQLite has
// just created for it, an fsync is a journal commit, the longest step of
// such a host's exit.
func (y *syncer) finalSync() {
	y.mu.Lock()
	failed := y.err != nil
	y.mu.Unlock()
	if failed || y.dirtySince.Load() != 0 {
		y.sync()
	}
	y.closeWAL()
}

// sync makes every record committed so far durable and publishes its size.
func (y *syncer) sync() {
	ctx := context.Background()
	n := y.started.Add(1)
	// Every commit made before this moment is in the size read next.
	y.dirtySince.Store(0)
	size, err := y.size(ctx)
	if err == nil && !y.strict {
		err = y.fsync()
	}
	y.mu.Lock()
	y.err = err
	if err == nil && size > y.durable.Load() {
		y.durable.Store(size)
	}
	y.done = max(y.done, n)
	close(y.changed)
	y.changed = make(chan struct{})
	y.mu.Unlock()
}

// fsync syncs the -wal file (the database file when there is no WAL: a
// checkpoint that emptied it synced the database already, so this is only
// belt and braces). The descriptor is kept open: SQLite holds no locks on
// the -wal file (its locks are on the database and the -shm files), so a
// descriptor of ours cannot release one of its locks when it closes.
func (y *syncer) fsync() error {
	y.syncs.Add(1)
	st, err := os.Stat(y.walPath)
	if errors.Is(err, fs.ErrNotExist) {
		y.closeWAL()
		return syncFile(y.dbPath)
	}
	if err != nil {
		return err
	}
	if y.wal != nil {
		if fst, err := y.wal.Stat(); err != nil || !os.SameFile(st, fst) {
			y.closeWAL() // another file has the name now
		}
	}
	if y.wal == nil {
		// Read-write because some systems flush only what a writer
		// opened; nothing is ever written through it.
		f, err := os.OpenFile(y.walPath, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		y.wal = f
	}
	return y.wal.Sync()
}

func (y *syncer) closeWAL() {
	if y.wal != nil {
		y.wal.Close()
		y.wal = nil
	}
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// through waits until record seq is durable, asking for a sync now.
func (y *syncer) through(ctx context.Context, seq int64) error {
	if y.strict {
		// synchronous=FULL: seq was fsynced before its COMMIT returned.
		for d := y.durable.Load(); d < seq && !y.durable.CompareAndSwap(d, seq); d = y.durable.Load() {
		}
		return nil
	}
	return y.wait(ctx, func() bool { return y.durable.Load() >= seq })
}

// covered returns once everything committed before it was called is on
// disk: a sync begun after the call has finished. Grants, revocations,
// remembered answers and the other writes that are not audit records
// wait for it before they are acknowledged: a revocation a person was
// told about must survive a power loss too, and they are rare enough
// that an fsync each costs nothing anyone notices.
func (y *syncer) covered(ctx context.Context) error {
	if y.strict {
		return nil // synchronous=FULL: the commit was fsynced before it returned
	}
	want := y.started.Load() + 1
	return y.wait(ctx, func() bool {
		y.mu.Lock()
		defer y.mu.Unlock()
		return y.done >= want
	})
}

// wait asks for a sync now, and again after each one, until reached
// holds; a sync that failed is an error.
func (y *syncer) wait(ctx context.Context, reached func() bool) error {
	for !reached() {
		y.mu.Lock()
		changed := y.changed
		y.mu.Unlock()
		if reached() {
			break
		}
		select {
		case y.urgent <- struct{}{}:
		default:
		}
		select {
		case <-changed:
		case <-y.stopped:
			if reached() {
				return nil
			}
			return errClosed
		case <-ctx.Done():
			return &mediator.Error{Code: mediator.CodeTimeout, Msg: "what was written was not confirmed on disk in time", Err: ctx.Err()}
		}
		y.mu.Lock()
		err := y.err
		y.mu.Unlock()
		if err != nil {
			return storeErr("sync", err)
		}
	}
	return nil
}

func (y *syncer) stop() {
	select {
	case <-y.quit:
	default:
		close(y.quit)
	}
	<-y.stopped
}

// SyncAudit returns once every audit record up to seq is durable (on disk,
// not only in the operating system's cache), fsyncing now instead of at
// the end of the window (mediator.AuditSyncer). The strict durability,
// per host or per profile, waits here before each effect.
func (s *Store) SyncAudit(ctx context.Context, seq int64) error {
	if seq <= 0 {
		return nil
	}
	return s.sy.through(ctx, seq)
}

// RunAudit is how the host's settings (Options) keep a run's records; the
// run constructor adds what the agent's profile asks.
func (s *Store) RunAudit() mediator.RunAudit { return s.runAudit }

// DurableAuditSize is the number of audit records known to be on disk:
// every record up to this seq survives a power loss. Records after it are
// committed (a crash of the process loses none) and are on disk within the
// sync window.
func (s *Store) DurableAuditSize() int64 { return s.sy.durable.Load() }

// auditSize is the log's committed size, read by the syncer before it
// fsyncs.
func (s *Store) auditSize(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM audit`).Scan(&n)
	return n, err
}
