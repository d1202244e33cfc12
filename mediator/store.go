package mediator

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	// modernc.org/sqlite is cgo-free and, measured on this project's
	// machine, takes a host process from exec to "open + SELECT + committed
	// INSERT" in about 4.6 ms; see "Why modernc.org/sqlite?" in the
	// project's rationale for the comparison with ncruces/go-sqlite3.
	_ "modernc.org/sqlite"
)

// DBFileName is the name of the database file inside the data directory.
const DBFileName = "nmhost.db"

// schemaVersion is the PRAGMA user_version this code writes and expects.
var schemaVersion = len(migrations)

// migrations[i] takes the schema from user_version i to i+1. They run in one
// BEGIN IMMEDIATE transaction, so a crash mid-migration leaves the old schema.
// Only append: a released database may be at any earlier version.
var migrations = []string{
	schemaCore,      // 0 -> 1: agents, grants, denials (this file)
	schemaPolicy,    // 1 -> 2: preferences and the audit chain (schema_policy.go)
	schemaSessions,  // 2 -> 3: session settings (schema_sessions.go)
	denialTimeOrder, // 3 -> 4: denial timestamps that never decrease with ids
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

// Grant sources.
const (
	SourceInstall = "install" // granted because permissions.required asked for it at installation
	SourceUser    = "user"    // granted by the user afterwards
)

// Bounds applied to denial records. LogDenial truncates to them, never
// rejects: a denial must always be recorded.
const (
	MaxDenialAgentIDBytes    = 128
	MaxDenialPermissionBytes = 64
	MaxDenialCodeBytes       = 64
	MaxDenialURLBytes        = 2048
	MaxDenialReasonBytes     = 1024
	MaxDenialShortBytes      = 256 // layer, method, origin
	MaxDenialDetailKeys      = 16
	MaxDenialDetailKeyBytes  = 64
	MaxDenialDetailValBytes  = 512
)

// Denial page sizes.
const (
	DefaultDenialPage = 100
	MaxDenialPage     = 1000
)

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

	// MaxModuleBytes bounds a stored module. Default DefaultMaxModuleBytes
	// (64 MiB): far above any real agent, far below what would let one
	// install exhaust memory or disk.
	MaxModuleBytes int64

	// synchronousNormal trades durability for speed; only the benchmark that
	// measures the cost of synchronous=FULL sets it.
	synchronousNormal bool
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

	busyTimeout time.Duration // how long setWAL retries; Options.BusyTimeout

	// wmu serialises this process's write transactions. SQLite allows one
	// writer at a time anyway; queuing here instead of in SQLite's busy
	// handler (which sleeps 1..100 ms between retries) keeps writes from one
	// process prompt and leaves the busy timeout for other processes.
	wmu sync.Mutex
}

// Open opens (creating if needed) the store in dir: dir/nmhost.db and
// dir/modules/. dir is created 0700 when missing. Open is on the host's
// cold-start path, so it does one query when the schema is current.
func Open(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, Errorf(CodeBadRequest, "store: empty data directory")
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
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store[%s]: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, &Error{Code: CodeInternal, Msg: "cannot create the data directory " + abs, Err: err}
	}
	dbPath := filepath.Join(abs, DBFileName)
	// SQLite creates files 0644 under the usual umask and gives the -wal and
	// -shm files the database file's mode. Creating the file first makes all
	// three private to the user: grants are nobody else's business.
	if f, err := os.OpenFile(dbPath, os.O_RDONLY|os.O_CREATE, 0o600); err != nil {
		return nil, &Error{Code: CodeInternal, Msg: "cannot create " + dbPath, Err: err}
	} else {
		f.Close()
	}

	syncMode := "FULL" // a commit is fsynced before it is acknowledged
	if opts.synchronousNormal {
		syncMode = "NORMAL"
	}
	q := url.Values{}
	q.Set("_txlock", "immediate") // writers take the lock at BEGIN: no deadlock on upgrade
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "synchronous("+syncMode+")")
	q.Add("_pragma", "foreign_keys(1)")
	dsn := "file:" + (&url.URL{Path: dbPath}).EscapedPath() + "?" + q.Encode()

	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Msg: "cannot open " + dbPath, Err: err}
	}
	// WAL lets readers run beside the one writer; a handful of connections
	// covers the host's concurrent requests, and keeping them idle avoids
	// re-running the connection pragmas.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)

	s := &Store{
		db:     db,
		dir:    abs,
		modDir: filepath.Join(abs, "modules"),
		now:    opts.Now,
		maxMod: opts.MaxModuleBytes,

		busyTimeout: opts.BusyTimeout,
	}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, fmt.Errorf("store[%s]: %w", dbPath, err)
	}
	return s, nil
}

