package store

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestRevocationSticks: a permission the user revoked stays revoked when
// the same profile and module are installed again, and is denied with
// revoked_by_user saying how to grant it back; a changed module or profile
// is a new consent that grants it again; a grant or an uninstall ends it.
func TestRevocationSticks(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	fetch := mediator.PermNetworkFetch
	p := testProfile("fetcher", []mediator.Permission{fetch, mediator.PermConsoleLog}, []mediator.Permission{mediator.PermPageRead})
	mod1, err := s.PutModule(ctx, []byte("\x00asm\x01\x00\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	mod2, err := s.PutModule(ctx, []byte("\x00asm\x01\x00\x00\x00\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := s.InstallAgent(ctx, p, mod1)
	if err != nil {
		t.Fatal(err)
	}
	grantedAt := grantTime(rec, fetch)
	if ok, err := s.Revoke(ctx, "fetcher", fetch); err != nil || !ok {
		t.Fatalf("Revoke = %v, %v", ok, err)
	}
	wantRevoked := func(when string) {
		t.Helper()
		d := s.Check(ctx, "fetcher", fetch)
		if d.Allowed || d.Code != mediator.CodeRevokedByUser || !strings.Contains(d.Reason, "nmhost grant fetcher network.fetch") {
			t.Fatalf("%s: Check = %+v; want revoked_by_user naming `nmhost grant fetcher network.fetch`", when, d)
		}
		if f, err := s.DecisionFacts(ctx, "fetcher", fetch, mediator.OpNetworkFetch, ""); err != nil || f.Granted || !f.Revoked {
			t.Fatalf("%s: DecisionFacts = %+v, %v; want revoked", when, f, err)
		}
		op := mediator.Operation{AgentID: "fetcher", Name: mediator.OpNetworkFetch, URL: "https://example.com/"}
		if d := mediator.NewPolicy(s, mediator.PolicyOptions{}).Decide(ctx, op); d.Code != mediator.CodeRevokedByUser || !strings.Contains(d.Reason, "nmhost grant fetcher network.fetch") {
			t.Fatalf("%s: policy decided %+v; want revoked_by_user", when, d)
		}
		if got, _ := s.Revocations(ctx, "fetcher"); !slices.Equal(got, []mediator.Permission{fetch}) {
			t.Fatalf("%s: Revocations = %v", when, got)
		}
		if rec, err := s.Agent(ctx, "fetcher"); err != nil || !slices.Equal(rec.Revoked, []mediator.Permission{fetch}) {
			t.Fatalf("%s: Agent().Revoked = %v, %v", when, rec.Revoked, err)
		}
		if all, err := s.ListAgents(ctx); err != nil || len(all) != 1 || !slices.Equal(all[0].Revoked, []mediator.Permission{fetch}) {
			t.Fatalf("%s: ListAgents = %+v, %v", when, all, err)
		}
	}
	wantRevoked("after revoke")

	// The same profile and module, with the module brought again or not.
	for _, sum := range []string{mod1, ""} {
		if rec, err = s.InstallAgent(ctx, p, sum); err != nil {
			t.Fatal(err)
		}
		if grantTime(rec, fetch) != 0 {
			t.Fatalf("re-install (module %q) granted %s again", sum, fetch)
		}
		wantRevoked("after re-installing the same agent")
	}
	// A policy decision says the same.
	pol := mediator.NewPolicy(s, mediator.PolicyOptions{})
	d := pol.Decide(ctx, mediator.Operation{AgentID: "fetcher", Name: mediator.OpNetworkFetch, Method: "GET", URL: "https://example.com/"})
	if d.Allowed || d.Code != mediator.CodeRevokedByUser || d.DecidedBy != "grant:network.fetch" {
		t.Fatalf("Decide = %+v; want revoked_by_user decided by grant:network.fetch", d)
	}

	// Another module is a new consent: granted again, with a new time.
	if rec, err = s.InstallAgent(ctx, p, mod2); err != nil {
		t.Fatal(err)
	}
	if g := grantTime(rec, fetch); g == 0 || g <= grantedAt {
		t.Fatalf("a changed module did not grant %s again (grantedAt %d, first %d)", fetch, g, grantedAt)
	}
	if got, _ := s.Revocations(ctx, "fetcher"); len(got) != 0 {
		t.Fatalf("revocations after a changed module: %v", got)
	}

	// So is another profile.
	if _, err := s.Revoke(ctx, "fetcher", fetch); err != nil {
		t.Fatal(err)
	}
	p2 := p
	p2.Description = "now with a description"
	if rec, err = s.InstallAgent(ctx, p2, ""); err != nil {
		t.Fatal(err)
	}
	if grantTime(rec, fetch) == 0 {
		t.Fatal("a changed profile did not grant the revoked permission again")
	}

	// A grant by the user ends the revocation.
	if _, err := s.Revoke(ctx, "fetcher", fetch); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grant(ctx, "fetcher", fetch); err != nil {
		t.Fatal(err)
	}
	if d := s.Check(ctx, "fetcher", fetch); !d.Allowed {
		t.Fatalf("after grant: %+v", d)
	}
	if got, _ := s.Revocations(ctx, "fetcher"); len(got) != 0 {
		t.Fatalf("revocations after grant: %v", got)
	}

	// An optional permission revoked is remembered; one never asked for is not.
	if _, err := s.Revoke(ctx, "fetcher", mediator.PermPageRead); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revoke(ctx, "fetcher", mediator.PermClipboardRead); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Revocations(ctx, "fetcher"); !slices.Equal(got, []mediator.Permission{mediator.PermPageRead}) {
		t.Fatalf("revocations = %v; want only page.read", got)
	}
	if d := s.Check(ctx, "fetcher", mediator.PermClipboardRead); d.Code != mediator.CodePermissionNotGranted {
		t.Fatalf("never asked for: %+v", d)
	}

	// Uninstalling forgets everything; a new install starts fresh.
	if _, err := s.Revoke(ctx, "fetcher", fetch); err != nil {
		t.Fatal(err)
	}
	if err := s.UninstallAgent(ctx, "fetcher"); err != nil {
		t.Fatal(err)
	}
	if rec, err = s.InstallAgent(ctx, p2, ""); err != nil {
		t.Fatal(err)
	}
	if grantTime(rec, fetch) == 0 {
		t.Fatal("an install after uninstall kept the old revocation")
	}
}

// TestRevocationForgottenWhenNoLongerAsked: a profile that stops asking for
// a revoked permission drops the revocation, so asking again later is a
// fresh request.
func TestRevocationForgottenWhenNoLongerAsked(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	with := testProfile("a", []mediator.Permission{mediator.PermConsoleLog, mediator.PermPageRead}, nil)
	without := testProfile("a", []mediator.Permission{mediator.PermConsoleLog}, nil)
	if _, err := s.InstallAgent(ctx, with, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Revoke(ctx, "a", mediator.PermPageRead); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InstallAgent(ctx, without, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Revocations(ctx, "a"); len(got) != 0 {
		t.Fatalf("revocations = %v; want none", got)
	}
}

func grantTime(rec mediator.AgentRecord, perm mediator.Permission) int64 {
	for _, g := range rec.Grants {
		if g.Permission == perm {
			return g.GrantedAt
		}
	}
	return 0
}
