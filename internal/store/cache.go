package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
//     this process's own pooled connections);
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

	dvmu sync.Mutex // serialises data_version reads on conn
	conn *sql.Conn

	reads atomic.Int64 // agents read from the database; tests read it

	mu     sync.Mutex
	dv     int64
	seen   uint64 // local at the time the entries were filed
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
}

type prefKey struct{ operation, target string }

func newFactCache() *factCache {
	return &factCache{agents: map[string]*agentFacts{}, dv: -1}
}

func (c *factCache) close() {
	if c == nil {
		return
	}
	c.dvmu.Lock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	c.dvmu.Unlock()
}

// wrote marks that this Store committed a write.
func (s *Store) wrote() {
	if s.cache != nil {
		s.cache.local.Add(1)
	}
}

// dataVersion reads PRAGMA data_version on the cache's own connection.
func (s *Store) dataVersion(ctx context.Context) (int64, error) {
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
	var v int64
	err := c.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
	if err != nil {
		// A broken connection is replaced on the next call.
		c.conn.Close()
		c.conn = nil
	}
	return v, err
}

// facts returns the cached facts of the agent, reading them when anything
// may have changed since they were cached.
func (s *Store) facts(ctx context.Context, id string) (*agentFacts, error) {
	c := s.cache
	local := c.local.Load()
	dv, err := s.dataVersion(ctx)
	if err != nil {
		return nil, storeErr("read data version", err)
	}
	c.mu.Lock()
	if dv != c.dv || local != c.seen {
		clear(c.agents)
		c.dv, c.seen = dv, local
	}
	f, ok := c.agents[id]
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
	if c.dv == dv && c.seen == local {
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
	(SELECT json_group_array(json_array(id, operation, target, answer)) FROM preferences WHERE agent_id = ?1)
FROM agents a WHERE a.agent_id = ?1`, id).Scan(&f.profileJSON, &f.moduleSHA, &f.installedAt, &f.updatedAt, &grants, &revoked, &prefs)
	if errors.Is(err, sql.ErrNoRows) {
		return &agentFacts{missing: true}, nil
	}
	if err != nil {
		return nil, storeErr("read agent", err)
	}
	var gs [][3]json.RawMessage
	var ps [][4]json.RawMessage
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
		if err := errors.Join(json.Unmarshal(p[0], &pr.ID), json.Unmarshal(p[1], &pr.Operation), json.Unmarshal(p[2], &pr.Target), json.Unmarshal(p[3], &pr.Answer)); err != nil {
			return nil, storeErr("decode preferences", err)
		}
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
	if err := json.Unmarshal([]byte(f.profileJSON), &rec.Profile); err != nil {
		return mediator.AgentRecord{}, storeErr("decode stored profile", err)
	}
	return rec, nil
}
