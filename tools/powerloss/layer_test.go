//go:build linux

package powerloss

import (
	"os"
	"path/filepath"
	"testing"
)

// mount mounts a layer over a fresh disk for one test; it fails, never
// skips, when the machine cannot mount FUSE.
func mount(t *testing.T, disk string) *Layer {
	t.Helper()
	mnt := t.TempDir()
	l, err := Mount(disk, mnt, t.TempDir())
	if err != nil {
		t.Fatalf("%v (the power-loss tests need root and /dev/fuse; CI runs as root)", err)
	}
	t.Cleanup(func() { l.PowerLoss() })
	return l
}

func writeFile(t *testing.T, p, content string, sync bool) *os.File {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func syncDir(t *testing.T, p string) {
	t.Helper()
	d, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

// TestPowerLossKeepsOnlyWhatWasSynced: each case does some writes through
// the mount, cuts the power, and checks Disk holds what a disk would.
func TestPowerLossKeepsOnlyWhatWasSynced(t *testing.T) {
	cases := []struct {
		name string
		do   func(t *testing.T, mnt string)
		want map[string]string // file -> content on Disk; "-" = absent
	}{
		{"unsynced new file is lost", func(t *testing.T, mnt string) {
			writeFile(t, filepath.Join(mnt, "a"), "data", false).Close()
		}, map[string]string{"a": "-", "old": "old"}},
		{"synced file is kept", func(t *testing.T, mnt string) {
			writeFile(t, filepath.Join(mnt, "a"), "data", true).Close()
		}, map[string]string{"a": "data"}},
		{"writes after the sync are lost", func(t *testing.T, mnt string) {
			f := writeFile(t, filepath.Join(mnt, "a"), "synced", true)
			f.WriteString("-lost")
			f.Close()
		}, map[string]string{"a": "synced"}},
		{"another file's sync commits the name but not the data", func(t *testing.T, mnt string) {
			writeFile(t, filepath.Join(mnt, "a"), "unsynced", false).Close()
			writeFile(t, filepath.Join(mnt, "b"), "b", true).Close()
		}, map[string]string{"a": "", "b": "b"}},
		{"overwriting an old file without a sync keeps the old data", func(t *testing.T, mnt string) {
			f, err := os.OpenFile(filepath.Join(mnt, "old"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("NEW"), 0)
			f.Close()
		}, map[string]string{"old": "old"}},
		{"truncate then sync", func(t *testing.T, mnt string) {
			if err := os.Truncate(filepath.Join(mnt, "old"), 1); err != nil {
				t.Fatal(err)
			}
			f, _ := os.OpenFile(filepath.Join(mnt, "old"), os.O_RDWR, 0)
			f.Sync()
			f.Close()
		}, map[string]string{"old": "o"}},
		{"rename reaches the disk with a directory sync", func(t *testing.T, mnt string) {
			if err := os.Rename(filepath.Join(mnt, "old"), filepath.Join(mnt, "new")); err != nil {
				t.Fatal(err)
			}
			syncDir(t, mnt)
		}, map[string]string{"old": "-", "new": "old"}},
		{"unsynced rename is lost", func(t *testing.T, mnt string) {
			if err := os.Rename(filepath.Join(mnt, "old"), filepath.Join(mnt, "new")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"old": "old", "new": "-"}},
		{"synced file in a new directory", func(t *testing.T, mnt string) {
			if err := os.Mkdir(filepath.Join(mnt, "d"), 0o700); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(mnt, "d", "f"), "in d", true).Close()
		}, map[string]string{"d/f": "in d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			disk := t.TempDir()
			if err := os.WriteFile(filepath.Join(disk, "old"), []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			l := mount(t, disk)
			c.do(t, l.Mountpoint)
			// The working tree sees every write, as the page cache does.
			if _, err := os.Stat(filepath.Join(l.Mountpoint, "old")); err != nil && c.want["old"] == "old" && c.want["new"] == "" {
				t.Fatalf("the mount lost a file before the power went: %v", err)
			}
			if err := l.PowerLoss(); err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				b, err := os.ReadFile(filepath.Join(disk, name))
				switch {
				case want == "-" && err == nil:
					t.Errorf("%s is on the disk (%q); want it lost", name, b)
				case want == "-":
				case err != nil:
					t.Errorf("%s: %v; want %q", name, err, want)
				case string(b) != want:
					t.Errorf("%s holds %q; want %q", name, b, want)
				}
			}
		})
	}
}
