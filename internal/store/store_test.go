package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// fixedClock returns a clock that starts at a fixed instant and advances one
// millisecond per call, so timestamps are predictable and ordered. The
// committer reads it too (a queued outcome record), so the count is atomic.
func fixedClock() func() time.Time {
	t0 := time.UnixMilli(1_700_000_000_000)
	var n atomic.Int64
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

func openTestStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Now: fixedClock()})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testProfile(id string, required, optional []mediator.Permission) mediator.Profile {
	p := mediator.Profile{AgentID: id, Permissions: mediator.Permissions{Required: required, Optional: optional}}
	if err := p.Normalize(); err != nil {
		panic(err)
	}
	return p
}

func wantCode(t *testing.T, err error, want mediator.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil; want code %s", want)
	}
	if got := mediator.CodeOf(err); got != want {
		t.Fatalf("code = %s; want %s (err: %v)", got, want, err)
	}
}

func TestOpenCreatesPrivateFilesAndSchema(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s := openTestStore(t, dir)
	if _, err := s.InstallAgent(context.Background(), testProfile("a", nil, nil), ""); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, DBFileName): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %v; want %v", path, got, want)
		}
	}
	var mode, sync string
	var uv, fk int
	ctx := context.Background()
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&uv); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil {
		t.Fatal(err)
	}
	// synchronous=NORMAL: the default durability is "written", and the
	// group syncer fsyncs (sync.go; the strict one is in sync_test.go).
	if mode != "wal" || uv != schemaVersion || sync != "1" || fk != 1 {
		t.Errorf("journal_mode=%s user_version=%d synchronous=%s foreign_keys=%d; want wal %d 1 (NORMAL) 1", mode, uv, sync, fk, schemaVersion)
	}
	s.Close()

	// Reopening takes the fast path and sees the data.
	s2 := openTestStore(t, dir)
	if _, err := s2.Agent(ctx, "a"); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	dir := freshDir(t)
	s := openTestStore(t, dir)
	if _, err := s.db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s2, err := Open(dir, Options{}); err == nil {
		s2.Close()
		t.Fatal("Open of a schema from the future succeeded")
	}
}

func TestZeroDecisionDenies(t *testing.T) {
	var d mediator.Decision
	if d.Allowed {
		t.Fatal("zero Decision allows")
	}
	if mediator.CodeOf(d.Err()) != mediator.CodeInternal {
		t.Fatalf("zero Decision error code = %s; want internal_error", mediator.CodeOf(d.Err()))
	}
	if (mediator.Decision{Allowed: true}).Err() == nil {
		t.Fatal("a Decision with Allowed but no code must still deny")
	}
}

func TestCheckMatrix(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	if _, err := s.InstallAgent(ctx, testProfile("agent-1", []mediator.Permission{mediator.PermConsoleLog}, []mediator.Permission{mediator.PermNetworkFetch, mediator.PermPageRead}), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InstallAgent(ctx, testProfile("gone", []mediator.Permission{mediator.PermConsoleLog}, nil), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grant(ctx, "agent-1", mediator.PermNetworkFetch); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grant(ctx, "agent-1", mediator.PermPageRead); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Revoke(ctx, "agent-1", mediator.PermPageRead); err != nil || !ok {
		t.Fatalf("Revoke = %v, %v; want true, nil", ok, err)
	}
	if err := s.UninstallAgent(ctx, "gone"); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		agent   string
		perm    mediator.Permission
		allowed bool
		code    mediator.Code
	}{
		{"granted at install", "agent-1", mediator.PermConsoleLog, true, mediator.CodeAllowed},
		{"granted by user", "agent-1", mediator.PermNetworkFetch, true, mediator.CodeAllowed},
		{"revoked", "agent-1", mediator.PermPageRead, false, mediator.CodeRevokedByUser},
		{"requested never granted", "agent-1", mediator.PermClipboardRead, false, mediator.CodePermissionNotGranted},
		{"unknown agent", "nobody", mediator.PermConsoleLog, false, mediator.CodeUnknownAgent},
		{"invalid agent id", "../agent-1", mediator.PermConsoleLog, false, mediator.CodeUnknownAgent},
		{"empty agent id", "", mediator.PermConsoleLog, false, mediator.CodeUnknownAgent},
		{"unknown permission", "agent-1", "fs.write", false, mediator.CodeUnknownPermission},
		{"run is not a permission", "agent-1", "run", false, mediator.CodeUnknownPermission},
		{"ffi is not a permission", "agent-1", "ffi", false, mediator.CodeUnknownPermission},
		{"empty permission", "agent-1", "", false, mediator.CodeUnknownPermission},
		{"after uninstall", "gone", mediator.PermConsoleLog, false, mediator.CodeUnknownAgent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := s.Check(ctx, c.agent, c.perm)
			if d.Allowed != c.allowed || d.Code != c.code {
				t.Fatalf("Check(%q, %q) = %+v; want allowed=%v code=%s", c.agent, c.perm, d, c.allowed, c.code)
			}
			if d.Reason == "" {
				t.Error("decision has no reason sentence")
			}
			if (d.Err() == nil) != c.allowed {
				t.Errorf("Err() = %v disagrees with Allowed=%v", d.Err(), c.allowed)
			}
		})
	}

	t.Run("store error denies", func(t *testing.T) {
		s2 := openTestStore(t, freshDir(t))
		if _, err := s2.InstallAgent(ctx, testProfile("a", []mediator.Permission{mediator.PermConsoleLog}, nil), ""); err != nil {
			t.Fatal(err)
		}
		s2.Close()
		d := s2.Check(ctx, "a", mediator.PermConsoleLog)
		if d.Allowed || d.Code != mediator.CodeInternal {
			t.Fatalf("Check on a closed store = %+v; want deny internal_error", d)
		}
	})
	t.Run("cancelled context denies", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		d := s.Check(cctx, "agent-1", mediator.PermConsoleLog)
		if d.Allowed {
			t.Fatalf("Check with a cancelled context = %+v; want deny", d)
		}
	})
}

