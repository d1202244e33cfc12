package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/maphash"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/agentgate/nmhost/mediator"
)

// Decisions read from memory. What a decision reads (the agent's profile,
// grants, revocations and remembered answers) is cached per agent and
// thrown away as soon as anything may have changed it:
//
//   - another connection committed: SQLite's PRAGMA data_version, asked on
//     a connection of its own that never writes, changes whenever any
//     other connection commits (another host process, `nmhost revoke`, or
//     this process's own pooled connections). Where the WAL index can be
//     mapped (walindex_unix.go) its header, which every commit rewrites,
//     answers the same question without a query;
//   - this Store wrote: every write bumps a counter before it returns, so
//     a revoke made through this Store holds for the very next decision.
//
// The state is read after the version, so a cached entry is never older
// than the version it is filed under; a change racing the read only makes
// the next decision read again.

// maxCachedAgents bounds the cache; past it the cache starts over (a
// hostile run asking about many unknown agents costs reads, not memory).
const maxCachedAgents = 1024

// factCache is the per-Store cache of agent facts.
type factCache struct {
	local atomic.Uint64 // bumped by every write of this Store

	dvmu     sync.Mutex // serialises data_version reads on conn
	conn     *sql.Conn
	walTried bool
	noMap    bool         // never map (closed, or a test of the data_version path)
	walmu    sync.RWMutex // held while the mapping is read; close unmaps it
	wal      *walIndex

	// factsStmt is the facts_version read, prepared on conn once (dvmu
	// held): most decisions follow a commit (their own audit records move
	// the version), so it runs before most of them, and parsing its SQL
	// cost more than running it.
	factsStmt *sql.Stmt

	reads      atomic.Int64 // agents read from the database; tests read it
	factsReads atomic.Int64 // facts_version reads; tests read it

	mu     sync.Mutex
	v      cacheVersion // the version last checked
	fv     int64        // facts_version the entries were read under
	filled bool
	agents map[string]*agentFacts
}

// agentFacts is one agent as decisions see it; nil profile = not installed.
type agentFacts struct {
	missing     bool
	profileJSON string
	moduleSHA   string
	installedAt int64
	updatedAt   int64
	grants      []mediator.Grant
	revoked     []mediator.Permission
	prefs       map[prefKey]mediator.Preference

	// profile is profileJSON decoded, once, on the first Agent call:
	// a fetch asks for its agent on every request, and decoding the
	// JSON each time cost more than the rest of the lookup.
	decode  sync.Once
	profile mediator.Profile
	profErr error
}

type prefKey struct{ operation, target string }

func newFactCache() *factCache {
	return &factCache{agents: map[string]*agentFacts{}}
}

func (c *factCache) close() {
	if c == nil {
		return
	}
	c.dvmu.Lock()
	c.dropConnLocked()
	c.noMap = true // closed: never map again
	c.dvmu.Unlock()
}

