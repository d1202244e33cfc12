package wasmhost

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// underSet is an agent record with every permission granted and set as
// its manual permission set, so only the set can refuse a link.
func underSet(id string, set mediator.PermissionSet, c mediator.Capabilities) mediator.AgentRecord {
	// The set's permissions are required, so installing the profile in
	// the store grants them (the policy reads the store's grants).
	rule, _ := mediator.SetRule(set)
	p := mediator.Profile{AgentID: id, PermissionSet: set, PermissionSource: mediator.SetSourceManual, Capabilities: c,
		Permissions: mediator.Permissions{Required: rule.Permissions, Optional: mediator.KnownPermissions()}}
	if err := p.Normalize(); err != nil {
		panic(err)
	}
	rec := mediator.AgentRecord{Profile: p}
	for _, perm := range mediator.KnownPermissions() {
		rec.Grants = append(rec.Grants, mediator.Grant{AgentID: id, Permission: perm})
	}
	return rec
}

// TestPermissionSetLinks is each set's row of the table at link time:
// every restricted API function, imported alone by a module, links under
// exactly the sets whose permissions cover it and is refused under the
// others with permission_outside_set, although the agent holds every grant.
func TestPermissionSetLinks(t *testing.T) {
	f := newFixture(t)
	// Every run has a workspace: shell links only with one.
	ws, err := workspace.Open(t.TempDir(), workspace.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, set := range mediator.PermissionSets() {
		rule, _ := mediator.SetRule(set)
		for _, h := range hostFuncs {
			t.Run(string(set)+"/"+h.name, func(t *testing.T) {
				rec := underSet("linker", set, mediator.Capabilities{})
				module := wmodule{imports: []wimport{importOf(h.name)}}.bytes()
				spec := f.spec(rec, module, "")
				spec.Workspace = ws
				res, err := sharedRuntime().Run(context.Background(), spec)
				if err != nil {
					t.Fatal(err)
				}
				want := mediator.Code("")
				if h.permission != "" && !rule.Allows(h.permission) {
					want = mediator.CodePermissionOutsideSet
				}
				if res.Code != want {
					t.Fatalf("code %q (%s); want %q", res.Code, res.Error, want)
				}
				if want != "" && (!strings.Contains(res.Error, "outside the agent's permission set "+string(set)) || len(res.Denials) != 1 || res.Denials[0].Code != want) {
					t.Fatalf("error %q denials %+v", res.Error, res.Denials)
				}
			})
		}
	}
}

// TestSetsOfferNoProcessSocketOrFile: trusted, like every set, links no
// WASI function that opens a socket or a process, or makes a link (a way
// to a file outside the workspace), whatever the grants: they are not in
// the runtime's subset at all. The workspace's own file functions reach
// only the workspace (TestGuestWorkspace).
func TestSetsOfferNoProcessSocketOrFile(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"sock_accept", "sock_recv", "sock_send", "sock_shutdown", "proc_raise", "path_symlink", "path_link", "fd_renumber"} {
		for _, set := range []mediator.PermissionSet{mediator.SetTrusted, mediator.SetMCPStandard, mediator.SetFilesystem} {
			t.Run(string(set)+"/"+name, func(t *testing.T) {
				module := wmodule{imports: []wimport{wasi(name, 0x7f)}}.bytes()
				res, err := sharedRuntime().Run(context.Background(), f.spec(underSet("walls", set, mediator.Capabilities{}), module, ""))
				if err != nil {
					t.Fatal(err)
				}
				if res.Code != mediator.CodeImportNotGranted || !strings.Contains(res.Error, "outside the WASI subset") {
					t.Fatalf("%s %q", res.Code, res.Error)
				}
			})
		}
	}
}

