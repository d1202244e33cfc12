package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentgate/nmhost/mediator"
)

// InstallAgent installs or re-installs the agent p describes and returns
// the stored record. moduleSHA256 is the hash of the module stored with
// PutModule ("" when the request brings no module: a re-install then keeps
// the module already recorded, unless the profile pins another); when the
// profile pins a hash too, the two must agree (hash_mismatch).
//
// Grants come from installation: every permission in permissions.required
// is granted with source "install". On re-install:
//   - an "install" grant whose permission is no longer required is removed
//     (the agent stopped asking for it, so installation no longer grants it);
//   - a "user" grant stays while the permission is still required or
//     optional, and is removed otherwise (a user cannot have granted what the
//     agent no longer asks for); it keeps its source and time, so it survives
//     the permission moving from required back to optional;
//   - a permission the user revoked stays revoked when the profile and the
//     module are the ones already installed: installing the same agent again
//     (as `nmhost run` does on every run) is not a new consent;
//   - when the profile or the module changed, the user's revocations are
//     forgotten and every required permission is granted again: installing
//     a different agent is consent to what it now asks for. Revocations
//     lists them beforehand, so a caller can say what was granted again.
func (s *Store) InstallAgent(ctx context.Context, p mediator.Profile, moduleSHA256 string) (mediator.AgentRecord, error) {
	if err := p.Normalize(); err != nil {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", mediator.Truncate(p.AgentID, 64), err)
	}
	id := p.AgentID
	if moduleSHA256 != "" && !mediator.IsHexSHA256(moduleSHA256) {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, mediator.Errorf(mediator.CodeBadRequest, "module hash %q is not 64 lowercase hex digits", mediator.Truncate(moduleSHA256, 80)))
	}
	if p.ModuleSHA256 != "" && moduleSHA256 != "" && p.ModuleSHA256 != moduleSHA256 {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, mediator.Errorf(mediator.CodeHashMismatch, "the module's sha256 is %s but the profile pins %s", moduleSHA256, p.ModuleSHA256))
	}
	sum := moduleSHA256
	if sum == "" {
		sum = p.ModuleSHA256
	}
	profileJSON, err := json.Marshal(p)
	if err != nil {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, storeErr("encode profile", err))
	}
	now := s.now().UnixMilli()
	var rec mediator.AgentRecord
	err = s.write(ctx, func(tx *sql.Tx) error {
		same, err := sameAgentTx(ctx, tx, id, string(profileJSON), sum)
		if err != nil {
			return err
		}
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
		revoked, err := revocationsTx(ctx, tx, id)
		if err != nil {
			return err
		}
		for _, perm := range revoked {
			// A revocation is forgotten with a new consent (another profile
			// or module) and when the agent no longer asks for the permission.
			asked := p.Requires(perm) || slices.Contains(p.Permissions.Optional, perm)
			if same && asked {
				continue
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM revocations WHERE agent_id = ? AND permission = ?`, id, string(perm)); err != nil {
				return err
			}
		}
		for _, g := range existing {
			keep := p.Requires(g.Permission)
			if g.Source == mediator.SourceUser {
				keep = keep || slices.Contains(p.Permissions.Optional, g.Permission)
			}
			if !keep {
				if _, err := tx.ExecContext(ctx, `DELETE FROM grants WHERE agent_id = ? AND permission = ?`, id, string(g.Permission)); err != nil {
					return err
				}
			}
		}
		for _, perm := range p.Permissions.Required {
			if same && slices.Contains(revoked, perm) {
				continue
			}
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
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: install: %w", id, err)
	}
	return rec, nil
}

// queryer is what reads need: a *sql.DB or a *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queryColumn returns the one column query selects, every row of it. The
// rows are read to the end and closed before it returns, so the caller can
// write in the same transaction next.
func queryColumn[T any](ctx context.Context, q queryer, query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func unknownAgent(id string) error {
	return mediator.Errorf(mediator.CodeUnknownAgent, "no agent %q is installed", mediator.Truncate(id, 64))
}

func agentTx(ctx context.Context, q queryer, id string) (mediator.AgentRecord, error) {
	var rec mediator.AgentRecord
	var profileJSON string
	err := q.QueryRowContext(ctx, `SELECT profile, module_sha256, installed_at, updated_at FROM agents WHERE agent_id = ?`, id).
		Scan(&profileJSON, &rec.ModuleSHA256, &rec.InstalledAt, &rec.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return mediator.AgentRecord{}, unknownAgent(id)
	}
	if err != nil {
		return mediator.AgentRecord{}, storeErr("read agent", err)
	}
	if err := json.Unmarshal([]byte(profileJSON), &rec.Profile); err != nil {
		return mediator.AgentRecord{}, storeErr("decode stored profile", err)
	}
	if rec.Grants, err = grantsTx(ctx, q, id); err != nil {
		return mediator.AgentRecord{}, err
	}
	if rec.Revoked, err = revocationsTx(ctx, q, id); err != nil {
		return mediator.AgentRecord{}, err
	}
	return rec, nil
}

func grantsTx(ctx context.Context, q queryer, id string) ([]mediator.Grant, error) {
	rows, err := q.QueryContext(ctx, `SELECT permission, granted_at, source FROM grants WHERE agent_id = ? ORDER BY permission`, id)
	if err != nil {
		return nil, storeErr("read grants", err)
	}
	defer rows.Close()
	out := []mediator.Grant{}
	for rows.Next() {
		g := mediator.Grant{AgentID: id}
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
func (s *Store) Agent(ctx context.Context, id string) (mediator.AgentRecord, error) {
	if mediator.ValidAgentID(id) != nil {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", mediator.Truncate(id, 64), unknownAgent(id))
	}
	f, err := s.facts(ctx, id)
	if err == nil && f.missing {
		err = unknownAgent(id)
	}
	var rec mediator.AgentRecord
	if err == nil {
		rec, err = f.record()
	}
	if err != nil {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", id, err)
	}
	return rec, nil
}

// ListAgents returns every installed agent with its grants, sorted by id.
func (s *Store) ListAgents(ctx context.Context) ([]mediator.AgentRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT agent_id, profile, module_sha256, installed_at, updated_at FROM agents ORDER BY agent_id`)
	if err != nil {
		return nil, storeErr("list agents", err)
	}
	defer rows.Close()
	out := []mediator.AgentRecord{}
	byID := map[string]int{}
	for rows.Next() {
		var rec mediator.AgentRecord
		var id, profileJSON string
		if err := rows.Scan(&id, &profileJSON, &rec.ModuleSHA256, &rec.InstalledAt, &rec.UpdatedAt); err != nil {
			return nil, storeErr("list agents", err)
		}
		if err := json.Unmarshal([]byte(profileJSON), &rec.Profile); err != nil {
			return nil, fmt.Errorf("agent[%s]: %w", id, storeErr("decode stored profile", err))
		}
		rec.Grants = []mediator.Grant{}
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
		var g mediator.Grant
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
	rrows, err := s.db.QueryContext(ctx, `SELECT agent_id, permission FROM revocations ORDER BY agent_id, permission`)
	if err != nil {
		return nil, storeErr("list revocations", err)
	}
	defer rrows.Close()
	for rrows.Next() {
		var id string
		var perm mediator.Permission
		if err := rrows.Scan(&id, &perm); err != nil {
			return nil, storeErr("list revocations", err)
		}
		if i, ok := byID[id]; ok {
			out[i].Revoked = append(out[i].Revoked, perm)
		}
	}
	if err := rrows.Err(); err != nil {
		return nil, storeErr("list revocations", err)
	}
	return out, nil
}

// UninstallAgent removes the agent, its grants, its remembered answers and
// the user's revocations, and appends an audit record saying so, all in one transaction: an agent
// installed later under the same id starts with nothing of the old one's.
// Its denial records stay: they are history. Its module file stays too:
// modules are content-addressed and may be shared.
func (s *Store) UninstallAgent(ctx context.Context, id string) error {
	if mediator.ValidAgentID(id) != nil {
		return fmt.Errorf("agent[%s]: %w", mediator.Truncate(id, 64), unknownAgent(id))
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		// Grants would also go by ON DELETE CASCADE; deleting them first
		// counts them for the record, and keeps them gone even without it.
		grants, err := deleteCount(ctx, tx, `DELETE FROM grants WHERE agent_id = ?`, id)
		if err != nil {
			return err
		}
		prefs, err := deleteCount(ctx, tx, `DELETE FROM preferences WHERE agent_id = ?`, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM revocations WHERE agent_id = ?`, id); err != nil {
			return err
		}
		if n, err := deleteCount(ctx, tx, `DELETE FROM agents WHERE agent_id = ?`, id); err != nil {
			return err
		} else if n == 0 {
			return unknownAgent(id) // rolls the whole transaction back
		}
		_, err = s.appendAuditTx(ctx, tx, mediator.AuditEntry{
			Kind: mediator.AuditUninstall, Operation: mediator.Operation{AgentID: id, Name: mediator.OpAgentUninstall},
			Allowed: true, Code: mediator.CodeAllowed, DecidedBy: "user",
			Reason: fmt.Sprintf("uninstalled; removed %d grant(s) and %d remembered answer(s)", grants, prefs),
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("agent[%s]: uninstall: %w", id, err)
	}
	return nil
}

// deleteCount runs a DELETE and returns how many rows it removed.
func deleteCount(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Grant grants perm to the agent on the user's behalf (source "user") and
// returns the grant; it ends a revocation of perm. It is idempotent: an existing grant is returned as it
// is. Errors: unknown_agent; unknown_permission; bad_request when the
// agent's profile lists perm in neither permissions.required nor
// permissions.optional, because a user cannot grant what the agent never
// asked for (the profile is the ceiling, grants only pick within it).
func (s *Store) Grant(ctx context.Context, agentID string, perm mediator.Permission) (mediator.Grant, error) {
	if mediator.ValidAgentID(agentID) != nil {
		return mediator.Grant{}, fmt.Errorf("agent[%s]: %w", mediator.Truncate(agentID, 64), unknownAgent(agentID))
	}
	if _, err := mediator.ParsePermission(string(perm)); err != nil {
		return mediator.Grant{}, fmt.Errorf("agent[%s]: grant: %w", agentID, err)
	}
	var g mediator.Grant
	err := s.write(ctx, func(tx *sql.Tx) error {
		p, err := profileTx(ctx, tx, agentID)
		if err != nil {
			return err
		}
		if !asksFor(p, perm) {
			return mediator.Errorf(mediator.CodeBadRequest, "agent %q did not ask for %q (it is in neither permissions.required nor permissions.optional), so it cannot be granted", agentID, perm)
		}
		// The set is the ceiling on grants, whoever grants.
		if p.PermissionSet != "" {
			if set := mediator.DeterminePermissionSet(p, mediator.SetInference{}).Set; !setAllows(set, perm) {
				return mediator.Errorf(mediator.CodePermissionOutsideSet, "%s", mediator.OutsideSetMessage(set, perm))
			}
		}
		if _, err := tx.ExecContext(ctx, `
INSERT INTO grants (agent_id, permission, granted_at, source) VALUES (?, ?, ?, 'user')
ON CONFLICT (agent_id, permission) DO NOTHING`, agentID, string(perm), s.now().UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM revocations WHERE agent_id = ? AND permission = ?`, agentID, string(perm)); err != nil {
			return err
		}
		g = mediator.Grant{AgentID: agentID}
		return tx.QueryRowContext(ctx, `SELECT permission, granted_at, source FROM grants WHERE agent_id = ? AND permission = ?`, agentID, string(perm)).
			Scan(&g.Permission, &g.GrantedAt, &g.Source)
	})
	if err != nil {
		return mediator.Grant{}, fmt.Errorf("agent[%s]: grant %s: %w", agentID, perm, err)
	}
	return g, nil
}

// Revoke removes the agent's grant of perm and reports whether there was
// one, and remembers that the user revoked it: installing the same profile
// and module again does not grant it back (see InstallAgent), and Check
// denies it with revoked_by_user. Revoking a grant that does not exist is
// not an error; an unknown agent or permission is.
func (s *Store) Revoke(ctx context.Context, agentID string, perm mediator.Permission) (bool, error) {
	if mediator.ValidAgentID(agentID) != nil {
		return false, fmt.Errorf("agent[%s]: %w", mediator.Truncate(agentID, 64), unknownAgent(agentID))
	}
	if _, err := mediator.ParsePermission(string(perm)); err != nil {
		return false, fmt.Errorf("agent[%s]: revoke: %w", agentID, err)
	}
	var existed bool
	err := s.write(ctx, func(tx *sql.Tx) error {
		p, err := profileTx(ctx, tx, agentID)
		if err != nil {
			return err
		}
		n, err := deleteCount(ctx, tx, `DELETE FROM grants WHERE agent_id = ? AND permission = ?`, agentID, string(perm))
		if err != nil {
			return err
		}
		existed = n > 0
		// Only what the agent asks for can be granted again by an install,
		// so only that needs remembering.
		if !asksFor(p, perm) {
			return nil
		}
		_, err = tx.ExecContext(ctx, `
INSERT INTO revocations (agent_id, permission, revoked_at) VALUES (?, ?, ?)
ON CONFLICT (agent_id, permission) DO UPDATE SET revoked_at = excluded.revoked_at`, agentID, string(perm), s.now().UnixMilli())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("agent[%s]: revoke %s: %w", agentID, perm, err)
	}
	return existed, nil
}

// profileTx reads the agent's stored profile inside tx (unknown_agent when
// there is none).
func profileTx(ctx context.Context, tx *sql.Tx, agentID string) (mediator.Profile, error) {
	var p mediator.Profile
	var profileJSON string
	err := tx.QueryRowContext(ctx, `SELECT profile FROM agents WHERE agent_id = ?`, agentID).Scan(&profileJSON)
	if errors.Is(err, sql.ErrNoRows) {
		return p, unknownAgent(agentID)
	}
	if err != nil {
		return p, err
	}
	return p, json.Unmarshal([]byte(profileJSON), &p)
}

// asksFor reports whether the profile lists perm as required or optional:
// the ceiling of what may be granted.
func asksFor(p mediator.Profile, perm mediator.Permission) bool {
	return p.Requires(perm) || slices.Contains(p.Permissions.Optional, perm)
}

// Grants returns the agent's grants sorted by permission.
func (s *Store) Grants(ctx context.Context, agentID string) ([]mediator.Grant, error) {
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
// revoked_by_user when the user took the grant back, internal_error or
// timeout).
func (s *Store) Check(ctx context.Context, agentID string, perm mediator.Permission) mediator.Decision {
	if mediator.ValidAgentID(agentID) != nil {
		return mediator.Deny(mediator.CodeUnknownAgent, fmt.Sprintf("no agent %q is installed", mediator.Truncate(agentID, 64)))
	}
	if _, err := mediator.ParsePermission(string(perm)); err != nil {
		return mediator.Deny(mediator.CodeUnknownPermission, mediator.MessageOf(err))
	}
	// The cached facts answer every question (cache.go): not installed =
	// unknown agent, no grant = not granted, and whether the user revoked it.
	f, err := s.facts(ctx, agentID)
	switch {
	case err != nil:
		return mediator.Deny(mediator.CodeOf(err), fmt.Sprintf("the permission store could not be read, so %q is denied to %q: %v", perm, agentID, err))
	case f.missing:
		return mediator.Deny(mediator.CodeUnknownAgent, fmt.Sprintf("no agent %q is installed", agentID))
	case !f.granted(perm) && f.isRevoked(perm):
		return mediator.Deny(mediator.CodeRevokedByUser, mediator.RevokedMessage(agentID, perm))
	case !f.granted(perm):
		return mediator.Deny(mediator.CodePermissionNotGranted, fmt.Sprintf("agent %q has not been granted %q", agentID, perm))
	}
	return mediator.Allow(fmt.Sprintf("agent %q holds a grant of %q", agentID, perm))
}

func setAllows(set mediator.PermissionSet, perm mediator.Permission) bool {
	_, outside := mediator.OutsideSet(set, []mediator.Permission{perm})
	return !outside
}