// dropConnLocked closes the cache's connection, and the WAL-index mapping
// with it: the mapping is only safe while that connection keeps the
// database open (walindex_unix.go). The next call opens both again. dvmu
// is held.
func (c *factCache) dropConnLocked() {
	c.walmu.Lock()
	c.wal.close()
	c.wal = nil
	c.walmu.Unlock()
	c.walTried = false
	if c.factsStmt != nil {
		c.factsStmt.Close()
		c.factsStmt = nil
	}
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// wrote marks that this Store committed a write.
func (s *Store) wrote() {
	if s.cache != nil {
		s.cache.local.Add(1)
	}
	if s.sy != nil {
		s.sy.committed()
	} else {
		s.wroteInOpen = true // a migration or a sweep: Open hands it to the syncer
	}
}

// carryOver moves the cache from version before to after: a commit of
// this Store that changed none of the facts (a group commit) and was the
// only commit between the two (commit_tail.go). A cache not current at
// before is left alone, to be checked as usual.
func (c *factCache) carryOver(before, after cacheVersion) {
	c.mu.Lock()
	if c.filled && c.v == before {
		c.v = after
	}
	c.mu.Unlock()
}

// FactsVersion is a number that changes with every commit of any process
// (mediator.FactsVersioner): a hash of the mapped WAL-index header and
// this Store's write count. ok is false until the header is mapped (the
// first decision maps it) and where it cannot be.
func (s *Store) FactsVersion() (uint64, bool) {
	c := s.cache
	c.walmu.RLock()
	w := c.wal
	if w == nil {
		c.walmu.RUnlock()
		return 0, false
	}
	var b [walIndexHeader + 8]byte
	h := w.header()
	c.walmu.RUnlock()
	copy(b[:], h[:])
	binary.LittleEndian.PutUint64(b[walIndexHeader:], c.local.Load())
	return maphash.Bytes(versionSeed, b[:]), true
}

// versionSeed seeds FactsVersion's hash, once per process.
var versionSeed = maphash.MakeSeed()

// version says whether anything may have been committed since the cache
// was filled: the WAL-index header where it is mapped (no query), else
// PRAGMA data_version on the cache's own connection. That connection is
// opened first and stays open, which also keeps the mapping valid
// (walindex_unix.go).
func (s *Store) version(ctx context.Context) (cacheVersion, error) {
	c := s.cache
	if err := ctx.Err(); err != nil {
		return cacheVersion{}, err
	}
	v := cacheVersion{local: c.local.Load()}
	c.walmu.RLock()
	if w := c.wal; w != nil {
		v.hdr = w.header()
		c.walmu.RUnlock()
		return v, nil
	}
	c.walmu.RUnlock()
	c.dvmu.Lock()
	defer c.dvmu.Unlock()
	if c.conn == nil {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return v, err
		}
		c.conn = conn
	}
	err := c.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v.dv)
	if err != nil {
		// A broken connection is replaced on the next call.
		c.dropConnLocked()
		return v, err
	}
	if !c.walTried && !c.noMap {
		// Mapped once, while the connection above holds the database open.
		c.walTried = true
		if w := openWALIndex(filepath.Join(s.dir, DBFileName)); w != nil {
			c.walmu.Lock()
			c.wal = w
			c.walmu.Unlock()
			// From now on the header is the version.
			return cacheVersion{hdr: w.header(), local: v.local}, nil
		}
	}
	return v, nil
}

// cacheVersion is what the cached entries were read under.
type cacheVersion struct {
	hdr   [walIndexHeader]byte
	dv    int64
	local uint64
}

// factsCount reads facts_version (schema_facts.go) on the cache's own
// connection.
func (s *Store) factsCount(ctx context.Context) (int64, error) {
	c := s.cache
	c.dvmu.Lock()
	defer c.dvmu.Unlock()
	if c.conn == nil {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		c.conn = conn
	}
	if c.factsStmt == nil {
		st, err := c.conn.PrepareContext(ctx, `SELECT v FROM facts_version WHERE id = 1`)
		if err != nil {
			c.dropConnLocked()
			return 0, err
		}
		c.factsStmt = st
	}
	c.factsReads.Add(1)
	var n int64
	err := c.factsStmt.QueryRowContext(ctx).Scan(&n)
	if err != nil {
		c.dropConnLocked()
	}
	return n, err
}

// facts returns the cached facts of the agent, reading them when anything
// may have changed since they were cached.
//
// The version (the WAL-index header or data_version, and this Store's
// write count) says whether anything at all was committed since the cache
// was checked; most commits only append audit records, so when it moved,
// facts_version says whether what decisions read changed. It is read after
// the version, and the entries after it, so a cached entry is never older
// than the version it is checked against: any change to the facts
// committed later moves the version again.
func (s *Store) facts(ctx context.Context, id string) (*agentFacts, error) {
	c := s.cache
	v, err := s.version(ctx)
	if err != nil {
		return nil, storeErr("read data version", err)
	}
	c.mu.Lock()
	same := c.filled && v == c.v
	fv := c.fv
	if f, ok := c.agents[id]; same && ok {
		c.mu.Unlock()
		return f, nil // the common case: one lock, no query
	}
	c.mu.Unlock()
	if !same {
		if fv, err = s.factsCount(ctx); err != nil {
			return nil, storeErr("read facts version", err)
		}
		c.mu.Lock()
		if !c.filled || fv != c.fv {
			clear(c.agents)
			c.fv = fv
		}
		c.v, c.filled = v, true
		c.mu.Unlock()
	}
	c.mu.Lock()
	f, ok := c.agents[id]
	if c.fv != fv {
		ok = false // another caller moved the cache on; read afresh
	}
	c.mu.Unlock()
	if ok {
		return f, nil
	}
	c.reads.Add(1)
	f, err = readAgentFacts(ctx, s.db, id)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.fv == fv {
		if len(c.agents) >= maxCachedAgents {
			clear(c.agents)
		}
		c.agents[id] = f
	}
	c.mu.Unlock()
	return f, nil
}

