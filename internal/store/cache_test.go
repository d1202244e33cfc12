package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// cachedFixture installs agent "c" holding network.fetch, page.read (read-only
// DOM access) and console.log.
func cachedFixture(t *testing.T) (*Store, *mediator.Policy, string) {
	return cachedFixtureMode(t, true)
}

// cachedFixtureMode is cachedFixture with the version read from the
// WAL-index header (mapped) or from PRAGMA data_version alone.
func cachedFixtureMode(t *testing.T, mapped bool) (*Store, *mediator.Policy, string) {
	t.Helper()
	dir := freshDir(t)
	s := openTestStore(t, dir)
	s.cache.noMap = !mapped
	p := testProfile("c", []mediator.Permission{mediator.PermNetworkFetch, mediator.PermPageRead, mediator.PermConsoleLog}, nil)
	p.Capabilities.NetworkAccess, p.Capabilities.DOMAccess = true, mediator.DOMReadOnly
	if err := p.Normalize(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InstallAgent(context.Background(), p, ""); err != nil {
		t.Fatal(err)
	}
	return s, mediator.NewPolicy(s, mediator.PolicyOptions{}), dir
}

var cachedFetch = mediator.Operation{AgentID: "c", Name: mediator.OpNetworkFetch, Method: "GET", URL: "https://example.com/", Host: "example.com"}

// TestDecisionsReadFromMemory: repeated decisions read the agent once, and
// every way the facts can change is seen by the very next decision.
func TestDecisionsReadFromMemory(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, s *Store, dir string)
		want   mediator.Code
	}{
		{"revoke through the same Store", func(t *testing.T, s *Store, _ string) {
			if _, err := s.Revoke(ctx, "c", mediator.PermNetworkFetch); err != nil {
				t.Fatal(err)
			}
		}, mediator.CodeRevokedByUser},
		{"always-block through the same Store", func(t *testing.T, s *Store, _ string) {
			if _, err := s.SetPreference(ctx, mediator.Preference{AgentID: "c", Operation: mediator.OpNetworkFetch,
				Target: "GET https://example.com:443", Answer: mediator.AnswerAlwaysBlock}); err != nil {
				t.Fatal(err)
			}
		}, mediator.CodeBlockedByUser},
		{"uninstall through the same Store", func(t *testing.T, s *Store, _ string) {
			if err := s.UninstallAgent(ctx, "c"); err != nil {
				t.Fatal(err)
			}
		}, mediator.CodeUnknownAgent},
		// Hostile: the grant row removed behind the Store's back, by a
		// connection it knows nothing of.
		{"grant deleted by another connection", func(t *testing.T, _ *Store, dir string) {
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFileName))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`DELETE FROM grants WHERE agent_id = 'c' AND permission = 'network.fetch'`); err != nil {
				t.Fatal(err)
			}
		}, mediator.CodePermissionNotGranted},
	}
	for _, mode := range versionModes {
		for _, c := range cases {
			t.Run(mode.name+"/"+c.name, func(t *testing.T) {
				testCachedChange(t, mode.mapped, c.change, c.want)
			})
		}
	}
}

// versionModes are the two ways a Store learns of other commits.
var versionModes = []struct {
	name   string
	mapped bool
}{{"wal index", true}, {"data_version", false}}

func testCachedChange(t *testing.T, mapped bool, change func(t *testing.T, s *Store, dir string), want mediator.Code) {
	ctx := context.Background()
	s, pol, dir := cachedFixtureMode(t, mapped)
	for range 3 {
		if d := pol.Decide(ctx, cachedFetch); d.Code != mediator.CodeAllowed {
			t.Fatalf("before: %+v", d)
		}
		if d := s.Check(ctx, "c", mediator.PermNetworkFetch); !d.Allowed {
			t.Fatalf("before: %+v", d)
		}
	}
	if n := s.cache.reads.Load(); n != 1 {
		t.Fatalf("6 decisions read the agent %d times; want once", n)
	}
	s.cache.walmu.RLock()
	isMapped := s.cache.wal != nil
	s.cache.walmu.RUnlock()
	if isMapped != (mapped && walIndexMapped) {
		t.Fatalf("WAL index mapped: %v; want %v", isMapped, mapped && walIndexMapped)
	}
	change(t, s, dir)
	if d := pol.Decide(ctx, cachedFetch); d.Code != want {
		t.Fatalf("Decide after the change: %+v; want %s", d, want)
	}
	if want != mediator.CodeBlockedByUser {
		if d := s.Check(ctx, "c", mediator.PermNetworkFetch); d.Allowed || d.Code != want {
			t.Fatalf("Check after the change: %+v; want %s", d, want)
		}
	}
}