// migrate brings the schema to schemaVersion. The fast path is one read.
func (s *Store) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return storeErr("read schema version", err)
	}
	if v == schemaVersion {
		return nil
	}
	if v > schemaVersion {
		return Errorf(CodeInternal, "the database has schema version %d; this host knows up to %d (downgrade?)", v, schemaVersion)
	}
	// WAL is a property of the file, so setting it once at creation is
	// enough; it cannot be set inside a transaction, hence before it.
	mode, err := s.setWAL(ctx)
	if err != nil {
		return storeErr("set WAL mode", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return Errorf(CodeInternal, "the database refused WAL mode (journal_mode is %q)", mode)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		// Another process may have migrated while we waited for the lock.
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		for ; v < schemaVersion; v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migration %d->%d: %w", v, v+1, err)
			}
		}
		// PRAGMA takes no parameters; v is an int we control.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
}

// setWAL switches a new database to WAL. SQLite does not call the busy
// handler for a journal-mode change, so when several hosts start on a fresh
// data directory at once (Chrome starts one per connection) the losers get
// SQLITE_BUSY at once; they retry here for as long as the busy timeout.
func (s *Store) setWAL(ctx context.Context) (string, error) {
	deadline := time.Now().Add(s.busyTimeout)
	wait := time.Millisecond
	for {
		var mode string
		err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return mode, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code), the errors another connection's lock causes.
func isBusy(err error) bool {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return false
	}
	primary := se.Code() & 0xff
	return primary == 5 || primary == 6 // SQLITE_BUSY, SQLITE_LOCKED
}

// Close closes the database. Pending writes have already been committed.
func (s *Store) Close() error {
	if s == nil || s.db == nil {
		return nil
	}
	return s.db.Close()
}

// Dir returns the data directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// write runs fn in one BEGIN IMMEDIATE transaction and commits it; with
// synchronous=FULL the commit is on disk when write returns nil.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return storeErr("begin", err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return storeErr("write", err)
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
		return &Error{Code: CodeTimeout, Msg: "store: " + op + " was cancelled", Err: err}
	}
	return &Error{Code: CodeInternal, Msg: "store: " + op + " failed", Err: err}
}

// AgentRecord is an installed agent as the store holds it.
type AgentRecord struct {
	Profile      Profile `json:"profile"`
	ModuleSHA256 string  `json:"moduleSha256,omitempty"`
	InstalledAt  int64   `json:"installedAt"` // ms since the epoch; kept across re-installs
	UpdatedAt    int64   `json:"updatedAt"`   // ms since the epoch; the last (re-)install
	Grants       []Grant `json:"grants"`
}

// Grant is one permission granted to one agent.
type Grant struct {
	AgentID    string     `json:"agentId"`
	Permission Permission `json:"permission"`
	GrantedAt  int64      `json:"grantedAt"` // ms since the epoch
	Source     string     `json:"source"`    // SourceInstall or SourceUser
}