// readAgentFacts reads everything decisions need about one agent in one
// statement, so that it is one consistent snapshot.
func readAgentFacts(ctx context.Context, q queryer, id string) (*agentFacts, error) {
	f := &agentFacts{}
	var grants, revoked, prefs string
	err := q.QueryRowContext(ctx, `
SELECT a.profile, a.module_sha256, a.installed_at, a.updated_at,
	(SELECT json_group_array(json_array(permission, granted_at, source))
		FROM (SELECT permission, granted_at, source FROM grants WHERE agent_id = ?1 ORDER BY permission)),
	(SELECT json_group_array(permission)
		FROM (SELECT permission FROM revocations WHERE agent_id = ?1 ORDER BY permission)),
	(SELECT json_group_array(json_array(id, operation, target, answer, created_at, expires_at, session_id, module_sha256)) FROM preferences WHERE agent_id = ?1)
FROM agents a WHERE a.agent_id = ?1`, id).Scan(&f.profileJSON, &f.moduleSHA, &f.installedAt, &f.updatedAt, &grants, &revoked, &prefs)
	if errors.Is(err, sql.ErrNoRows) {
		return &agentFacts{missing: true}, nil
	}
	if err != nil {
		return nil, storeErr("read agent", err)
	}
	var gs [][3]json.RawMessage
	var ps [][8]json.RawMessage
	if err := errors.Join(json.Unmarshal([]byte(grants), &gs), json.Unmarshal([]byte(revoked), &f.revoked), json.Unmarshal([]byte(prefs), &ps)); err != nil {
		return nil, storeErr("decode agent facts", err)
	}
	f.grants = make([]mediator.Grant, 0, len(gs))
	for _, g := range gs {
		gr := mediator.Grant{AgentID: id}
		if err := errors.Join(json.Unmarshal(g[0], &gr.Permission), json.Unmarshal(g[1], &gr.GrantedAt), json.Unmarshal(g[2], &gr.Source)); err != nil {
			return nil, storeErr("decode grants", err)
		}
		f.grants = append(f.grants, gr)
	}
	f.prefs = make(map[prefKey]mediator.Preference, len(ps))
	for _, p := range ps {
		pr := mediator.Preference{AgentID: id}
		if err := errors.Join(json.Unmarshal(p[0], &pr.ID), json.Unmarshal(p[1], &pr.Operation), json.Unmarshal(p[2], &pr.Target), json.Unmarshal(p[3], &pr.Answer),
			json.Unmarshal(p[4], &pr.CreatedAt), json.Unmarshal(p[5], &pr.ExpiresAt), json.Unmarshal(p[6], &pr.SessionID), json.Unmarshal(p[7], &pr.ModuleSHA256)); err != nil {
			return nil, storeErr("decode preferences", err)
		}
		pr.Scope = pr.Answer.Scope()
		f.prefs[prefKey{pr.Operation, pr.Target}] = pr
	}
	return f, nil
}

func (f *agentFacts) granted(p mediator.Permission) bool {
	for _, g := range f.grants {
		if g.Permission == p {
			return true
		}
	}
	return false
}

func (f *agentFacts) isRevoked(p mediator.Permission) bool {
	for _, r := range f.revoked {
		if r == p {
			return true
		}
	}
	return false
}

// record is the agent as Agent returns it: a fresh copy, so that no caller
// can change what the next decision reads.
func (f *agentFacts) record() (mediator.AgentRecord, error) {
	rec := mediator.AgentRecord{ModuleSHA256: f.moduleSHA, InstalledAt: f.installedAt, UpdatedAt: f.updatedAt,
		Grants: append([]mediator.Grant{}, f.grants...)}
	if len(f.revoked) > 0 {
		rec.Revoked = append([]mediator.Permission(nil), f.revoked...)
	}
	f.decode.Do(func() { f.profErr = json.Unmarshal([]byte(f.profileJSON), &f.profile) })
	if f.profErr != nil {
		return mediator.AgentRecord{}, storeErr("decode stored profile", f.profErr)
	}
	rec.Profile = f.profile.Clone()
	return rec, nil
}
