package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	// modernc.org/sqlite is cgo-free and, measured on this project's
	// machine, takes a host process from exec to "open + SELECT + committed
	// INSERT" in about 4.6 ms; see "Why modernc.org/sqlite?" in the
	// project's rationale for the comparison with ncruces/go-sqlite3.
	_ "modernc.org/sqlite"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// DBFileName is the name of the database file inside the data directory.
const DBFileName = "nmhost.db"

// schemaVersion is the PRAGMA user_version this code writes and expects.
var schemaVersion = len(migrations)

// migrations[i] takes the schema from user_version i to i+1. They run in one
// BEGIN IMMEDIATE transaction, so a crash mid-migration leaves the old schema.
// Only append: a released database may be at any earlier version.
var migrations = []migration{
	{sql: schemaCore},                           // 0 -> 1: agents, grants, denials (this file)
	{sql: schemaPolicy},                         // 1 -> 2: preferences and the audit chain (schema_policy.go)
	{sql: schemaSessions},                       // 2 -> 3: session settings (schema_sessions.go)
	{sql: denialTimeOrder},                      // 3 -> 4: denial timestamps that never decrease with ids
	{sql: originKeys},                           // 4 -> 5: remembered answers keyed by canonical origin (schema_policy.go)
	{sql: userRevocations},                      // 5 -> 6: permissions the user revoked (revocations.go)
	{sql: schemaAuditTree, fill: fillAuditTree}, // 6 -> 7: the audit log's tree over the chain (schema_audit_tree.go)
	{fill: addDenialAuditSeq},                   // 7 -> 8: each denial names its decision's audit record (denials.go)
	{sql: factsVersion},                         // 8 -> 9: a counter of changes to what decisions read (schema_facts.go)
	{sql: schemaMemory},                         // 9 -> 10: the sessions' memory, indexed with FTS5 (schema_memory.go)
	{fill: splitMemoryIndex},                    // 10 -> 11: one memory index per session, so each ranks on its own (schema_memory.go)
	{sql: schemaEphemeral},                      // 11 -> 12: the sessions of runs that named none, removed when the run ends (ephemeral.go)
	{sql: camelSessionSettings},                 // 12 -> 13: stored session settings named as on the wire (schema_sessions.go)
	{fill: addAnswerScopes},                     // 13 -> 14: remembered answers' scope, end, code and uses (schema_answers.go)
	{move: moveMemory},                          // 14 -> 15: the sessions' memory moves to memory.db, out of every open's way (memory_db.go)
	{sql: schemaRelay},                          // 15 -> 16: prompts relayed to a process that can ask the person (relay.go)
}

// migration is one schema step: SQL, then, for a step SQL cannot express
// (hashing, another file), a Go function in the same transaction.
type migration struct {
	sql  string
	fill func(ctx context.Context, tx *sql.Tx) error
	// move is a step that writes beside the main database as well
	// (moveMemory); from is the version the migration began at.
	move func(ctx context.Context, s *Store, tx *sql.Tx, from int) error
}

// denialTimeOrder makes every denial's timestamp at least its
// predecessor's, as LogDenial keeps it from then on. With time order equal
// to id order, a time range is an id range and every filtered page is an
// index walk (ListDenials). Records written by a process whose clock lags
// another's, or across a clock step back, take their predecessor's time:
// off by that lag, never out of order.
const denialTimeOrder = `
UPDATE denials SET ts = m.mts
FROM (SELECT id, max(ts) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS mts FROM denials) AS m
WHERE denials.id = m.id AND denials.ts < m.mts;
`

// schemaCore is the first schema.
const schemaCore = `
CREATE TABLE agents (
	agent_id      TEXT PRIMARY KEY,
	profile       TEXT NOT NULL,            -- the normalised profile, JSON
	module_sha256 TEXT NOT NULL DEFAULT '',
	installed_at  INTEGER NOT NULL,         -- ms since the epoch
	updated_at    INTEGER NOT NULL          -- ms since the epoch
);
CREATE TABLE grants (
	agent_id   TEXT NOT NULL REFERENCES agents(agent_id) ON DELETE CASCADE,
	permission TEXT NOT NULL,
	granted_at INTEGER NOT NULL,            -- ms since the epoch
	source     TEXT NOT NULL CHECK (source IN ('install', 'user')),
	PRIMARY KEY (agent_id, permission)
) WITHOUT ROWID;
-- AUTOINCREMENT: ids are never reused, so a viewer tailing with afterId
-- can never miss a record written after a delete of the newest rows.
CREATE TABLE denials (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	agent_id   TEXT NOT NULL,
	permission TEXT NOT NULL,
	ts         INTEGER NOT NULL,            -- ms since the epoch
	code       TEXT NOT NULL,
	context    TEXT NOT NULL                -- DenialContext, JSON
);
-- Each filter walks its own index in id order, so a filtered page is an
-- index range scan of about limit rows, whatever the table size.
CREATE INDEX denials_agent_id ON denials (agent_id, id);
CREATE INDEX denials_permission_id ON denials (permission, id);
CREATE INDEX denials_ts ON denials (ts);
CREATE INDEX denials_code_id ON denials (code, id);
`

