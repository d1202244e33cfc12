package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestCheckPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		if err := CheckPrivate(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := CheckPrivate(dir); err != nil {
		t.Fatalf("a data dir that does not exist yet: %v", err)
	}
	if err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if err := SaveConfig(dir, Config{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"viewer-token", "memory.db"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("t"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckPrivate(dir); err != nil {
		t.Fatalf("a private data dir: %v", err)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
		want string
	}{
		{dir, 0o777, "chmod 700 " + dir},
		{dir, 0o770, "chmod 700 " + dir},
		{filepath.Join(dir, "viewer-token"), 0o622, "chmod 600 " + filepath.Join(dir, "viewer-token")},
		{filepath.Join(dir, ConfigFile), 0o666, "chmod 600 " + filepath.Join(dir, ConfigFile)},
		// The sessions' memory: whoever writes it writes what agents read back.
		{filepath.Join(dir, "memory.db"), 0o620, "chmod 600 " + filepath.Join(dir, "memory.db")},
	} {
		old, _ := os.Stat(c.path)
		if err := os.Chmod(c.path, c.mode); err != nil {
			t.Fatal(err)
		}
		err := CheckPrivate(dir)
		var ue *UnsafeError
		if !errors.As(err, &ue) || ue.Path != c.path || !strings.HasSuffix(err.Error(), "fix: "+c.want) {
			t.Errorf("%s at %#o: %v; want the fix %q", c.path, c.mode, err, c.want)
		}
		os.Chmod(c.path, old.Mode().Perm())
	}
	// Readable by others is not this check's business (the token's own
	// check refuses that); writable is.
	os.Chmod(dir, 0o755)
	if err := CheckPrivate(dir); err != nil {
		t.Fatalf("0755: %v", err)
	}
}