func permsOf(gs []mediator.Grant) map[mediator.Permission]string {
	m := map[mediator.Permission]string{}
	for _, g := range gs {
		m[g.Permission] = g.Source
	}
	return m
}

func TestInstallAgentReinstallRule(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	p1 := testProfile("agent", []mediator.Permission{mediator.PermConsoleLog, mediator.PermPageRead, mediator.PermNotifications}, []mediator.Permission{mediator.PermNetworkFetch, mediator.PermClipboardRead})
	rec, err := s.InstallAgent(ctx, p1, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[mediator.Permission]string{mediator.PermConsoleLog: mediator.SourceInstall, mediator.PermNotifications: mediator.SourceInstall, mediator.PermPageRead: mediator.SourceInstall}
	if got := permsOf(rec.Grants); !mapsEqual(got, want) {
		t.Fatalf("grants after install = %v; want %v", got, want)
	}
	installedAt := rec.InstalledAt
	for _, perm := range []mediator.Permission{mediator.PermNetworkFetch, mediator.PermClipboardRead} {
		if _, err := s.Grant(ctx, "agent", perm); err != nil {
			t.Fatal(err)
		}
	}
	// v2: page.read no longer asked for at all; notifications moved to
	// optional; network.fetch (user grant) moved to required; clipboard.read
	// (user grant) no longer asked for; page.write newly required.
	p2 := testProfile("agent", []mediator.Permission{mediator.PermConsoleLog, mediator.PermNetworkFetch, mediator.PermPageWrite}, []mediator.Permission{mediator.PermNotifications})
	rec, err = s.InstallAgent(ctx, p2, "")
	if err != nil {
		t.Fatal(err)
	}
	want = map[mediator.Permission]string{
		mediator.PermConsoleLog:   mediator.SourceInstall, // still required
		mediator.PermNetworkFetch: mediator.SourceUser,    // the user's grant keeps its source
		mediator.PermPageWrite:    mediator.SourceInstall, // newly required
		// page.read: install grant, no longer required -> removed
		// notifications: install grant, now only optional -> removed
		// clipboard.read: user grant, no longer requested -> removed
	}
	if got := permsOf(rec.Grants); !mapsEqual(got, want) {
		t.Fatalf("grants after re-install = %v; want %v", got, want)
	}
	if rec.InstalledAt != installedAt || rec.UpdatedAt <= installedAt {
		t.Errorf("installedAt %d -> %d, updatedAt %d; want installedAt kept and updatedAt later", installedAt, rec.InstalledAt, rec.UpdatedAt)
	}
	// v3: network.fetch back to optional: the user grant survives.
	p3 := testProfile("agent", []mediator.Permission{mediator.PermConsoleLog}, []mediator.Permission{mediator.PermNetworkFetch})
	if rec, err = s.InstallAgent(ctx, p3, ""); err != nil {
		t.Fatal(err)
	}
	want = map[mediator.Permission]string{mediator.PermConsoleLog: mediator.SourceInstall, mediator.PermNetworkFetch: mediator.SourceUser}
	if got := permsOf(rec.Grants); !mapsEqual(got, want) {
		t.Fatalf("grants after second re-install = %v; want %v", got, want)
	}
	// A revoked required permission stays revoked when the same profile is
	// installed again (revocations_test.go has the changed-profile cases).
	if _, err := s.Revoke(ctx, "agent", mediator.PermConsoleLog); err != nil {
		t.Fatal(err)
	}
	if rec, err = s.InstallAgent(ctx, p3, ""); err != nil {
		t.Fatal(err)
	}
	want = map[mediator.Permission]string{mediator.PermNetworkFetch: mediator.SourceUser}
	if got := permsOf(rec.Grants); !mapsEqual(got, want) {
		t.Fatalf("grants after re-install of the same profile with a revoked required permission = %v; want %v", got, want)
	}
	// The stored profile is the latest one.
	got, err := s.Agent(ctx, "agent")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Profile.Permissions.Required, p3.Permissions.Required) {
		t.Errorf("stored profile required = %v; want %v", got.Profile.Permissions.Required, p3.Permissions.Required)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestInstallAgentErrors(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	sha := strings.Repeat("ab", 32)
	other := strings.Repeat("cd", 32)
	pinned := testProfile("pinned", nil, nil)
	pinned.ModuleSHA256 = sha
	cases := []struct {
		name string
		p    mediator.Profile
		sha  string
		code mediator.Code
	}{
		{"hash mismatch", pinned, other, mediator.CodeHashMismatch},
		{"bad module hash", testProfile("x", nil, nil), "../../etc/passwd", mediator.CodeBadRequest},
		{"uppercase module hash", testProfile("x", nil, nil), strings.ToUpper(sha), mediator.CodeBadRequest},
		{"not normalised: bad id", mediator.Profile{AgentID: "../x"}, "", mediator.CodeInvalidProfile},
		{"not normalised: unknown permission", mediator.Profile{AgentID: "x", Permissions: mediator.Permissions{Required: []mediator.Permission{"ffi"}}}, "", mediator.CodeUnknownPermission},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.InstallAgent(ctx, c.p, c.sha)
			wantCode(t, err, c.code)
		})
	}
	t.Run("matching pin", func(t *testing.T) {
		rec, err := s.InstallAgent(ctx, pinned, sha)
		if err != nil || rec.ModuleSHA256 != sha {
			t.Fatalf("InstallAgent = %+v, %v", rec, err)
		}
	})
	t.Run("pin alone", func(t *testing.T) {
		rec, err := s.InstallAgent(ctx, pinned, "")
		if err != nil || rec.ModuleSHA256 != sha {
			t.Fatalf("InstallAgent = %+v, %v", rec, err)
		}
	})
	t.Run("re-install without module keeps it", func(t *testing.T) {
		if _, err := s.InstallAgent(ctx, testProfile("keep", nil, nil), other); err != nil {
			t.Fatal(err)
		}
		rec, err := s.InstallAgent(ctx, testProfile("keep", []mediator.Permission{mediator.PermConsoleLog}, nil), "")
		if err != nil || rec.ModuleSHA256 != other {
			t.Fatalf("InstallAgent = %+v, %v; want module %s kept", rec, err, other)
		}
	})
	t.Run("defaults filled", func(t *testing.T) {
		rec, err := s.InstallAgent(ctx, mediator.Profile{AgentID: "raw", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermPageRead, mediator.PermConsoleLog, mediator.PermPageRead}}}, "")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Profile.Capabilities.DOMAccess != mediator.DOMNone || rec.Profile.Capabilities.MaxMemory != mediator.DefaultMaxMemory ||
			!slices.Equal(rec.Profile.Permissions.Required, []mediator.Permission{mediator.PermConsoleLog, mediator.PermPageRead}) {
			t.Fatalf("stored profile not normalised: %+v", rec.Profile)
		}
	})
}

