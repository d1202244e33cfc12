package host

import (
	"context"
	"encoding/json"

	"github.com/agentgate/nmhost/internal/adminpolicy"
	"github.com/agentgate/nmhost/mediator"
)

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
	var r adminReply
	r.set(s.app.SetManaged(managed).Policies())
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
