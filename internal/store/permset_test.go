package store

import (
	"context"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestPermissionSetBoundsGrants: the set is the ceiling whoever grants.
// An agent re-installed under a smaller set keeps the user's grant of an
// optional permission in the table, but the grant command refuses to add
// one outside the set and the policy denies its use with
// permission_outside_set, naming the set that decided.
func TestPermissionSetBoundsGrants(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	install := func(set mediator.PermissionSet) {
		t.Helper()
		p := mediator.Profile{AgentID: "bounded", PermissionSet: set,
			Permissions:  mediator.Permissions{Optional: []mediator.Permission{mediator.PermNetworkFetch, mediator.PermPageRead}},
			Capabilities: mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{"example.com"}}}
		if err := p.Normalize(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.InstallAgent(ctx, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	install(mediator.SetTrusted)
	if _, err := s.Grant(ctx, "bounded", mediator.PermNetworkFetch); err != nil {
		t.Fatal(err)
	}
	policy := mediator.NewPolicy(s, mediator.PolicyOptions{})
	fetch := mediator.Operation{AgentID: "bounded", Name: mediator.OpNetworkFetch, Method: "GET", URL: "https://example.com/"}
	if d := policy.Decide(ctx, fetch); d.Code != mediator.CodeAllowed {
		t.Fatalf("under trusted: %+v", d)
	}

	install(mediator.SetReadonly)
	d := policy.Decide(ctx, fetch)
	if d.Allowed || d.Code != mediator.CodePermissionOutsideSet || d.DecidedBy != "set:readonly" {
		t.Fatalf("under readonly: %+v", d)
	}
	if _, err := s.Grant(ctx, "bounded", mediator.PermNetworkFetch); mediator.CodeOf(err) != mediator.CodePermissionOutsideSet {
		t.Fatalf("grant outside the set: %v", err)
	}
	if _, err := s.Grant(ctx, "bounded", mediator.PermPageRead); err != nil {
		t.Fatalf("grant inside the set: %v", err)
	}
	// Authorize records the refusal like any other decision.
	if _, err := policy.Authorize(ctx, fetch); mediator.CodeOf(err) != mediator.CodePermissionOutsideSet {
		t.Fatalf("authorize: %v", err)
	}
	page, err := s.ListDenials(ctx, DenialFilter{AgentID: "bounded"})
	if err != nil || len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodePermissionOutsideSet {
		t.Fatalf("denial log: %v %+v", err, page.Denials)
	}
}