func TestAgentsGrantsRevoke(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	for _, id := range []string{"zeta", "alpha", "mid"} {
		if _, err := s.InstallAgent(ctx, testProfile(id, []mediator.Permission{mediator.PermConsoleLog}, []mediator.Permission{mediator.PermClipboardWrite}), ""); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, r.Profile.AgentID)
		if len(r.Grants) != 1 || r.Grants[0].AgentID != r.Profile.AgentID {
			t.Errorf("agent %s grants = %+v", r.Profile.AgentID, r.Grants)
		}
	}
	if !slices.Equal(ids, []string{"alpha", "mid", "zeta"}) {
		t.Fatalf("ListAgents order = %v", ids)
	}

	g1, err := s.Grant(ctx, "mid", mediator.PermClipboardWrite)
	if err != nil || g1.Source != mediator.SourceUser || g1.Permission != mediator.PermClipboardWrite || g1.AgentID != "mid" || g1.GrantedAt == 0 {
		t.Fatalf("Grant = %+v, %v", g1, err)
	}
	g2, err := s.Grant(ctx, "mid", mediator.PermClipboardWrite)
	if err != nil || g2 != g1 {
		t.Fatalf("second Grant = %+v, %v; want %+v (idempotent)", g2, err, g1)
	}
	g3, err := s.Grant(ctx, "mid", mediator.PermConsoleLog)
	if err != nil || g3.Source != mediator.SourceInstall {
		t.Fatalf("Grant of an install grant = %+v, %v; want the install grant unchanged", g3, err)
	}

	errCases := []struct {
		name string
		fn   func() error
		code mediator.Code
	}{
		{"grant unknown agent", func() error { _, err := s.Grant(ctx, "nobody", mediator.PermConsoleLog); return err }, mediator.CodeUnknownAgent},
		{"grant invalid agent id", func() error { _, err := s.Grant(ctx, "a/../b", mediator.PermConsoleLog); return err }, mediator.CodeUnknownAgent},
		{"grant unknown permission", func() error { _, err := s.Grant(ctx, "mid", "run"); return err }, mediator.CodeUnknownPermission},
		{"grant not requested", func() error { _, err := s.Grant(ctx, "mid", mediator.PermNetworkFetch); return err }, mediator.CodeBadRequest},
		{"revoke unknown agent", func() error { _, err := s.Revoke(ctx, "nobody", mediator.PermConsoleLog); return err }, mediator.CodeUnknownAgent},
		{"revoke unknown permission", func() error { _, err := s.Revoke(ctx, "mid", "ffi"); return err }, mediator.CodeUnknownPermission},
		{"grants of unknown agent", func() error { _, err := s.Grants(ctx, "nobody"); return err }, mediator.CodeUnknownAgent},
		{"agent unknown", func() error { _, err := s.Agent(ctx, "nobody"); return err }, mediator.CodeUnknownAgent},
		{"uninstall unknown", func() error { return s.UninstallAgent(ctx, "nobody") }, mediator.CodeUnknownAgent},
		{"uninstall invalid id", func() error { return s.UninstallAgent(ctx, "") }, mediator.CodeUnknownAgent},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) { wantCode(t, c.fn(), c.code) })
	}
	t.Run("error names the agent", func(t *testing.T) {
		_, err := s.Grant(ctx, "nobody", mediator.PermConsoleLog)
		if !strings.Contains(err.Error(), "agent[nobody]") {
			t.Fatalf("error %q does not name the agent", err)
		}
	})

	if ok, err := s.Revoke(ctx, "mid", mediator.PermClipboardWrite); err != nil || !ok {
		t.Fatalf("Revoke = %v, %v; want true", ok, err)
	}
	if ok, err := s.Revoke(ctx, "mid", mediator.PermClipboardWrite); err != nil || ok {
		t.Fatalf("second Revoke = %v, %v; want false, nil", ok, err)
	}
	gs, err := s.Grants(ctx, "mid")
	if err != nil || len(gs) != 1 || gs[0].Permission != mediator.PermConsoleLog {
		t.Fatalf("Grants = %+v, %v", gs, err)
	}
}

