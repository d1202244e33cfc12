//go:build unix

package adminpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestLoadAdminPolicy: a policy only an administrator could have written
// is read exactly; a link, a file or directory others can write, another
// owner, or a policy that does not read exactly is refused with a sentence
// that says how to fix it, never ignored.
func TestLoadAdminPolicy(t *testing.T) {
	root := os.Geteuid() == 0
	good := `{"blockedPermissions":["clipboard.read"],"deniedHosts":["*.paste.example","10.0.0.0/8"],"maxSessionLevel":"medium"}`
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir, path string)
		wantErr string // "" loads
	}{
		{"missing", func(*testing.T, string, string) {}, ""},
		{"a root-owned file", func(t *testing.T, dir, path string) { write(t, path, good, 0o644) }, ""},
		{"a symbolic link", func(t *testing.T, dir, path string) {
			write(t, filepath.Join(dir, "real.json"), good, 0o644)
			os.Symlink(filepath.Join(dir, "real.json"), path)
		}, "symbolic link"},
		{"writable by others", func(t *testing.T, dir, path string) { write(t, path, good, 0o666); os.Chmod(path, 0o666) }, "writable by others"},
		{"in a directory others can write", func(t *testing.T, dir, path string) { write(t, path, good, 0o644); os.Chmod(dir, 0o777) }, "writable by others"},
		{"owned by a user", func(t *testing.T, dir, path string) { write(t, path, good, 0o644); os.Chown(path, 1000, 1000) }, "not root"},
		{"a case-variant member", func(t *testing.T, dir, path string) {
			write(t, path, `{"maxSessionLevel":"low","MaxSessionLevel":"high"}`, 0o644)
		}, "not a policy"},
		{"a repeated member", func(t *testing.T, dir, path string) {
			write(t, path, `{"maxSessionLevel":"low","maxSessionLevel":"high"}`, 0o644)
		}, "not a policy"},
		{"JSON null", func(t *testing.T, dir, path string) { write(t, path, "null\n", 0o644) }, "not a policy"},
		{"an unknown permission", func(t *testing.T, dir, path string) { write(t, path, `{"blockedPermissions":["run"]}`, 0o644) }, "not known"},
		{"a bad host pattern", func(t *testing.T, dir, path string) { write(t, path, `{"deniedHosts":["http://*"]}`, 0o644) }, "deniedHosts"},
		{"a pattern written as a deny", func(t *testing.T, dir, path string) { write(t, path, `{"deniedHosts":["!evil.test"]}`, 0o644) }, "without '!'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !root && tc.wantErr == "" && tc.name != "missing" {
				// Not root: the file is the user's own, which is refused.
				tc.wantErr = "not root"
			}
			dir := filepath.Join(t.TempDir(), "nmhost")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, File)
			tc.setup(t, dir, path)
			p, err := Load(path)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("LoadAdminPolicy: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("LoadAdminPolicy = %+v, %v; want an error saying %q", p, err, tc.wantErr)
			case tc.name == "a root-owned file" && root:
				if p.MaxSessionLevel != mediator.LevelMedium || len(p.DeniedHosts) != 2 || p.Source != "admin file "+path {
					t.Fatalf("policy %+v", p)
				}
			}
		})
	}
}

func write(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}
