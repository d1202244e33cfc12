package runs

import (
	"context"
	"net"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/shell"
)

// Programs is what an agent's shell runs programs of the system with,
// at a high session only (nil below: the shell runs none): the sandbox
// hides the host's data directory, and each connection a program opens
// is the agent's own, decided and recorded as its fetches are
// (agentfetch.Service.Connect: grant, networkAccess, the administrator's
// deniedHosts, allowedHosts, the policy). Without fetch a program has no
// network at all.
func Programs(dataDir string, fetch *agentfetch.Service, agentID, level, session string) *shell.Programs {
	if level != mediator.LevelHigh {
		return nil
	}
	p := &shell.Programs{Hide: []string{dataDir}}
	if fetch != nil {
		p.Connect = func(ctx context.Context, scheme, hostPort string) (net.Conn, error) {
			return fetch.Connect(ctx, agentfetch.Request{AgentID: agentID, SessionLevel: level, SessionID: session,
				Request: netproxy.Request{URL: scheme + "://" + hostPort + "/"}})
		}
	}
	return p
}