// InstallAgent installs or re-installs the agent p describes and returns
// the stored record. moduleSHA256 is the hash of the module stored with
// PutModule ("" when the request brings no module: a re-install then keeps
// the module already recorded, unless the profile pins another); when the
// profile pins a hash too, the two must agree (hash_mismatch).
//
// Grants, following seed 000, come from installation: every permission in
// permissions.required is granted with source "install". On re-install:
//   - an "install" grant whose permission is no longer required is removed
//     (the agent stopped asking for it, so installation no longer grants it);
//   - a "user" grant stays while the permission is still required or
//     optional, and is removed otherwise (a user cannot have granted what the
//     agent no longer asks for); it keeps its source and time, so it survives
//     the permission moving from required back to optional;
//   - a required permission is granted again even if the user had revoked
//     it: re-installing is itself the user's consent to the new profile.
func (s *Store) InstallAgent(ctx context.Context, p Profile, moduleSHA256 string) (AgentRecord, error) {
	if err := p.Normalize(); err != nil {
		return AgentRecord{}, fmt.Errorf("agent[%s]: %w", truncate(p.AgentID, 64), err)
	}
	id := p.AgentID
	if moduleSHA256 != "" && !isHexSHA256(moduleSHA256) {
		return AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, Errorf(CodeBadRequest, "module hash %q is not 64 lowercase hex digits", truncate(moduleSHA256, 80)))
	}
	if p.ModuleSHA256 != "" && moduleSHA256 != "" && p.ModuleSHA256 != moduleSHA256 {
		return AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, Errorf(CodeHashMismatch, "the module's sha256 is %s but the profile pins %s", moduleSHA256, p.ModuleSHA256))
	}
	sum := moduleSHA256
	if sum == "" {
		sum = p.ModuleSHA256
	}
	profileJSON, err := json.Marshal(p)
	if err != nil {
		return AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, storeErr("encode profile", err))
	}
	now := s.now().UnixMilli()
	var rec AgentRecord
	err = s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `
INSERT INTO agents (agent_id, profile, module_sha256, installed_at, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (agent_id) DO UPDATE SET
	profile = excluded.profile,
	-- A re-install that brings no module keeps the one already stored.
	module_sha256 = CASE excluded.module_sha256 WHEN '' THEN agents.module_sha256 ELSE excluded.module_sha256 END,
	updated_at = excluded.updated_at`, id, string(profileJSON), sum, now, now); err != nil {
			return err
		}
		existing, err := grantsTx(ctx, tx, id)
		if err != nil {
			return err
		}
		for _, g := range existing {
			keep := p.Requires(g.Permission)
			if g.Source == SourceUser {
				keep = keep || slices.Contains(p.Permissions.Optional, g.Permission)
			}
			if !keep {
				if _, err := tx.ExecContext(ctx, `DELETE FROM grants WHERE agent_id = ? AND permission = ?`, id, string(g.Permission)); err != nil {
					return err
				}
			}
		}
		for _, perm := range p.Permissions.Required {
			if _, err := tx.ExecContext(ctx, `
INSERT INTO grants (agent_id, permission, granted_at, source) VALUES (?, ?, ?, 'install')
ON CONFLICT (agent_id, permission) DO NOTHING`, id, string(perm), now); err != nil {
				return err
			}
		}
		rec, err = agentTx(ctx, tx, id)
		return err
	})
	if err != nil {
		return AgentRecord{}, fmt.Errorf("agent[%s]: install: %w", id, err)
	}
	return rec, nil
}

// queryer is what reads need: a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func unknownAgent(id string) error {
	return Errorf(CodeUnknownAgent, "no agent %q is installed", truncate(id, 64))
}

func agentTx(ctx context.Context, q queryer, id string) (AgentRecord, error) {
	var rec AgentRecord
	var profileJSON string
	err := q.QueryRowContext(ctx, `SELECT profile, module_sha256, installed_at, updated_at FROM agents WHERE agent_id = ?`, id).
		Scan(&profileJSON, &rec.ModuleSHA256, &rec.InstalledAt, &rec.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return AgentRecord{}, unknownAgent(id)
	}
	if err != nil {
		return AgentRecord{}, storeErr("read agent", err)
	}
	if err := json.Unmarshal([]byte(profileJSON), &rec.Profile); err != nil {
		return AgentRecord{}, storeErr("decode stored profile", err)
	}
	if rec.Grants, err = grantsTx(ctx, q, id); err != nil {
		return AgentRecord{}, err
	}
	return rec, nil
}