func TestUninstallRemovesGrantsKeepsDenials(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	if _, err := s.InstallAgent(ctx, testProfile("a", []mediator.Permission{mediator.PermConsoleLog, mediator.PermPageRead}, nil), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LogDenial(ctx, mediator.Denial{AgentID: "a", Permission: "network.fetch", Code: mediator.CodePermissionNotGranted}); err != nil {
		t.Fatal(err)
	}
	if err := s.UninstallAgent(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM grants WHERE agent_id = 'a'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("grants left after uninstall: %d, %v", n, err)
	}
	page, err := s.ListDenials(ctx, DenialFilter{AgentID: "a"})
	if err != nil || len(page.Denials) != 1 {
		t.Fatalf("denials after uninstall = %+v, %v; want the one record kept", page, err)
	}
	// Re-installing starts afresh: install time is new, user grants are gone.
	rec, err := s.InstallAgent(ctx, testProfile("a", nil, []mediator.Permission{mediator.PermConsoleLog}), "")
	if err != nil || len(rec.Grants) != 0 {
		t.Fatalf("re-install after uninstall = %+v, %v", rec, err)
	}
}

// TestUninstallForgetsRememberedAnswers: an agent installed later under
// the same id must not inherit "always allow DELETE"; the uninstall is in
// the audit trail.
func TestUninstallForgetsRememberedAnswers(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	prof := testProfile("a", []mediator.Permission{mediator.PermNetworkFetch}, nil)
	prof.Capabilities.NetworkAccess = true
	if _, err := s.InstallAgent(ctx, prof, ""); err != nil {
		t.Fatal(err)
	}
	del := mediator.Operation{AgentID: "a", Name: mediator.OpNetworkFetch, Method: "DELETE", URL: "http://127.0.0.1:8080/x"}
	if _, err := s.SetPreference(ctx, mediator.Preference{AgentID: "a", Operation: mediator.OpNetworkFetch, Target: mediator.TargetKey(del), Answer: mediator.AnswerAlwaysAllow}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPreference(ctx, mediator.Preference{AgentID: "other", Operation: mediator.OpClipboardRead, Answer: mediator.AnswerAlwaysAllow}); err != nil {
		t.Fatal(err)
	}
	if err := s.UninstallAgent(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if prefs, _ := s.ListPreferences(ctx, "a"); len(prefs) != 0 {
		t.Fatalf("answers left after uninstall: %+v", prefs)
	}
	if prefs, _ := s.ListPreferences(ctx, "other"); len(prefs) != 1 {
		t.Fatalf("another agent's answers: %+v", prefs)
	}
	// A different agent under the same id is asked, not allowed.
	if _, err := s.InstallAgent(ctx, prof, ""); err != nil {
		t.Fatal(err)
	}
	if d := mediator.NewPolicy(s, mediator.PolicyOptions{}).Decide(ctx, del); !d.RequiresPrompt {
		t.Fatalf("DELETE after re-install: %+v; want a prompt", d)
	}
	page, err := s.ListAudit(ctx, 0, 10, false)
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("audit %+v, %v", page, err)
	}
	r := page.Records[0]
	if r.Kind != mediator.AuditUninstall || r.Operation.AgentID != "a" || !strings.Contains(r.Reason, "1 grant(s) and 1 remembered answer(s)") {
		t.Fatalf("uninstall record %+v", r)
	}
	if rep, err := s.VerifyAudit(ctx); err != nil || !rep.OK {
		t.Fatalf("verify %+v %v", rep, err)
	}
	if err := s.UninstallAgent(ctx, "nobody"); mediator.CodeOf(err) != mediator.CodeUnknownAgent {
		t.Fatalf("uninstall of nobody: %v", err)
	}
}

func TestLogDenialBoundsAndDefaults(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	details := map[string]string{}
	for i := range 40 {
		details[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 5000)
	}
	details[strings.Repeat("K", 500)] = "long key"
	in := mediator.Denial{
		ID:         12345, // ignored: the store assigns ids
		AgentID:    strings.Repeat("a", 1000),
		Permission: strings.Repeat("p", 1000),
		Context: mediator.DenialContext{
			URL:     "https://example.com/" + strings.Repeat("é", 3000), // multi-byte: cut on a rune boundary
			Reason:  strings.Repeat("r", 5000) + "\xff",
			Layer:   strings.Repeat("l", 1000),
			Details: details,
		},
	}
	out, err := s.LogDenial(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.ListDenials(ctx, DenialFilter{})
	if err != nil || len(page.Denials) != 1 {
		t.Fatalf("ListDenials = %+v, %v", page, err)
	}
	got := page.Denials[0]
	if got.ID != out.ID || got.ID == 12345 || got.ID <= 0 {
		t.Errorf("id = %d (returned %d); want a store-assigned id", got.ID, out.ID)
	}
	if got.Code != mediator.CodeInternal {
		t.Errorf("empty code stored as %q; want internal_error", got.Code)
	}
	if got.Timestamp != 1_700_000_000_000+1 && got.Timestamp <= 0 {
		t.Errorf("timestamp = %d; want filled from the clock", got.Timestamp)
	}
	checks := []struct {
		name string
		s    string
		max  int
	}{
		{"agentId", got.AgentID, mediator.MaxDenialAgentIDBytes},
		{"permission", got.Permission, mediator.MaxDenialPermissionBytes},
		{"url", got.Context.URL, mediator.MaxDenialURLBytes},
		{"reason", got.Context.Reason, mediator.MaxDenialReasonBytes},
		{"layer", got.Context.Layer, mediator.MaxDenialShortBytes},
	}
	for _, c := range checks {
		if len(c.s) == 0 || len(c.s) > c.max || !utf8Valid(c.s) {
			t.Errorf("%s: %d bytes (valid UTF-8: %v); want 1..%d bytes of valid UTF-8", c.name, len(c.s), utf8Valid(c.s), c.max)
		}
	}
	if len(got.Context.Details) != mediator.MaxDenialDetailKeys {
		t.Errorf("details has %d keys; want %d", len(got.Context.Details), mediator.MaxDenialDetailKeys)
	}
	if _, ok := got.Context.Details["_truncated"]; !ok {
		t.Error("details were cut without a _truncated marker")
	}
	for k, v := range got.Context.Details {
		if len(k) > mediator.MaxDenialDetailKeyBytes || len(v) > mediator.MaxDenialDetailValBytes {
			t.Errorf("details[%.20q] = %d bytes of key, %d of value; over the bounds", k, len(k), len(v))
		}
	}

	t.Run("given timestamp and code kept", func(t *testing.T) {
		later := got.Timestamp + 5000
		d, err := s.LogDenial(ctx, mediator.Denial{AgentID: "x", Timestamp: later, Code: mediator.CodeHostNotAllowed, Context: mediator.DenialContext{Reason: "r"}})
		if err != nil || d.Timestamp != later || d.Code != mediator.CodeHostNotAllowed || d.ID <= out.ID {
			t.Fatalf("LogDenial = %+v, %v", d, err)
		}
	})
	t.Run("a timestamp before the previous record's is raised to it", func(t *testing.T) {
		prev, _ := s.ListDenials(ctx, DenialFilter{Limit: 1})
		d, err := s.LogDenial(ctx, mediator.Denial{AgentID: "x", Timestamp: 42, Code: mediator.CodeHostNotAllowed})
		if err != nil || d.Timestamp != prev.Denials[0].Timestamp {
			t.Fatalf("LogDenial = %+v, %v; want time %d", d, err, prev.Denials[0].Timestamp)
		}
	})
	t.Run("few details kept whole", func(t *testing.T) {
		d, err := s.LogDenial(ctx, mediator.Denial{AgentID: "x", Code: mediator.CodeHostNotAllowed, Context: mediator.DenialContext{Details: map[string]string{"host": "evil.example"}}})
		if err != nil || len(d.Context.Details) != 1 || d.Context.Details["host"] != "evil.example" {
			t.Fatalf("LogDenial = %+v, %v", d, err)
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "!") == s }

func TestListDenialsPaging(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	agents := []string{"a1", "a2", "a3"}
	perms := []string{"network.fetch", "page.read"}
	codes := []mediator.Code{mediator.CodeHostNotAllowed, mediator.CodePermissionNotGranted, mediator.CodePrivateAddress, mediator.CodeUnknownPermission, mediator.CodeTimeout}
	const n = 1000
	// Insert in one transaction through the same code path's SQL for speed;
	// LogDenial itself is covered elsewhere, and durability by the process tests.
	tx, err := s.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := tx.Exec(`INSERT INTO denials (agent_id, permission, ts, code, context) VALUES (?, ?, ?, ?, ?)`,
			agents[i%3], perms[i%2], int64(1000+i), string(codes[i%5]), fmt.Sprintf(`{"reason":"r%d"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	// walk returns every id the filter yields, newest first, page by page.
	walk := func(t *testing.T, f DenialFilter) []mediator.Denial {
		t.Helper()
		var all []mediator.Denial
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatal("paging does not terminate")
			}
			page, err := s.ListDenials(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Denials) > max(f.Limit, 0) && f.Limit > 0 {
				t.Fatalf("page of %d > limit %d", len(page.Denials), f.Limit)
			}
			all = append(all, page.Denials...)
			if page.NextBeforeID == 0 {
				return all
			}
			if len(page.Denials) == 0 || page.NextBeforeID != page.Denials[len(page.Denials)-1].ID {
				t.Fatalf("NextBeforeID %d is not the last id of the page", page.NextBeforeID)
			}
			f.BeforeID = page.NextBeforeID
		}
	}

	t.Run("all in pages of 100", func(t *testing.T) {
		all := walk(t, DenialFilter{Limit: 100})
		if len(all) != n {
			t.Fatalf("walked %d records; want %d", len(all), n)
		}
		for i, d := range all {
			// ids are 1..n, newest first: no duplicates, no gaps.
			if d.ID != int64(n-i) {
				t.Fatalf("record %d has id %d; want %d", i, d.ID, n-i)
			}
			if d.Context.Reason != fmt.Sprintf("r%d", d.ID-1) {
				t.Fatalf("record %d context = %+v", d.ID, d.Context)
			}
		}
	})

	// match is the reference implementation of the filter.
	match := func(f DenialFilter, i int) bool {
		return (f.AgentID == "" || agents[i%3] == f.AgentID) &&
			(f.Permission == "" || perms[i%2] == f.Permission) &&
			(f.Code == "" || codes[i%5] == f.Code) &&
			(f.Since == 0 || int64(1000+i) >= f.Since) &&
			(f.Until == 0 || int64(1000+i) < f.Until)
	}
	filters := []struct {
		name string
		f    DenialFilter
	}{
		{"agent", DenialFilter{AgentID: "a2"}},
		{"permission", DenialFilter{Permission: "page.read"}},
		{"code", DenialFilter{Code: mediator.CodePrivateAddress}},
		{"time range", DenialFilter{Since: 1100, Until: 1350}},
		{"agent+permission", DenialFilter{AgentID: "a1", Permission: "network.fetch"}},
		{"agent+code+time", DenialFilter{AgentID: "a3", Code: mediator.CodeTimeout, Since: 1200, Until: 1900}},
		{"all filters", DenialFilter{AgentID: "a1", Permission: "page.read", Code: mediator.CodeHostNotAllowed, Since: 1000, Until: 2000}},
		{"nothing matches", DenialFilter{AgentID: "nobody"}},
		{"code matches nothing in range", DenialFilter{Code: mediator.CodeTimeout, Since: 1000, Until: 1004}},
	}
	for _, c := range filters {
		for _, limit := range []int{7, 100} {
			t.Run(fmt.Sprintf("%s/limit=%d", c.name, limit), func(t *testing.T) {
				f := c.f
				f.Limit = limit
				got := walk(t, f)
				var want []int64
				for i := n - 1; i >= 0; i-- {
					if match(c.f, i) {
						want = append(want, int64(i+1))
					}
				}
				var ids []int64
				for _, d := range got {
					ids = append(ids, d.ID)
				}
				if !slices.Equal(ids, want) {
					t.Fatalf("got %d ids %v...; want %d ids %v...", len(ids), head(ids), len(want), head(want))
				}
			})
		}
	}

	t.Run("tail with AfterID", func(t *testing.T) {
		var ids []int64
		after := int64(0)
		// Start from the newest page's smallest id, like a viewer that
		// showed the newest page and then tails.
		page, err := s.ListDenials(ctx, DenialFilter{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		after = page.Denials[0].ID - 250
		for {
			p, err := s.ListDenials(ctx, DenialFilter{AfterID: after, Limit: 64})
			if err != nil {
				t.Fatal(err)
			}
			if p.NextBeforeID != 0 {
				t.Fatalf("tail page has NextBeforeID %d", p.NextBeforeID)
			}
			if len(p.Denials) == 0 {
				break
			}
			for _, d := range p.Denials {
				ids = append(ids, d.ID)
			}
			after = p.Denials[len(p.Denials)-1].ID
		}
		if len(ids) != 250 || ids[0] != n-249 || ids[249] != n || !slices.IsSorted(ids) {
			t.Fatalf("tailed %d ids from %v to %v; want 751..1000 ascending", len(ids), head(ids), ids[len(ids)-1])
		}
		// New records appear to the tail.
		d, err := s.LogDenial(ctx, mediator.Denial{AgentID: "a1", Code: mediator.CodeTimeout})
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.ListDenials(ctx, DenialFilter{AfterID: after})
		if err != nil || len(p.Denials) != 1 || p.Denials[0].ID != d.ID {
			t.Fatalf("tail after a new record = %+v, %v", p, err)
		}
		// AfterID combines with filters and BeforeID.
		p, err = s.ListDenials(ctx, DenialFilter{AfterID: 10, BeforeID: 21, AgentID: "a1"})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, d := range p.Denials {
			got = append(got, d.ID)
		}
		if !slices.Equal(got, []int64{10 + 3, 16, 19}) { // ids with (id-1)%3 == 0 in 11..20
			t.Fatalf("AfterID+BeforeID+agent = %v", got)
		}
	})

	t.Run("limit default and clamp", func(t *testing.T) {
		for _, c := range []struct{ limit, want int }{{0, DefaultDenialPage}, {-5, DefaultDenialPage}, {5000, MaxDenialPage}, {1000, 1000}, {3, 3}} {
			p, err := s.ListDenials(ctx, DenialFilter{Limit: c.limit})
			if err != nil || len(p.Denials) != c.want {
				t.Errorf("Limit %d: %d records, %v; want %d", c.limit, len(p.Denials), err, c.want)
			}
		}
	})

	t.Run("pages use indexes", func(t *testing.T) {
		// A filtered page must be an index walk, never a full scan plus sort.
		for _, col := range []string{"agent_id", "permission", "code"} {
			rows, err := s.db.Query(`EXPLAIN QUERY PLAN SELECT id FROM denials WHERE `+col+` = ? AND id < ? ORDER BY id DESC LIMIT 101`, "x", 500)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var a, b, c int
				var detail string
				if err := rows.Scan(&a, &b, &c, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			joined := strings.Join(plan, "; ")
			if !strings.Contains(joined, "USING") || strings.Contains(joined, "TEMP B-TREE") {
				t.Errorf("filter on %s: plan %q; want an index walk without a sort", col, joined)
			}
		}
	})
}

// TestListDenialsTimeRangeExact checks that time ranges page exactly, also
// when callers supply timestamps that run backwards: LogDenial keeps the
// log's time order equal to its id order, and the answer must match a
// reference computed from the stored times.
func TestListDenialsTimeRangeExact(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	const n = 600
	for i := range n {
		ts := int64(10_000 + i*10)
		if i%3 == 0 {
			ts = int64(10_000 + (n-i)*10) // a third run backwards
		}
		d, err := s.LogDenial(ctx, mediator.Denial{AgentID: "a", Permission: "page.read", Code: mediator.CodeTimeout, Timestamp: ts})
		if err != nil {
			t.Fatal(err)
		}
		if d.Timestamp < ts {
			t.Fatalf("record %d stored at %d, before its own time %d", i, d.Timestamp, ts)
		}
	}
	stored := storedTimes(t, s)
	for i := 1; i < len(stored); i++ {
		if stored[i] < stored[i-1] {
			t.Fatalf("record %d has time %d, before its predecessor's %d", i+1, stored[i], stored[i-1])
		}
	}
	ranges := []struct{ since, until int64 }{{0, 12_000}, {11_000, 0}, {11_000, 13_000}, {10_000, 16_000}, {15_990, 16_010}, {99_999, 0}, {0, 5}, {13_000, 11_000}}
	for _, r := range ranges {
		for _, asc := range []bool{false, true} {
			t.Run(fmt.Sprintf("since=%d/until=%d/asc=%v", r.since, r.until, asc), func(t *testing.T) {
				var want, got []int64
				for i, ts := range stored {
					if (r.since == 0 || ts >= r.since) && (r.until == 0 || ts < r.until) {
						want = append(want, int64(i+1))
					}
				}
				f := DenialFilter{Since: r.since, Until: r.until, Limit: 37}
				if asc {
					f.AfterID = 1 // the walk starts above id 1
					if len(want) > 0 && want[0] == 1 {
						want = want[1:]
					}
				} else {
					slices.Reverse(want)
				}
				for range n {
					p, err := s.ListDenials(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range p.Denials {
						got = append(got, d.ID)
					}
					if asc {
						if len(p.Denials) == 0 {
							break
						}
						f.AfterID = p.Denials[len(p.Denials)-1].ID
					} else {
						if p.NextBeforeID == 0 {
							break
						}
						f.BeforeID = p.NextBeforeID
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("got %d ids %v...; want %d ids %v...", len(got), head(got), len(want), head(want))
				}
			})
		}
	}
}

func storedTimes(t *testing.T, s *Store) []int64 {
	t.Helper()
	rows, err := s.db.Query(`SELECT ts FROM denials ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ts []int64
	for rows.Next() {
		var v int64
		rows.Scan(&v)
		ts = append(ts, v)
	}
	return ts
}

// TestMigrationOrdersDenialTimes: a log written before time order was kept
// (schema 3) is put in order by the migration, so time ranges stay exact.
func TestMigrationOrdersDenialTimes(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	for _, ts := range []int64{500, 300, 700, 100, 800, 800, 200} {
		if _, err := s.db.Exec(`INSERT INTO denials (agent_id, permission, ts, code, context) VALUES ('a', 'page.read', ?, 'timeout', '{}')`, ts); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec(`PRAGMA user_version = 3`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestStore(t, dir)
	if got, want := storedTimes(t, s), []int64{500, 500, 700, 700, 800, 800, 800}; !slices.Equal(got, want) {
		t.Fatalf("times after migration %v; want %v", got, want)
	}
}

// TestMigrationDropsAnswersKeyedByHostOnly: answers remembered before the
// canonical-origin key are asked again; current ones stay.
func TestMigrationDropsAnswersKeyedByHostOnly(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	for _, row := range [][2]string{
		{"network.fetch", "POST example.com:443"},
		{"network.fetch", "DELETE 127.0.0.1:80"},
		{"page.write.setElementText", "https://a.example"},
		{"network.fetch", "POST https://example.com:443"},
		{"page.write.setElementText", "https://a.example:443"},
		{"clipboard.read", ""},
	} {
		if _, err := s.db.Exec(`INSERT INTO preferences (agent_id, operation, target, answer, created_at) VALUES ('a', ?, ?, 'always-allow', 1)`, row[0], row[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.db.Exec(`PRAGMA user_version = 4`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestStore(t, dir)
	prefs, err := s.ListPreferences(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range prefs {
		got = append(got, p.Operation+" "+p.Target)
	}
	want := []string{"network.fetch POST https://example.com:443", "page.write.setElementText https://a.example:443", "clipboard.read "}
	if !slices.Equal(got, want) {
		t.Fatalf("after migration %q; want %q", got, want)
	}
}

func head(ids []int64) []int64 { return ids[:min(len(ids), 8)] }

func TestStoreJSONShape(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, freshDir(t))
	rec, err := s.InstallAgent(ctx, testProfile("a", []mediator.Permission{mediator.PermConsoleLog}, nil), strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"profile", "moduleSha256", "installedAt", "updatedAt", "grants"} {
		if _, ok := m[k]; !ok {
			t.Errorf("AgentRecord JSON lacks %q: %s", k, b)
		}
	}
	g := m["grants"].([]any)[0].(map[string]any)
	for _, k := range []string{"agentId", "permission", "grantedAt", "source"} {
		if _, ok := g[k]; !ok {
			t.Errorf("Grant JSON lacks %q: %s", k, b)
		}
	}
}
