package store

import (
	"context"

	"github.com/agentgate/nmhost/mediator"
)

// DecisionFacts returns what the policy needs for one decision: the
// agent's stored profile, whether it holds perm, whether the user revoked
// it (so the denial can say so), and the remembered answer for operation
// and target. It reads them from the cache (cache.go) while nothing has
// been committed since they were read.
func (s *Store) DecisionFacts(ctx context.Context, agentID string, perm mediator.Permission, operation, target string) (mediator.DecisionFacts, error) {
	a, err := s.facts(ctx, agentID)
	if err != nil {
		return mediator.DecisionFacts{}, storeErr("decide", err)
	}
	if a.missing {
		return mediator.DecisionFacts{}, unknownAgent(agentID)
	}
	f := mediator.DecisionFacts{ProfileJSON: a.profileJSON, Granted: a.granted(perm), ModuleSHA256: a.moduleSHA}
	f.Revoked = !f.Granted && a.isRevoked(perm)
	f.Workspace = mediator.GrantedWorkspace(a.granted)
	for _, p := range []mediator.Permission{mediator.PermWorkspaceRead, mediator.PermWorkspaceWrite} {
		if !a.granted(p) && a.isRevoked(p) {
			f.WorkspaceRevoked = append(f.WorkspaceRevoked, p)
		}
	}
	if p, ok := a.prefs[prefKey{operation, target}]; ok {
		if p.ExpiresAt > 0 && s.now().UnixMilli() >= p.ExpiresAt {
			// Expired: never used, and removed now (best effort; the
			// next open or list removes it otherwise).
			_ = s.sweepExpiredPreferences(ctx)
		} else {
			f.Preference = p
		}
	}
	return f, nil
}
