//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyList: nmhost policy list shows every rule with its source:
// the administrator's file, then the person's grants; an administrator's
// file others could write stops the command instead of being ignored.
func TestPolicyList(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	dir := filepath.Join(t.TempDir(), "etc")
	os.Mkdir(dir, 0o755)
	path := filepath.Join(dir, "policy.json")
	t.Setenv("NMHOST_TEST_ADMIN_POLICY", path)

	code, out, errOut := runMain(t, dataDir, "policy", "list")
	if code != 0 || !strings.Contains(out, "no admin policy") {
		t.Fatalf("no file: exit %d %q %q", code, out, errOut)
	}
	os.WriteFile(path, []byte(`{"blockedPermissions":["clipboard.read"],"deniedHosts":["*.paste.example"],"maxSessionLevel":"medium"}`), 0o644)
	if os.Geteuid() == 0 {
		code, out, errOut = runMain(t, dataDir, "policy", "list")
		for _, want := range []string{"admin file " + path, "blockedPermissions", "clipboard.read", "deniedHosts", "*.paste.example", "maxSessionLevel"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Fatalf("exit %d; output lacks %q:\n%s%s", code, want, out, errOut)
			}
		}
	}
	os.Chmod(path, 0o666)
	if code, _, errOut = runMain(t, dataDir, "policy", "list"); code != 1 || !strings.Contains(errOut, "writable by others") {
		t.Fatalf("a policy others can write: exit %d %q", code, errOut)
	}
}
