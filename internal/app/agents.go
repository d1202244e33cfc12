package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/pyagent"
)

// MaxModuleBytes bounds an agent's module (a WebAssembly binary, or a
// Python agent's source).
const MaxModuleBytes = 32 << 20

var wasmMagic = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

// The operations' names in the denial log and audit trail: the same
// whichever front end asked (the native host's message names).
const (
	opInstall    = "install-agent"
	opGrant      = "grant"
	opRevoke     = "revoke"
	opSetSession = "set-session"
)

// Install installs (or re-installs) an agent with its module, which may
// be nil. A profile that requires what the administrator blocks could
// never run as it asks: it is refused now, saying whose rule it is, and
// the refusal is recorded.
func (a *App) Install(ctx context.Context, prof mediator.Profile, module []byte) (mediator.AgentRecord, error) {
	if err := a.Admin().RefuseGrant(prof.Permissions.Required...); err != nil {
		return mediator.AgentRecord{}, a.refused(ctx, opInstall, prof.AgentID, "", err)
	}
	// The ACL is validated now so a bad entry is refused at install, with
	// its canonical form, rather than silently never matching later.
	if _, err := netproxy.NewACL(prof.Capabilities.AllowedHosts); err != nil {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", prof.AgentID, err)
	}
	var sha string
	if module != nil {
		if len(module) > MaxModuleBytes {
			return mediator.AgentRecord{}, mediator.Errorf(mediator.CodeTooLarge, "module is larger than %d bytes", MaxModuleBytes)
		}
		if prof.IsPython() {
			if err := pyagent.ValidSource(module); err != nil {
				return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", prof.AgentID, err)
			}
		} else if !bytes.HasPrefix(module, wasmMagic) {
			return mediator.AgentRecord{}, mediator.Errorf(mediator.CodeBadRequest, "module is not a WebAssembly binary (version 1)")
		}
	}
	if module != nil && prof.ModuleSHA256 != "" {
		// The pin first: a module that is not the one the profile names
		// is refused as that, before anything reads it.
		if sum := sha256.Sum256(module); hex.EncodeToString(sum[:]) != prof.ModuleSHA256 {
			return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", prof.AgentID, mediator.Errorf(mediator.CodeHashMismatch,
				"the module's sha256 is %s but the profile pins %s", hex.EncodeToString(sum[:]), prof.ModuleSHA256))
		}
	}
	prof, err := withPermissionSet(prof, module)
	if err != nil {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", prof.AgentID, err)
	}
	if module != nil {
		if sha, err = a.st.PutModule(ctx, module); err != nil {
			return mediator.AgentRecord{}, fmt.Errorf("agent[%s] module: %w", prof.AgentID, err)
		}
	}
	rec, err := a.st.InstallAgent(ctx, prof, sha)
	if err != nil {
		return mediator.AgentRecord{}, fmt.Errorf("agent[%s]: %w", prof.AgentID, err)
	}
	return rec, nil
}

// Grant gives agent perm. A permission the administrator blocks is
// refused and recorded, never stored: it could not take effect, and a
// grant on the record that never applies misleads whoever reads it.
func (a *App) Grant(ctx context.Context, agent string, perm mediator.Permission) (mediator.Grant, error) {
	if err := mediator.ValidAgentID(agent); err != nil {
		return mediator.Grant{}, err
	}
	if err := a.Admin().RefuseGrant(perm); err != nil {
		return mediator.Grant{}, a.refused(ctx, opGrant, agent, perm, err)
	}
	g, err := a.st.Grant(ctx, agent, perm)
	if err != nil {
		return mediator.Grant{}, fmt.Errorf("agent[%s] grant[%s]: %w", agent, perm, err)
	}
	return g, nil
}

// Revoke takes perm back from agent; it reports whether agent held it.
// A revocation sticks across re-installs of the same agent.
func (a *App) Revoke(ctx context.Context, agent string, perm mediator.Permission) (bool, error) {
	if err := mediator.ValidAgentID(agent); err != nil {
		return false, err
	}
	existed, err := a.st.Revoke(ctx, agent, perm)
	if err != nil {
		return false, fmt.Errorf("agent[%s] revoke[%s]: %w", agent, perm, err)
	}
	return existed, nil
}

// refused records a refusal of one of the core's operations in the
// denial log (with its audit record), then returns err marked recorded,
// so no front end records it a second time.
func (a *App) refused(ctx context.Context, op, agent string, perm mediator.Permission, err error) error {
	a.LogDenial(ctx, a.layer, mediator.Denial{
		AgentID: mediator.Truncate(agent, mediator.MaxAgentIDLen), Permission: mediator.Truncate(string(perm), 64), Code: mediator.CodeOf(err),
		Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Method: op, Origin: a.origin,
			Details: map[string]string{"operation": op, "decidedBy": "request:" + op}},
	})
	return mediator.Recorded(err)
}
