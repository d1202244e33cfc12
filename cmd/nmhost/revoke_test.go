package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRevokeInTheBrowserSticksForRun is the case: network.fetch is
// revoked where the options page revokes it (the host's revoke message),
// then `nmhost run` runs the same profile and module, which installs them
// again. The permission stays revoked, the run is refused with
// revoked_by_user, and the message says how to grant it again.
func TestRevokeInTheBrowserSticksForRun(t *testing.T) {
	dir := newDataDir(t)
	work := t.TempDir()
	if err := writeTinyAgents(work); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(work, "fetch.json")
	os.WriteFile(prof, []byte(`{"agentId":"sticky","permissions":{"required":["console.log","network.fetch"]},"capabilities":{"networkAccess":true,"allowedHosts":["example.org"]}}`), 0o600)
	module := filepath.Join(work, "fetch.wasm")

	if out, code := nmhost(t, dir, "run", "--profile", prof, module); code != 0 {
		t.Fatalf("first run: %d\n%s", code, out)
	}
	p := start(t, dir)
	if r := call(t, p.Client, "revoke", map[string]any{"agentId": "sticky", "permission": "network.fetch"}); !r.Success {
		t.Fatalf("revoke: %+v", r)
	}
	p.Wait()

	out, code := nmhost(t, dir, "run", "--profile", prof, module)
	if code != 1 || !strings.Contains(out, "revoked_by_user") || !strings.Contains(out, "nmhost grant sticky network.fetch") {
		t.Fatalf("run after revoke: exit %d\n%s\nwant exit 1, revoked_by_user and how to grant it again", code, out)
	}
	q := start(t, dir)
	var info struct {
		Grants []struct{ Permission string } `json:"grants"`
	}
	if err := call(t, q.Client, "getAgentInfo", map[string]any{"agentId": "sticky"}).Decode(&info); err != nil {
		t.Fatal(err)
	}
	for _, g := range info.Grants {
		if g.Permission == "network.fetch" {
			t.Fatal("running the same agent granted network.fetch again")
		}
	}
	if r := call(t, q.Client, "network-fetch", map[string]any{"agentId": "sticky", "url": "http://example.org/"}); r.Code != "revoked_by_user" {
		t.Fatalf("fetch after the run: %+v; want revoked_by_user", r)
	}
}