// TestFetchUnderSets: the same fetcher module, with network.fetch
// granted, is refused at link time under minimal (the canary is never
// reached) and fetches from its allowed host under network-api; runs of
// different sets follow each other on one runtime.
func TestFetchUnderSets(t *testing.T) {
	module, err := fetcherWasm()
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "pong")
	}))
	defer srv.Close()
	f := newFixture(t)
	caps := mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{strings.TrimPrefix(srv.URL, "http://")}}
	for _, tc := range []struct {
		set  mediator.PermissionSet
		code mediator.Code
		hits int64
	}{
		{mediator.SetMinimal, mediator.CodePermissionOutsideSet, 0},
		{mediator.SetReadonly, mediator.CodePermissionOutsideSet, 0},
		{mediator.SetNetworkAPI, "", 1},
		{mediator.SetMinimal, mediator.CodePermissionOutsideSet, 1},
		{mediator.SetTrusted, "", 2},
	} {
		// The policy reads the store's copy: install the same record there.
		rec := underSet("fetcher", tc.set, caps)
		if _, err := f.st.InstallAgent(context.Background(), rec.Profile, ""); err != nil {
			t.Fatal(err)
		}
		if rule, _ := mediator.SetRule(tc.set); rule.Fetch() {
			if _, err := f.st.Grant(context.Background(), "fetcher", mediator.PermNetworkFetch); err != nil {
				t.Fatal(err)
			}
		}
		res, err := sharedRuntime().Run(context.Background(), f.spec(rec, module, srv.URL+"/"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Code != tc.code || hits.Load() != tc.hits {
			t.Fatalf("%s: code %q (%s), %d hits; want %q, %d\n%s", tc.set, res.Code, res.Error, hits.Load(), tc.code, tc.hits, res.Output)
		}
		if tc.code == "" && !strings.Contains(res.Output, ": 200, 4 bytes: pong") {
			t.Fatalf("%s: output %q", tc.set, res.Output)
		}
	}
}

// TestSetEnvironment: a set's environment has its fixed names with the
// run's values and nothing of the host's.
func TestSetEnvironment(t *testing.T) {
	t.Setenv("NMHOST_CANARY_SECRET", "leaked")
	f := newFixture(t)
	rec := underSet("probe", mediator.SetTrusted, mediator.Capabilities{})
	spec := f.spec(rec, probeWasm, "env")
	spec.SessionLevel = "medium"
	res, err := sharedRuntime().Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "ok" || strings.TrimSpace(res.Output) != `env ["NMHOST_AGENT_ID=probe" "NMHOST_SESSION_LEVEL=medium"]` {
		t.Fatalf("%s %q", res.Status, res.Output)
	}
	for _, set := range []mediator.PermissionSet{mediator.SetMinimal, mediator.SetReadonly, mediator.SetFilesystem, mediator.SetNetworkAPI} {
		rule, _ := mediator.SetRule(set)
		if env := (runSet{rule: rule}).env("a", "high"); len(env) != 0 {
			t.Errorf("%s: env %v", set, env)
		}
	}
}

// TestPureWork: a module whose imports have no side effect runs under
// minimal with the shorter default timeout, whatever its profile's set.
func TestPureWork(t *testing.T) {
	f := newFixture(t)
	pure := wmodule{imports: []wimport{importOf("log")}}.bytes()
	info, err := validate(pure)
	if err != nil {
		t.Fatal(err)
	}
	ru := &run{spec: f.spec(underSet("pure", mediator.SetTrusted, mediator.Capabilities{}), pure, "")}
	rs := ru.chooseSet("sha", info.imports)
	if !rs.pure || rs.choice.Set != mediator.SetMinimal {
		t.Fatalf("%+v", rs)
	}
	for _, tc := range []struct{ profile, want int64 }{
		{mediator.DefaultTimeoutMS, mediator.PureTimeoutMS},
		{1_000, 1_000},
		{60_000, 60_000},
	} {
		if got := rs.timeout(mediator.Capabilities{ExecutionTimeout: tc.profile}); got != tc.want {
			t.Errorf("timeout(%d) = %d; want %d", tc.profile, got, tc.want)
		}
	}
	side := runSet{}
	if got := side.timeout(mediator.Capabilities{ExecutionTimeout: mediator.DefaultTimeoutMS}); got != mediator.DefaultTimeoutMS {
		t.Errorf("side-effecting work got %d", got)
	}
}

// TestSetFallbackIsLogged: a profile whose inferred set is below the
// threshold runs under minimal; a module that needs more is refused at
// link time as that fallback, with the confidence in the denial.
func TestSetFallbackIsLogged(t *testing.T) {
	f := newFixture(t)
	rec := underSet("unsure", mediator.SetTrusted, mediator.Capabilities{})
	rec.Profile.PermissionSource, rec.Profile.PermissionConfidence = mediator.SetSourceInferred, 0.5
	res, err := sharedRuntime().Run(context.Background(), f.spec(rec, wmodule{imports: []wimport{importOf("fetch")}}.bytes(), ""))
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != mediator.CodeSetFallback || len(res.Denials) != 1 {
		t.Fatalf("%s %q %+v", res.Code, res.Error, res.Denials)
	}
	d := res.Denials[0]
	if d.Code != mediator.CodeSetFallback || d.Context.Details["confidence"] != "0.50" || d.Context.Details["permissionSet"] != "minimal" ||
		!strings.Contains(d.Context.Reason, "inferred trusted with confidence 0.50, below 0.7; using minimal") {
		t.Fatalf("denial %+v", d)
	}
	// The same record, trusted by hand, links.
	rec.Profile.PermissionSource, rec.Profile.PermissionConfidence = mediator.SetSourceManual, 0
	if res, _ := sharedRuntime().Run(context.Background(), f.spec(rec, wmodule{imports: []wimport{importOf("fetch")}}.bytes(), "")); res.Code != "" {
		t.Fatalf("manual trusted: %s %s", res.Code, res.Error)
	}
}