func grantsTx(ctx context.Context, q queryer, id string) ([]Grant, error) {
	rows, err := q.QueryContext(ctx, `SELECT permission, granted_at, source FROM grants WHERE agent_id = ? ORDER BY permission`, id)
	if err != nil {
		return nil, storeErr("read grants", err)
	}
	defer rows.Close()
	out := []Grant{}
	for rows.Next() {
		g := Grant{AgentID: id}
		if err := rows.Scan(&g.Permission, &g.GrantedAt, &g.Source); err != nil {
			return nil, storeErr("read grants", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr("read grants", err)
	}
	return out, nil
}

// Agent returns the installed agent id with its grants (unknown_agent when
// there is none).
func (s *Store) Agent(ctx context.Context, id string) (AgentRecord, error) {
	if ValidAgentID(id) != nil {
		return AgentRecord{}, fmt.Errorf("agent[%s]: %w", truncate(id, 64), unknownAgent(id))
	}
	rec, err := agentTx(ctx, s.db, id)
	if err != nil {
		return AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, err)
	}
	return rec, nil
}

// ListAgents returns every installed agent with its grants, sorted by id.
func (s *Store) ListAgents(ctx context.Context) ([]AgentRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT agent_id, profile, module_sha256, installed_at, updated_at FROM agents ORDER BY agent_id`)
	if err != nil {
		return nil, storeErr("list agents", err)
	}
	defer rows.Close()
	out := []AgentRecord{}
	byID := map[string]int{}
	for rows.Next() {
		var rec AgentRecord
		var id, profileJSON string
		if err := rows.Scan(&id, &profileJSON, &rec.ModuleSHA256, &rec.InstalledAt, &rec.UpdatedAt); err != nil {
			return nil, storeErr("list agents", err)
		}
		if err := json.Unmarshal([]byte(profileJSON), &rec.Profile); err != nil {
			return nil, fmt.Errorf("agent[%s]: %w", id, storeErr("decode stored profile", err))
		}
		rec.Grants = []Grant{}
		byID[id] = len(out)
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr("list agents", err)
	}
	rows.Close()
	// One query for all grants rather than one per agent.
	grows, err := s.db.QueryContext(ctx, `SELECT agent_id, permission, granted_at, source FROM grants ORDER BY agent_id, permission`)
	if err != nil {
		return nil, storeErr("list grants", err)
	}
	defer grows.Close()
	for grows.Next() {
		var g Grant
		if err := grows.Scan(&g.AgentID, &g.Permission, &g.GrantedAt, &g.Source); err != nil {
			return nil, storeErr("list grants", err)
		}
		// A grant of an agent installed between the two queries is skipped;
		// its agent is not in this listing either.
		if i, ok := byID[g.AgentID]; ok {
			out[i].Grants = append(out[i].Grants, g)
		}
	}
	if err := grows.Err(); err != nil {
		return nil, storeErr("list grants", err)
	}
	return out, nil
}

// UninstallAgent removes the agent and its grants. Its denial records stay:
// they are history. Its module file stays too: modules are content-addressed
// and may be shared.
func (s *Store) UninstallAgent(ctx context.Context, id string) error {
	if ValidAgentID(id) != nil {
		return fmt.Errorf("agent[%s]: %w", truncate(id, 64), unknownAgent(id))
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		// Grants go by ON DELETE CASCADE (foreign_keys is on per connection);
		// the explicit delete keeps that true even if it were not.
		if _, err := tx.ExecContext(ctx, `DELETE FROM grants WHERE agent_id = ?`, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM agents WHERE agent_id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return unknownAgent(id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("agent[%s]: uninstall: %w", id, err)
	}
	return nil
}

// Grant grants perm to the agent on the user's behalf (source "user") and
// returns the grant. It is idempotent: an existing grant is returned as it
// is. Errors: unknown_agent; unknown_permission; bad_request when the
// agent's profile lists perm in neither permissions.required nor
// permissions.optional, because a user cannot grant what the agent never
// asked for (the profile is the ceiling, grants only pick within it).
func (s *Store) Grant(ctx context.Context, agentID string, perm Permission) (Grant, error) {
	if ValidAgentID(agentID) != nil {
		return Grant{}, fmt.Errorf("agent[%s]: %w", truncate(agentID, 64), unknownAgent(agentID))
	}
	if _, err := ParsePermission(string(perm)); err != nil {
		return Grant{}, fmt.Errorf("agent[%s]: grant: %w", agentID, err)
	}
	var g Grant
	err := s.write(ctx, func(tx *sql.Tx) error {
		var profileJSON string
		err := tx.QueryRowContext(ctx, `SELECT profile FROM agents WHERE agent_id = ?`, agentID).Scan(&profileJSON)
		if errors.Is(err, sql.ErrNoRows) {
			return unknownAgent(agentID)
		}
		if err != nil {
			return err
		}
		var p Profile
		if err := json.Unmarshal([]byte(profileJSON), &p); err != nil {
			return err
		}
		if !p.Requires(perm) && !slices.Contains(p.Permissions.Optional, perm) {
			return Errorf(CodeBadRequest, "agent %q did not ask for %q (it is in neither permissions.required nor permissions.optional), so it cannot be granted", agentID, perm)
		}
		if _, err := tx.ExecContext(ctx, `
INSERT INTO grants (agent_id, permission, granted_at, source) VALUES (?, ?, ?, 'user')
ON CONFLICT (agent_id, permission) DO NOTHING`, agentID, string(perm), s.now().UnixMilli()); err != nil {
			return err
		}
		g = Grant{AgentID: agentID}
		return tx.QueryRowContext(ctx, `SELECT permission, granted_at, source FROM grants WHERE agent_id = ? AND permission = ?`, agentID, string(perm)).
			Scan(&g.Permission, &g.GrantedAt, &g.Source)
	})
	if err != nil {
		return Grant{}, fmt.Errorf("agent[%s]: grant %s: %w", agentID, perm, err)
	}
	return g, nil
}

// Revoke removes the agent's grant of perm and reports whether there was
// one. Revoking a grant that does not exist is not an error; an unknown
// agent or permission is.
func (s *Store) Revoke(ctx context.Context, agentID string, perm Permission) (bool, error) {
	if ValidAgentID(agentID) != nil {
		return false, fmt.Errorf("agent[%s]: %w", truncate(agentID, 64), unknownAgent(agentID))
	}
	if _, err := ParsePermission(string(perm)); err != nil {
		return false, fmt.Errorf("agent[%s]: revoke: %w", agentID, err)
	}
	var existed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM agents WHERE agent_id = ?`, agentID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return unknownAgent(agentID)
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM grants WHERE agent_id = ? AND permission = ?`, agentID, string(perm))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		existed = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("agent[%s]: revoke %s: %w", agentID, perm, err)
	}
	return existed, nil
}

// Grants returns the agent's grants sorted by permission.
func (s *Store) Grants(ctx context.Context, agentID string) ([]Grant, error) {
	rec, err := s.Agent(ctx, agentID)
	if err != nil {
		return nil, err
	}
	return rec.Grants, nil
}

// Check is the one permission check: does the agent hold a grant of perm?
// It never allows on doubt: an unknown agent, an unknown permission, a
// missing grant and any store failure all deny, each with its reason code
// (unknown_agent, unknown_permission, permission_not_granted,
// internal_error or timeout).
func (s *Store) Check(ctx context.Context, agentID string, perm Permission) Decision {
	if ValidAgentID(agentID) != nil {
		return Deny(CodeUnknownAgent, fmt.Sprintf("no agent %q is installed", truncate(agentID, 64)))
	}
	if _, err := ParsePermission(string(perm)); err != nil {
		return Deny(CodeUnknownPermission, MessageOf(err))
	}
	// One indexed read answers both questions: no row = unknown agent,
	// NULL = installed but not granted.
	var granted sql.NullInt64
	err := s.db.QueryRowContext(ctx,
		`SELECT (SELECT 1 FROM grants WHERE agent_id = ?1 AND permission = ?2) FROM agents WHERE agent_id = ?1`,
		agentID, string(perm)).Scan(&granted)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Deny(CodeUnknownAgent, fmt.Sprintf("no agent %q is installed", agentID))
	case err != nil:
		e := storeErr("check", err)
		return Deny(CodeOf(e), fmt.Sprintf("the permission store could not be read, so %q is denied to %q: %v", perm, agentID, err))
	case !granted.Valid:
		return Deny(CodePermissionNotGranted, fmt.Sprintf("agent %q has not been granted %q", agentID, perm))
	}
	return Allow(fmt.Sprintf("agent %q holds a grant of %q", agentID, perm))
}

// LogDenial appends d to the denial log and returns it with its ID. The
// record is on disk (fsynced) when LogDenial returns without error. It
// fills Timestamp when zero, raises it to the previous record's when it is
// earlier (the log's time order is its write order; see denialTimeOrder),
// records an empty Code as internal_error, and
// truncates oversized fields (see the MaxDenial* bounds) instead of
// rejecting them: a denial must always be recorded.
func (s *Store) LogDenial(ctx context.Context, d Denial) (Denial, error) {
	d = boundDenial(d)
	if d.Timestamp == 0 {
		d.Timestamp = s.now().UnixMilli()
	}
	ctxJSON, err := json.Marshal(d.Context)
	if err != nil {
		return Denial{}, storeErr("encode denial context", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		// The log's time never runs backwards (see denialTimeOrder): a
		// record is stamped no earlier than the one written before it.
		return tx.QueryRowContext(ctx, `INSERT INTO denials (agent_id, permission, ts, code, context)
			VALUES (?, ?, max(?, coalesce((SELECT ts FROM denials ORDER BY id DESC LIMIT 1), 0)), ?, ?) RETURNING id, ts`,
			d.AgentID, d.Permission, d.Timestamp, string(d.Code), string(ctxJSON)).Scan(&d.ID, &d.Timestamp)
	})
	if err != nil {
		return Denial{}, fmt.Errorf("denial[agent %s, %s]: %w", d.AgentID, d.Code, err)
	}
	return d, nil
}

// boundDenial truncates every field of d to its bound and makes all text
// valid UTF-8, so that the record is always storable and displayable.
func boundDenial(d Denial) Denial {
	d.ID = 0
	d.AgentID = clip(d.AgentID, MaxDenialAgentIDBytes)
	d.Permission = clip(d.Permission, MaxDenialPermissionBytes)
	d.Code = Code(clip(string(d.Code), MaxDenialCodeBytes))
	if d.Code == "" {
		d.Code = CodeInternal
	}
	c := &d.Context
	c.URL = clip(c.URL, MaxDenialURLBytes)
	c.Reason = clip(c.Reason, MaxDenialReasonBytes)
	c.Layer = clip(c.Layer, MaxDenialShortBytes)
	c.Method = clip(c.Method, MaxDenialShortBytes)
	c.Origin = clip(c.Origin, MaxDenialShortBytes)
	if len(c.Details) > 0 {
		keys := make([]string, 0, len(c.Details))
		for k := range c.Details {
			keys = append(keys, k)
		}
		sort.Strings(keys) // keep a deterministic subset
		out := make(map[string]string, min(len(keys), MaxDenialDetailKeys))
		dropped := 0
		for _, k := range keys {
			ck := clip(k, MaxDenialDetailKeyBytes)
			if _, dup := out[ck]; dup || len(out) >= MaxDenialDetailKeys-1 && len(keys) > MaxDenialDetailKeys {
				dropped++
				continue
			}
			out[ck] = clip(c.Details[k], MaxDenialDetailValBytes)
		}
		if dropped > 0 {
			// The last slot says that something was cut, so nobody reads a
			// partial record as the whole story.
			out["_truncated"] = fmt.Sprintf("%d more detail keys dropped", dropped)
		}
		c.Details = out
	}
	return d
}

// clip returns s as valid UTF-8 of at most n bytes, cut on a rune boundary.
func clip(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// ListDenials returns one page of denial records matching f.
//
// Without AfterID the page is newest first, starting below BeforeID when it
// is set; NextBeforeID is set when older records remain. With AfterID the
// page is oldest first, starting above AfterID (for tailing a live log; the
// next AfterID is the last record's ID); BeforeID still bounds it from above
// when set. Limit defaults to 100 and is clamped to 1000. Paging is by
// keyset on id, so a page costs the same at any depth.
func (s *Store) ListDenials(ctx context.Context, f DenialFilter) (DenialPage, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = DefaultDenialPage
	case limit > MaxDenialPage:
		limit = MaxDenialPage
	}
	var where []string
	var args []any
	// With several equality filters, only the first one's index drives the
	// walk (its rows come in id order); a unary + on the others keeps the
	// planner from picking a less selective index. Agents are the most
	// numerous, then codes, then the seven permissions.
	driver := ""
	for _, c := range []struct{ col, v string }{{"agent_id", f.AgentID}, {"code", string(f.Code)}, {"permission", f.Permission}} {
		if c.v == "" {
			continue
		}
		col := c.col
		if driver == "" {
			driver = col
		} else {
			col = "+" + col
		}
		where = append(where, col+" = ?")
		args = append(args, c.v)
	}
	// A time range is an id range, because timestamps never decrease
	// with ids (denialTimeOrder): two index probes find its ends, and the
	// walk below stays a keyset walk on id whatever else is filtered. The
	// ts tests stay in the query (unindexed, +ts) as a guard.
	if f.Since > 0 || f.Until > 0 {
		lo, hi, empty, err := s.timeRangeIDs(ctx, f.Since, f.Until)
		if err != nil {
			return DenialPage{}, err
		}
		if empty {
			return DenialPage{Denials: []Denial{}}, nil
		}
		if lo > 0 {
			where = append(where, "id >= ?", "+ts >= ?")
			args = append(args, lo, f.Since)
		}
		if hi > 0 {
			where = append(where, "id <= ?", "+ts < ?")
			args = append(args, hi, f.Until)
		}
	}
	if f.BeforeID > 0 {
		where = append(where, "id < ?")
		args = append(args, f.BeforeID)
	}
	ascending := f.AfterID > 0
	if ascending {
		where = append(where, "id > ?")
		args = append(args, f.AfterID)
	}
	order := " ORDER BY id DESC"
	if ascending {
		order = " ORDER BY id ASC"
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	// One extra row tells whether another page exists without a count.
	args = append(args, limit+1)
	q := `SELECT id, agent_id, permission, ts, code, context FROM denials` + cond + order + ` LIMIT ?`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return DenialPage{}, storeErr("list denials", err)
	}
	defer rows.Close()
	page := DenialPage{Denials: make([]Denial, 0, min(limit, 128))}
	more := false
	for rows.Next() {
		if len(page.Denials) == limit {
			more = true
			break
		}
		var d Denial
		var code, ctxJSON string
		if err := rows.Scan(&d.ID, &d.AgentID, &d.Permission, &d.Timestamp, &code, &ctxJSON); err != nil {
			return DenialPage{}, storeErr("list denials", err)
		}
		d.Code = Code(code)
		if err := json.Unmarshal([]byte(ctxJSON), &d.Context); err != nil {
			return DenialPage{}, fmt.Errorf("denial[%d]: %w", d.ID, storeErr("decode context", err))
		}
		page.Denials = append(page.Denials, d)
	}
	if err := rows.Err(); err != nil {
		return DenialPage{}, storeErr("list denials", err)
	}
	if more && !ascending {
		page.NextBeforeID = page.Denials[len(page.Denials)-1].ID
	}
	return page, nil
}

// timeRangeIDs turns a time range into the ids of its first and last
// records (0 for an open end), or reports it empty. Each end is one probe of
// the ts index.
func (s *Store) timeRangeIDs(ctx context.Context, since, until int64) (lo, hi int64, empty bool, err error) {
	if since > 0 {
		err = s.db.QueryRowContext(ctx, `SELECT id FROM denials WHERE ts >= ? ORDER BY ts ASC, id ASC LIMIT 1`, since).Scan(&lo)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, 0, true, nil
		}
		if err != nil {
			return 0, 0, false, storeErr("list denials", err)
		}
	}
	if until > 0 {
		err = s.db.QueryRowContext(ctx, `SELECT id FROM denials WHERE ts < ? ORDER BY ts DESC, id DESC LIMIT 1`, until).Scan(&hi)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, 0, true, nil
		}
		if err != nil {
			return 0, 0, false, storeErr("list denials", err)
		}
	}
	return lo, hi, since > 0 && until > 0 && lo > hi, nil
}
