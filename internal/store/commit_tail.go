package store

import (
	"encoding/binary"

	"golang.org/x/mod/sumdb/tlog"
)

// The trail's tail, carried from one group commit to the next. After its
// own commit the committer knows the last record's seq and hash and the
// tree's peaks (the only stored hashes the next leaves read). While nobody
// has committed since, the next group starts from them instead of reading
// them again, and the decisions' cache (cache.go) stays valid across the
// commit: a group writes only the audit trail and the denial log, never
// what a decision reads.
//
// "Nobody has committed since" is read from the WAL index's header
// (walindex_unix.go): every commit of every connection rewrites it and
// counts itself in its transaction counter. Inside the group's
// transaction, after BEGIN IMMEDIATE, this process holds the write lock,
// so the header cannot move. After COMMIT it can (another process may
// commit at once), so the header read then is taken as this commit's only
// when its counter is exactly one past the one read under the lock and
// its two copies agree; anything else (another commit, the WAL starting
// over, a header being rewritten) drops the tail and the next group reads
// the database as before. Where the header is not mapped nothing is
// carried.

// tail is what a group commit leaves for the next.
type tail struct {
	hdr    [walIndexHeader]byte // the header the commit left
	seq    int64
	prev   string
	hashes map[int64]tlog.Hash // the tree's peaks that were in memory
}

// walHeader returns the mapped WAL-index header; ok is false where none is
// mapped yet (the first decision maps it) or can be.
func (s *Store) walHeader() (h [walIndexHeader]byte, ok bool) {
	c := s.cache
	if c == nil {
		return h, false
	}
	c.walmu.RLock()
	defer c.walmu.RUnlock()
	if c.wal == nil {
		return h, false
	}
	return c.wal.header(), true
}

// headerChange is the header's transaction counter (sqlite.org/
// walformat.html: iChange, a native-order 32-bit integer at offset 8 of
// the first copy).
func headerChange(h *[walIndexHeader]byte) uint32 {
	return binary.NativeEndian.Uint32(h[8:12])
}

// headerSettled says the header's two copies agree: SQLite writes the
// second copy, then the first, so a header being rewritten has copies
// that differ.
func headerSettled(h *[walIndexHeader]byte) bool {
	return [48]byte(h[:48]) == [48]byte(h[48:96])
}

// resume starts w from t instead of reading the tail from the database.
func (w *auditWriter) resume(t *tail) {
	w.loaded, w.seq, w.prev, w.hashes = true, t.seq, t.prev, t.hashes
}

// tailAfter is what w leaves for the next group once its transaction
// committed with header hdr: nil when w appended nothing (it never read
// the tail). Only the peaks of the tree are kept: appending leaf n reads
// no other stored hash, so the map stays at most 64 entries however long
// the host runs.
func (w *auditWriter) tailAfter(hdr [walIndexHeader]byte) *tail {
	if !w.loaded {
		return nil
	}
	t := &tail{hdr: hdr, seq: w.seq, prev: w.prev, hashes: make(map[int64]tlog.Hash, 16)}
	for k := 0; k < 63; k++ {
		if w.seq>>k&1 == 0 {
			continue
		}
		idx := tlog.StoredHashIndex(k, w.seq>>k-1)
		if h, ok := w.hashes[idx]; ok {
			t.hashes[idx] = h
		}
	}
	return t
}