// Options tunes a Store. The zero value is what production uses.
type Options struct {
	// BusyTimeout is how long a write waits for another host process to
	// release the database write lock before failing. Default 5s: a
	// synchronous=FULL commit holds the lock for milliseconds, so 5s only
	// runs out when another process is wedged, and it is still shorter than
	// the extension's request timeout, so the caller hears about it.
	BusyTimeout time.Duration

	// Now is the clock for timestamps. Default time.Now; tests pin it.
	Now func() time.Time

	// EphemeralSessionAge is how old a run's ephemeral session must be
	// for Open to remove it as left behind by a killed host (ephemeral.go).
	// Default DefaultEphemeralSessionAge; tests shorten it.
	EphemeralSessionAge time.Duration

	// MaxModuleBytes bounds a stored module. Default DefaultMaxModuleBytes
	// (64 MiB): far above any real agent, far below what would let one
	// install exhaust memory or disk.
	MaxModuleBytes int64

	// WorkspaceLimits are every session workspace's quotas; the zero
	// value takes workspace's defaults (64 MiB, 10,000 entries).
	WorkspaceLimits workspace.Limits

	// Durability is mediator.DurabilityWritten (the default, ""): a
	// commit has reached the operating system when it returns and the
	// group syncer (sync.go) fsyncs it within SyncWindow; or
	// mediator.DurabilityStrict: every commit is fsynced before it
	// returns (synchronous=FULL). The host's config chooses it.
	Durability string

	// SyncWindow bounds how long a committed record waits for its fsync
	// in the written durability. Default DefaultSyncWindow (5 ms); at
	// most MaxSyncWindow.
	SyncWindow time.Duration

	// AuditCalls is how runs record their aggregated calls:
	// mediator.AuditCallsAggregate (the default, "") or
	// mediator.AuditCallsPerCall. The store only keeps the setting for
	// the run constructor (RunAudit).
	AuditCalls string

	// holdSync makes the sync window an hour, so that only a request
	// (SyncAudit, a checkpoint, Close) syncs; only tests set it.
	holdSync bool

	// synchronousNormal trades durability for speed; only the benchmark that
	// measures the cost of synchronous=FULL sets it.
	synchronousNormal bool

	// memHooks interrupt the memory database's two-file steps; only
	// tests set them (memory_db.go).
	memHooks memHooks
}

// Store is the durable store of agents, grants, modules and denials. One
// Store per process; it is safe for concurrent use, and several processes
// may open the same directory at once.
type Store struct {
	db     *sql.DB
	dir    string
	modDir string
	now    func() time.Time
	maxMod int64
	wsLim  workspace.Limits // Options.WorkspaceLimits

	busyTimeout time.Duration // how long setWAL retries; Options.BusyTimeout

	// wmu serialises this process's write transactions. SQLite allows one
	// writer at a time anyway; queuing here instead of in SQLite's busy
	// handler (which sleeps 1..100 ms between retries) keeps writes from one
	// process prompt and leaves the busy timeout for other processes.
	wmu sync.Mutex

	// gc is the group committer of audit and denial appends (commit.go).
	gc *committer

	// sy is the group syncer that makes commits durable (sync.go).
	sy *syncer

	// runAudit is how runs keep their records (Options).
	runAudit mediator.RunAudit

	// cache holds the facts decisions read, per agent (cache.go).
	cache *factCache
	// uses holds remembered answers' uses not yet written (prefuses.go).
	uses useQueue

	// mem is the sessions' memory database, memory.db, opened by the
	// first memory operation that needs it (memory_db.go).
	mem      memoryDB
	memHooks memHooks

	// wroteInOpen is set when Open committed (a migration, a sweep)
	// before the syncer existed: the syncer then covers that commit too.
	wroteInOpen bool
}

