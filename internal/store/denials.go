package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// Denial page sizes.
const (
	DefaultDenialPage = 100
	MaxDenialPage     = 1000
)

// DenialFilter selects denial records. The zero value selects the newest
// page of everything.
type DenialFilter struct {
	AgentID    string        `json:"agentId,omitempty"`
	Permission string        `json:"permission,omitempty"`
	Code       mediator.Code `json:"code,omitempty"`
	Since      int64         `json:"since,omitempty"`    // ms, inclusive; 0 = no lower bound
	Until      int64         `json:"until,omitempty"`    // ms, exclusive; 0 = no upper bound
	BeforeID   int64         `json:"beforeId,omitempty"` // paging cursor: records with a smaller id (newest first)
	AfterID    int64         `json:"afterId,omitempty"`  // tailing cursor: records with a larger id (oldest first)
	Limit      int           `json:"limit,omitempty"`    // default 100, at most 1000
}

// DenialPage is one page of denial records.
type DenialPage struct {
	Denials []mediator.Denial `json:"denials"`
	// NextBeforeID, when non-zero, fetches the next (older) page.
	NextBeforeID int64 `json:"nextBeforeId,omitempty"`
}

// ParseFilterTime parses a DenialFilter bound as people and programs give
// it: ms since the epoch, RFC 3339, or a duration ago ("90m" is now minus
// 90 minutes). "" is no bound (0). A time before 1970 is refused: 0 means
// "unbounded" to the filter, and a negative bound is no bound a person meant.
func ParseFilterTime(s string, now time.Time) (int64, error) {
	if s == "" {
		return 0, nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if d, derr := time.ParseDuration(s); derr == nil {
			ms, err = now.Add(-d).UnixMilli(), nil
		} else if t, terr := time.Parse(time.RFC3339, s); terr == nil {
			ms, err = t.UnixMilli(), nil
		}
	}
	if err != nil {
		return 0, mediator.Errorf(mediator.CodeBadRequest, "time %q is not ms since the epoch, RFC 3339 or a duration ago", mediator.Truncate(s, 40))
	}
	if ms < 0 {
		return 0, mediator.Errorf(mediator.CodeBadRequest, "time %q is before 1970", mediator.Truncate(s, 40))
	}
	return ms, nil
}

// addDenialAuditSeq gives each denial the seq of its decision's audit
// record (0 for denials written before the column existed). It checks for
// the column first: the step runs again when user_version was set back.
func addDenialAuditSeq(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('denials') WHERE name = 'audit_seq'`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE denials ADD COLUMN audit_seq INTEGER NOT NULL DEFAULT 0`); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS denials_audit_seq ON denials (audit_seq)`)
	return err
}

// LogDenial appends d to the denial log and returns it with its ID. The
// record is on disk (fsynced) when LogDenial returns without error. Every
// denial is a decision, so every one names its audit record (AuditSeq):
// when d.AuditSeq is 0 (a refusal decided outside the policy: grant,
// capability, ACL, link time, the extension) the decision's record
// (d.AuditEntry) is appended in the same transaction as the denial, so
// neither is ever on disk without the other. It
// fills Timestamp when zero, raises it to the previous record's when it is
// earlier (the log's time order is its write order; see denialTimeOrder),
// records an empty Code as internal_error, and
// truncates oversized fields (see the MaxDenial* bounds) instead of
// rejecting them: a denial must always be recorded.
func (s *Store) LogDenial(ctx context.Context, d mediator.Denial) (mediator.Denial, error) {
	d = d.Bounded()
	if d.Timestamp == 0 {
		d.Timestamp = s.now().UnixMilli()
	}
	ctxJSON, err := json.Marshal(d.Context)
	if err != nil {
		return mediator.Denial{}, storeErr("encode denial context", err)
	}
	if d.AuditSeq < 0 {
		d.AuditSeq = 0
	}
	var entry mediator.AuditEntry
	if d.AuditSeq == 0 {
		entry = d.AuditEntry()
	}
	in := d
	err = s.group(func(ctx context.Context, tx dbtx, w *auditWriter) error {
		// Computed afresh from in on every run: the group may be rolled
		// back and this run again alone.
		out := in
		if out.AuditSeq == 0 {
			rec, err := w.append(entry)
			if err != nil {
				return err
			}
			out.AuditSeq = rec.Seq
		}
		// The log's time never runs backwards (see denialTimeOrder): a
		// record is stamped no earlier than the one written before it.
		err := tx.QueryRowContext(ctx, `INSERT INTO denials (agent_id, permission, ts, code, context, audit_seq)
			VALUES (?, ?, max(?, coalesce((SELECT ts FROM denials ORDER BY id DESC LIMIT 1), 0)), ?, ?, ?) RETURNING id, ts`,
			out.AgentID, out.Permission, out.Timestamp, string(out.Code), string(ctxJSON), out.AuditSeq).Scan(&out.ID, &out.Timestamp)
		d = out
		return err
	})
	if err != nil {
		return mediator.Denial{}, fmt.Errorf("denial[agent %s, %s]: %w", d.AgentID, d.Code, err)
	}
	return d, nil
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
			return DenialPage{Denials: []mediator.Denial{}}, nil
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
	q := `SELECT id, agent_id, permission, ts, code, context, audit_seq FROM denials` + cond + order + ` LIMIT ?`
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return DenialPage{}, storeErr("list denials", err)
	}
	defer rows.Close()
	page := DenialPage{Denials: make([]mediator.Denial, 0, min(limit, 128))}
	more := false
	for rows.Next() {
		if len(page.Denials) == limit {
			more = true
			break
		}
		var d mediator.Denial
		var code, ctxJSON string
		if err := rows.Scan(&d.ID, &d.AgentID, &d.Permission, &d.Timestamp, &code, &ctxJSON, &d.AuditSeq); err != nil {
			return DenialPage{}, storeErr("list denials", err)
		}
		d.Code = mediator.Code(code)
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
