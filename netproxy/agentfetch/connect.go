package agentfetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/agentgate/nmhost/netproxy"
)

// Connect opens one connection for a program an agent runs in the
// sandbox (a high session's shell): req.URL names the target as
// "https://HOST:PORT/" (a CONNECT tunnel) or "http://HOST:PORT/" (a
// plain request the sandbox's proxy forwards). It takes a fetch's path:
// agent, grant, networkAccess, the administrator's deniedHosts,
// allowedHosts, then the Authorizer, which records the decision; and it
// dials through the Fetcher's checked dial. The connection is decided
// as a POST to the target, whatever the program sends: a tunnel carries
// data both ways, so it is never a read-only request. Every denial is
// recorded before Connect returns it; the decision's executed record
// gets the dial's outcome.
func (s *Service) Connect(ctx context.Context, req Request) (net.Conn, error) {
	req.Method, req.Headers, req.Body = "POST", nil, nil
	if !strings.HasSuffix(req.URL, "/") || strings.Count(req.URL, "/") != 3 {
		return nil, fmt.Errorf("agentfetch: Connect takes scheme://host:port/, not %q", clip(req.URL))
	}
	p, err := s.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	auth := s.cfg.Authorizer
	if req.Authorizer != nil {
		auth = req.Authorizer
	}
	done, err := auth.Authorize(ctx, p.op)
	if err != nil {
		return nil, fmt.Errorf("agent[%s] connect: %w", clip(req.AgentID), err)
	}
	target, d := p.acl.Check(req.URL)
	if !d.Allowed {
		// prepare checked it; a second look cannot differ, but a denial
		// is never dialled.
		done(d.Err())
		return nil, p.deny(codeOr(d.Code), "acl:allowedHosts", req.URL, d.Reason)
	}
	c, err := s.cfg.Fetcher.DialTarget(ctx, p.acl, target)
	done(err)
	if err != nil {
		var de *netproxy.DenyError
		if errors.As(err, &de) {
			return nil, p.deny(de.Code, "acl:allowedHosts", req.URL, de.Reason)
		}
		return nil, fmt.Errorf("agent[%s] connect: %w", clip(req.AgentID), err)
	}
	return c, nil
}