// TestRevokeInAnotherProcessEndsCachedDecisions: a real second process
// revokes a grant this process's cache holds; the next decision here is
// revoked_by_user, and what Agent returns says so too.
func TestRevokeInAnotherProcessEndsCachedDecisions(t *testing.T) {
	for _, mode := range versionModes {
		t.Run(mode.name, func(t *testing.T) { testRevokeInAnotherProcess(t, mode.mapped) })
	}
}

func testRevokeInAnotherProcess(t *testing.T, mapped bool) {
	ctx := context.Background()
	s, pol, dir := cachedFixtureMode(t, mapped)
	if d := pol.Decide(ctx, cachedFetch); d.Code != mediator.CodeAllowed {
		t.Fatalf("before: %+v", d)
	}
	if d := s.Check(ctx, "c", mediator.PermNetworkFetch); !d.Allowed {
		t.Fatalf("before: %+v", d)
	}
	out, err := helperCmd(t, "revoke", dir, "c network.fetch").Output()
	if err != nil || !strings.Contains(string(out), "ACK revoked") {
		t.Fatalf("revoking process: %q %v", out, err)
	}
	if d := pol.Decide(ctx, cachedFetch); d.Code != mediator.CodeRevokedByUser {
		t.Fatalf("Decide after the other process revoked: %+v; want revoked_by_user", d)
	}
	if d := s.Check(ctx, "c", mediator.PermNetworkFetch); d.Code != mediator.CodeRevokedByUser {
		t.Fatalf("Check after the other process revoked: %+v; want revoked_by_user", d)
	}
	rec, err := s.Agent(ctx, "c")
	if err != nil || len(rec.Revoked) != 1 || rec.Revoked[0] != mediator.PermNetworkFetch {
		t.Fatalf("Agent after the revoke: %+v %v", rec, err)
	}
	// The read-only caller cannot change what the cache holds.
	rec.Grants = append(rec.Grants[:0], mediator.Grant{AgentID: "c", Permission: mediator.PermNetworkFetch})
	if d := s.Check(ctx, "c", mediator.PermNetworkFetch); d.Code != mediator.CodeRevokedByUser {
		t.Fatalf("Check after a caller edited its copy: %+v", d)
	}
}

// TestAuditAppendsKeepTheCache: the commits every decision causes (audit
// records, denials) leave what decisions read in memory; a change to the
// facts made right after them is still seen at once.
func TestAuditAppendsKeepTheCache(t *testing.T) {
	ctx := context.Background()
	for _, mode := range versionModes {
		t.Run(mode.name, func(t *testing.T) {
			s, pol, dir := cachedFixtureMode(t, mode.mapped)
			for range 5 {
				done, err := pol.Authorize(ctx, cachedFetch)
				if err != nil {
					t.Fatal(err)
				}
				done(nil)
				if _, err := s.LogDenial(ctx, mediator.Denial{AgentID: "c", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed}); err != nil {
					t.Fatal(err)
				}
			}
			if n := s.cache.reads.Load(); n != 1 {
				t.Fatalf("5 decisions between appends read the agent %d times; want once", n)
			}
			db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, DBFileName))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`DELETE FROM grants WHERE agent_id = 'c' AND permission = 'network.fetch'`); err != nil {
				t.Fatal(err)
			}
			if d := pol.Decide(ctx, cachedFetch); d.Code != mediator.CodePermissionNotGranted {
				t.Fatalf("Decide after the grant was deleted: %+v", d)
			}
		})
	}
}
