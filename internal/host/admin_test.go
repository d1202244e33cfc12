package host

import (
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestAdminPolicyInHostMode: the machine's policy refuses what it blocks
// (a grant, an install that requires it, a session above its level); the
// extension's managed storage adds rules (a denied host, refused before
// anything reaches it) and cannot take the file's away.
func TestAdminPolicyInHostMode(t *testing.T) {
	can := newCanary(t)
	h := newHarness(t, true, withAdmin(t, mediator.AdminPolicy{BlockedPermissions: []mediator.Permission{mediator.PermClipboardRead}, MaxSessionLevel: mediator.LevelMedium,
		Source: "admin file /etc/nmhost/policy.json"}))
	h.install("reader", []string{"network.fetch", "console.log"}, true, hostPort(can.URL))
	h.wantCode(h.call("grant", map[string]any{"agentId": "reader", "permission": "clipboard.read"}), mediator.CodeAdminPolicy)
	h.wantCode(h.call("install-agent", map[string]any{"profile": map[string]any{"agentId": "clipper",
		"permissions": map[string]any{"required": []string{"clipboard.read"}}}}), mediator.CodeAdminPolicy)
	h.wantCode(h.call("set-session", map[string]any{"sessionId": "s", "level": "high"}), mediator.CodeAdminPolicy)
	h.mustOK("set-session", map[string]any{"sessionId": "s", "level": "low"}, nil)

	// Before managed storage speaks, the agent reaches its listed host.
	h.mustOK("network-fetch", map[string]any{"agentId": "reader", "url": can.URL + "/before"}, nil)
	h.mustOK("managed-policy", map[string]any{"policy": map[string]any{"deniedHosts": []string{hostPort(can.URL)}}}, nil)
	before := can.Hits.Load()
	h.wantCode(h.call("network-fetch", map[string]any{"agentId": "reader", "url": can.URL + "/after"}), mediator.CodeAdminPolicy)
	if can.Hits.Load() != before {
		t.Fatal("a host managed storage denies was reached")
	}
	// An empty managed policy, or a hostile one, takes nothing away: the
	// file's rules stay; a malformed one is refused.
	h.mustOK("managed-policy", map[string]any{"policy": map[string]any{}}, nil)
	h.wantCode(h.call("grant", map[string]any{"agentId": "reader", "permission": "clipboard.read"}), mediator.CodeAdminPolicy)
	h.wantCode(h.call("managed-policy", map[string]any{"policy": map[string]any{"maxSessionLevel": "root"}}), mediator.CodeInvalidLevel)
	h.wantCode(h.call("managed-policy", map[string]any{"policy": map[string]any{"blockedPermissions": []string{}, "BlockedPermissions": []string{}}}), mediator.CodeBadRequest)
}
