package agentfetch

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// prepared is a request that passed every check before the Authorizer.
type prepared struct {
	op  mediator.Operation
	rec mediator.AgentRecord
	acl *netproxy.ACL
	// deny records a refusal before the policy: by names the rule that
	// refused, for the denial's audit record ("grant:network.fetch",
	// "acl:allowedHosts", ...).
	deny func(code mediator.Code, by, url, reason string) error
}

// Prepare runs the checks Fetch runs before the Authorizer (agent, grant,
// the request's shape, networkAccess, allowedHosts), recording any denial,
// and returns the operation the Authorizer would be asked about: its URL
// and host in their canonical form. A workflow decides its fetch tasks
// with it before their layer runs, so a prompt never shows a request the
// ACL would refuse anyway.
func (s *Service) Prepare(ctx context.Context, req Request) (mediator.Operation, error) {
	p, err := s.prepare(ctx, req)
	return p.op, err
}

func (s *Service) prepare(ctx context.Context, req Request) (prepared, error) {
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = "GET"
	}
	p := prepared{}
	p.deny = func(code mediator.Code, by, url, reason string) error {
		s.cfg.LogDenial(ctx, mediator.Denial{
			AgentID: req.AgentID, Permission: string(mediator.PermNetworkFetch), Code: code,
			Context: mediator.DenialContext{URL: url, Reason: reason, Method: method,
				Details: map[string]string{"operation": mediator.OpNetworkFetch, "decidedBy": by}},
		})
		return mediator.Recorded(fmt.Errorf("agent[%s] fetch: %w", clip(req.AgentID), mediator.Errorf(code, "%s", reason)))
	}
	if err := mediator.ValidAgentID(req.AgentID); err != nil {
		return p, p.deny(mediator.CodeUnknownAgent, "agent", req.URL, mediator.MessageOf(err))
	}
	rec, err := s.cfg.Store.Agent(ctx, req.AgentID)
	if err != nil {
		if mediator.CodeOf(err) == mediator.CodeUnknownAgent {
			return p, p.deny(mediator.CodeUnknownAgent, "agent", req.URL, fmt.Sprintf("agent %q is not installed", req.AgentID))
		}
		return p, err
	}
	p.rec = rec
	if d := s.cfg.Store.Check(ctx, req.AgentID, mediator.PermNetworkFetch); !d.Allowed {
		return p, p.deny(codeOr(d.Code), "grant:"+string(mediator.PermNetworkFetch), req.URL, d.Reason)
	}
	// What the fetch would refuse anyway (a method outside the table, a
	// body on GET, a forbidden header) is refused before anybody is asked,
	// so no prompt can show it and no "always allow" can remember it.
	if d := s.cfg.Fetcher.CheckRequest(req.Request); !d.Allowed {
		return p, p.deny(codeOr(d.Code), "request:fetch", req.URL, d.Reason)
	}
	if !rec.Profile.Capabilities.NetworkAccess {
		return p, p.deny(mediator.CodeNetworkDisabled, "capability:networkAccess", req.URL, "the agent's profile does not enable networkAccess")
	}
	var admin mediator.Admin
	if s.cfg.Admin != nil {
		admin = s.cfg.Admin()
	}
	denied, sources := admin.DeniedHosts()
	acl, err := s.acls.get(rec, denied)
	if err != nil {
		return p, p.deny(mediator.CodeInvalidAllowedHost, "acl:allowedHosts", req.URL, mediator.MessageOf(err))
	}
	p.acl = acl
	if entry, ok := acl.DenyEntry(req.URL); ok {
		for i, h := range denied {
			if "!"+h == entry {
				return p, p.deny(mediator.CodeAdminPolicy, "admin:deniedHosts@"+strings.ReplaceAll(sources[i], " ", "_"), req.URL,
					fmt.Sprintf("the administrator's policy denies %q (deniedHosts, %s), whatever the agent's allowedHosts say", h, sources[i]))
			}
		}
	}
	// The ACL is checked here, before the policy, so that a host the user
	// never allowed is refused without a prompt; Fetch checks it again on
	// the URL it actually sends, and on every redirect hop.
	target, d := acl.Check(req.URL)
	if !d.Allowed {
		return p, p.deny(codeOr(d.Code), "acl:allowedHosts", req.URL, d.Reason)
	}
	p.op = mediator.Operation{
		AgentID: req.AgentID, Permission: mediator.PermNetworkFetch, Name: mediator.OpNetworkFetch,
		Method: method, URL: target.URL.String(), Host: target.Host, TextLength: len(req.Body),
		SessionLevel: req.SessionLevel, SessionID: req.SessionID,
	}
	return p, nil
}
