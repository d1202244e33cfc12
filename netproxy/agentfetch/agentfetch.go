package agentfetch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// Records is what the pipeline reads about agents and where it records
// the denials it decides itself; the store implements it.
type Records interface {
	mediator.AgentReader
	mediator.DenialLogger
}

// Config wires a Service. Store, Fetcher and Authorizer are required.
type Config struct {
	Store   Records
	Fetcher *netproxy.Fetcher
	// Authorizer decides the operation once the grant, capability and ACL
	// checks have passed: safety class, remembered answers, prompts, audit.
	Authorizer mediator.Authorizer
	// LogDenial records the denials this package decides itself (grant,
	// capability, ACL, redirect hops). Default: Store.LogDenial with the
	// layer "host", written even when the request's context is done.
	LogDenial func(ctx context.Context, d mediator.Denial)
	// Admin is the administrator's rules: its deniedHosts are deny
	// entries ahead of every profile's allowedHosts, for the first URL,
	// every redirect hop and every address a name resolves to. nil: none.
	Admin func() mediator.Admin
}

// Service performs mediated fetches. It is safe for concurrent use.
type Service struct {
	cfg  Config
	acls aclCache
}

// New returns a Service, or an error when a required part is missing:
// there is no unmediated mode.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil || cfg.Fetcher == nil || cfg.Authorizer == nil {
		return nil, errors.New("agentfetch: Config needs a Store, a Fetcher and an Authorizer")
	}
	if cfg.LogDenial == nil {
		store := cfg.Store
		cfg.LogDenial = func(ctx context.Context, d mediator.Denial) {
			if d.Context.Layer == "" {
				d.Context.Layer = "host"
			}
			_, _ = store.LogDenial(context.WithoutCancel(ctx), d)
		}
	}
	return &Service{cfg: cfg}, nil
}

// Request is one fetch asked for by an agent.
type Request struct {
	AgentID      string
	SessionLevel string // the run's session level; "" is the default
	SessionID    string // the run's session, for answers given for it; "" when none
	netproxy.Request
	// Authorizer decides this request instead of the Service's (a
	// workflow's pre-approved task); nil: the Service's.
	Authorizer mediator.Authorizer
}

// Fetch runs the checks in order (agent, grant, networkAccess, allowedHosts,
// then the Authorizer) and, when all pass, the request itself. Every denial
// is recorded before Fetch returns it; nothing is sent for a denied request.
func (s *Service) Fetch(ctx context.Context, req Request) (*netproxy.Response, error) {
	p, err := s.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	op, rec, acl := p.op, p.rec, p.acl
	auth := s.cfg.Authorizer
	if req.Authorizer != nil {
		auth = req.Authorizer
	}
	deny := p.deny
	done, err := auth.Authorize(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("agent[%s] fetch: %w", clip(req.AgentID), err)
	}
	// Every redirect hop is a new request to a new target: it is decided
	// (and recorded) like the first, so "always allow POST to A" never
	// carries the body to B, whatever A answers. Each allowed hop's record
	// gets the fetch's outcome.
	dones := []func(error){done}
	req.Request.DecideHop = func(ctx context.Context, hop netproxy.Hop) error {
		hopOp := op
		hopOp.Method, hopOp.URL, hopOp.Host, hopOp.TextLength, hopOp.Hop = hop.Method, hop.URL, hop.Host, hop.BodyLen, hop.N
		hopDone, err := auth.Authorize(ctx, hopOp)
		if err != nil {
			return fmt.Errorf("redirect %d: %w", hop.N, err)
		}
		dones = append(dones, hopDone)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, rec.Profile.Capabilities.Timeout())
	defer cancel()
	resp, err := s.cfg.Fetcher.Fetch(ctx, acl, req.Request)
	for _, d := range dones {
		d(err)
	}
	if err != nil {
		var de *netproxy.DenyError
		if errors.As(err, &de) {
			return nil, deny(de.Code, "acl:allowedHosts", de.URL, de.Reason)
		}
		return nil, fmt.Errorf("agent[%s] fetch: %w", clip(req.AgentID), err)
	}
	return resp, nil
}

// Forget drops the cached ACL of an agent (after uninstall).
func (s *Service) Forget(agentID string) { s.acls.forget(agentID) }

func codeOr(c mediator.Code) mediator.Code {
	if c == "" || c == mediator.CodeAllowed {
		return mediator.CodeInternal
	}
	return c
}

// clip bounds an agent id taken from a request before it enters an error.
func clip(s string) string { return mediator.Truncate(s, mediator.MaxAgentIDLen) }

// aclCache keeps each agent's parsed ACL until its profile changes, so a
// 10,000-entry list is parsed once, not on every fetch.
type aclCache struct {
	mu sync.Mutex
	m  map[string]aclEntry
}

type aclEntry struct {
	hosts []string
	acl   *netproxy.ACL
}

func (c *aclCache) get(rec mediator.AgentRecord, adminDenied []string) (*netproxy.ACL, error) {
	id := rec.Profile.AgentID
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	// Compared by content, not by a timestamp: another host process may
	// have re-installed the agent within the same millisecond. The
	// administrator's denied hosts come first, as deny entries: a deny
	// entry wins over every allow, in any order.
	hosts := rec.Profile.Capabilities.AllowedHosts
	if len(adminDenied) > 0 {
		all := make([]string, 0, len(adminDenied)+len(hosts))
		for _, h := range adminDenied {
			all = append(all, "!"+h)
		}
		hosts = append(all, hosts...)
	}
	if ok && slices.Equal(e.hosts, hosts) {
		return e.acl, nil
	}
	acl, err := netproxy.NewACL(hosts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]aclEntry{}
	}
	c.m[id] = aclEntry{slices.Clone(hosts), acl}
	c.mu.Unlock()
	return acl, nil
}

func (c *aclCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}