// Open opens (creating if needed) the store in dir: dir/nmhost.db and
// dir/modules/; dir/memory.db, the sessions' memory, is opened by the
// first memory operation that needs it (memory_db.go). dir is created
// 0700 when missing. Open is on the host's cold-start path, so it does
// two queries when the schema is current (its version, and the
// ephemeral sessions a killed host left).
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "store: empty data directory")
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxModuleBytes <= 0 {
		opts.MaxModuleBytes = DefaultMaxModuleBytes
	}
	if opts.EphemeralSessionAge <= 0 {
		opts.EphemeralSessionAge = DefaultEphemeralSessionAge
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store[%s]: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, &mediator.Error{Code: mediator.CodeInternal, Msg: "cannot create the data directory " + abs, Err: err}
	}
	dbPath := filepath.Join(abs, DBFileName)

	// FULL: a commit is fsynced before it is acknowledged. NORMAL: a
	// commit has reached the operating system when it is acknowledged,
	// and the group syncer fsyncs it within the window (sync.go).
	syncMode := "FULL"
	switch opts.Durability {
	case "", mediator.DurabilityWritten:
		syncMode = "NORMAL"
	case mediator.DurabilityStrict:
	default:
		return nil, mediator.Errorf(mediator.CodeBadRequest, "store: durability %q is neither %q nor %q", opts.Durability, mediator.DurabilityWritten, mediator.DurabilityStrict)
	}
	if opts.synchronousNormal {
		syncMode = "NORMAL"
	}
	switch opts.AuditCalls {
	case "", mediator.AuditCallsAggregate, mediator.AuditCallsPerCall:
	default:
		return nil, mediator.Errorf(mediator.CodeBadRequest, "store: audit calls %q is neither %q nor %q", opts.AuditCalls, mediator.AuditCallsAggregate, mediator.AuditCallsPerCall)
	}
	if opts.SyncWindow < 0 || opts.SyncWindow > MaxSyncWindow {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "store: a sync window of %v is outside 0 to %v", opts.SyncWindow, MaxSyncWindow)
	}
	// WAL lets readers run beside the one writer; a handful of connections
	// covers the host's concurrent requests. Two of them are held for
	// good: the committer's (commit.go) and the cache's (cache.go).
	db, err := openSQLite(dbPath, opts.BusyTimeout, syncMode, 6)
	if err != nil {
		return nil, err
	}

	s := &Store{
		db:     db,
		dir:    abs,
		modDir: filepath.Join(abs, "modules"),
		now:    opts.Now,
		maxMod: opts.MaxModuleBytes,
		wsLim:  opts.WorkspaceLimits,

		busyTimeout: opts.BusyTimeout,
		memHooks:    opts.memHooks,
	}
	if err := s.migrate(context.Background(), db, migrations, s.write); err != nil {
		s.closeMemory() // moveMemory's
		db.Close()
		return nil, fmt.Errorf("store[%s]: %w", dbPath, err)
	}
	// The sessions of runs a killed host never ended: one indexed read
	// when there are none. Best effort (ephemeral.go): a session that
	// cannot be removed now is tried again at the next open.
	_ = s.sweepEphemeralSessions(context.Background(), opts.EphemeralSessionAge)
	// Expired answers are never used; they are removed here and on every
	// lookup that meets one. Best effort too.
	_ = s.sweepExpiredPreferences(context.Background())
	s.cache = newFactCache()
	window := opts.SyncWindow
	if opts.holdSync {
		window = time.Hour
	}
	s.sy = newSyncer(dbPath, window, syncMode == "FULL", s.auditSize)
	if s.wroteInOpen {
		s.sy.committed()
	}
	s.runAudit = mediator.RunAudit{Strict: syncMode == "FULL", PerCall: opts.AuditCalls == mediator.AuditCallsPerCall}
	s.startCommitter()
	return s, nil
}

// Close commits the appends still queued (EnqueueAudit) and closes the
// databases; every other write has already been committed.
func (s *Store) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	if s.gc != nil {
		s.stopCommitter()
	}
	// The uses writer's last batch, then the syncer: what the committer
	// and the uses writer committed last is synced too.
	s.closeUses()
	if s.sy != nil {
		s.sy.stop()
	}
	s.cache.close()
	return errors.Join(s.closeMemory(), s.db.Close())
}

// Dir returns the data directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// write runs fn in one BEGIN IMMEDIATE transaction and commits it; the
// commit is on disk when write returns nil, in either durability: these
// are the person's grants, revocations and answers, sessions and
// memories, never the audit records a run's calls write (those go
// through the committer, and a sync window covers them; sync.go).
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.commitWrite(ctx, fn); err != nil {
		return err
	}
	if s.sy != nil {
		return s.sy.covered(ctx)
	}
	return nil
}

// commitWrite is write's transaction, under the write lock.
func (s *Store) commitWrite(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := commitTx(ctx, &s.wmu, s.db, fn); err != nil {
		return err
	}
	s.wrote()
	return nil
}

// commitTx runs fn in one transaction of db, under mu, this process's
// write lock of that database, and commits it.
func commitTx(ctx context.Context, mu *sync.Mutex, db *sql.DB, fn func(tx *sql.Tx) error) (err error) {
	mu.Lock()
	defer mu.Unlock()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return storeErr("begin", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return wrapWriteErr(err)
	}
	if err = tx.Commit(); err != nil {
		return storeErr("commit", err)
	}
	return nil
}

// storeErr wraps a database failure. The caller cannot act on it beyond
// retrying, so it is internal_error, or timeout when the context ran out.
func storeErr(op string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &mediator.Error{Code: mediator.CodeTimeout, Msg: "store: " + op + " was cancelled", Err: err}
	}
	return &mediator.Error{Code: mediator.CodeInternal, Msg: "store: " + op + " failed", Err: err}
}
