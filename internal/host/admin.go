package host

import (
	"context"
	"encoding/json"

	"github.com/agentgate/nmhost/internal/adminpolicy"
	"github.com/agentgate/nmhost/mediator"
)

// currentAdmin is the administrator's rules in force now.
func (s *server) currentAdmin() mediator.Admin { return *s.admin.Load() }

// handleManagedPolicy takes the rules Chrome's enterprise policy put in
// the extension's managed storage ({"policy": {...}}, the schema of
// extension/managed_schema.json) and adds them to the machine's for this
// host process: rules only add, so nothing sent here loosens the
// machine's policy file. An empty policy changes nothing.
func handleManagedPolicy(_ context.Context, s *server, req *request) (any, error) {
	var p struct {
		Policy json.RawMessage `json:"policy"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	managed := mediator.AdminPolicy{}
	if len(p.Policy) > 0 && string(p.Policy) != "null" {
		var err error
		if managed, err = adminpolicy.Parse(p.Policy, "managed storage"); err != nil {
			return nil, err
		}
	}
	for {
		old := s.admin.Load()
		next := mediator.NewAdmin(s.opts.Admin).With(managed)
		if s.admin.CompareAndSwap(old, &next) {
			break
		}
	}
	var r adminReply
	r.set(s.currentAdmin().Policies())
	return r, nil
}

// adminReply lists the rules in force, each policy with its source.
type adminReply struct {
	Policies []adminPolicyView `json:"policies"`
}

type adminPolicyView struct {
	mediator.AdminPolicy
	Source string `json:"source"`
}

func (r *adminReply) set(ps []mediator.AdminPolicy) {
	for _, p := range ps {
		r.Policies = append(r.Policies, adminPolicyView{AdminPolicy: p, Source: p.Source})
	}
}

// adminRefusesGrant refuses a grant the administrator blocks.
func (s *server) adminRefusesGrant(perms ...mediator.Permission) error {
	a := s.currentAdmin()
	for _, perm := range perms {
		if p, blocked := a.Blocked(perm); blocked {
			return p.BlockedError(perm)
		}
	}
	return nil
}

// adminRefusesLevel refuses a session level above the administrator's.
func (s *server) adminRefusesLevel(level string) error {
	if p, above := s.currentAdmin().LevelAbove(level); above {
		return p.LevelError(level)
	}
	return nil
}
