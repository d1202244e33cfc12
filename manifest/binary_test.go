package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// binaryAt makes an executable file at dir/rel.
func binaryAt(t *testing.T, dir, rel string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInstallRefusesBinariesThatDoNotStay: `go run ./cmd/nmhost install`
// would name a binary in Go's build cache; a binary in a temporary
// directory is cleaned up too. Both are refused with the build line, and
// nothing is written. A --user-data-dir profile (made for one test run)
// may name a temporary binary, never one in the build cache.
func TestInstallRefusesBinariesThatDoNotStay(t *testing.T) {
	tmp := t.TempDir()
	cache := t.TempDir()
	for _, c := range []struct {
		name    string
		bin     string
		udd     bool
		refused bool
	}{
		{"go run's directory", binaryAt(t, t.TempDir(), "go-build1234/b001/exe/nmhost"), false, true},
		{"go run's directory, user-data-dir", binaryAt(t, t.TempDir(), "go-build1234/b001/exe/nmhost"), true, true},
		{"GOCACHE", binaryAt(t, cache, "ab/nmhost"), false, true},
		{"a temporary directory", binaryAt(t, tmp, "x/nmhost"), false, true},
		{"a temporary directory, user-data-dir", binaryAt(t, tmp, "y/nmhost"), true, false},
		{"a place that stays", binaryAt(t, t.TempDir(), "home/.local/bin/nmhost"), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{ExtensionIDs: []string{chromeID}, BinaryPath: c.bin, HomeDir: t.TempDir(), GOOS: "linux", BuildCache: cache, TempDirs: []string{tmp}}
			if c.udd {
				opts.UserDataDir = t.TempDir()
			}
			_, err := Install(opts)
			var te *TemporaryBinaryError
			if c.refused != errors.As(err, &te) {
				t.Fatalf("Install = %v; refused want %v", err, c.refused)
			}
			if c.refused && !strings.Contains(err.Error(), BuildLine) {
				t.Fatalf("the refusal lacks the build line: %v", err)
			}
			if !c.refused && err != nil {
				t.Fatal(err)
			}
			checks := Doctor(opts)
			f := failed(checks)
			if c.refused {
				// Doctor fails such a manifest just as install refuses it.
				writeManifest(t, opts, Chrome, Manifest{Name: HostName, Description: Description, Path: c.bin, Type: "stdio", AllowedOrigins: []string{"chrome-extension://" + chromeID + "/"}})
				f = failed(Doctor(opts))
				if len(f) != 1 || f[0].Name != "browser[chrome] path" || !strings.Contains(f[0].Detail, BuildLine+" && ~/.local/bin/nmhost install --extension-id "+chromeID) {
					t.Fatalf("doctor: %+v", f)
				}
			} else if len(f) != 0 {
				t.Fatalf("doctor: %+v", f)
			}
		})
	}
}

// TestDoctorHintsEndInTheFix: every failed check that an install fixes
// ends in the whole command, run by this binary.
func TestDoctorHintsEndInTheFix(t *testing.T) {
	bin := fakeBinary(t)
	udd := t.TempDir()
	opts := Options{ExtensionIDs: []string{chromeID}, Browsers: []string{Chromium}, UserDataDir: udd, BinaryPath: bin, HomeDir: t.TempDir(), GOOS: "linux"}
	install := bin + " install --extension-id " + chromeID + " --browser chromium --user-data-dir " + udd

	moved := Manifest{Name: HostName, Description: Description, Path: "/old/place/nmhost", Type: "stdio", AllowedOrigins: []string{"chrome-extension://" + chromeID + "/"}}
	writeManifest(t, opts, Chromium, moved)
	f := failed(Doctor(opts))
	if len(f) != 1 || !strings.Contains(f[0].Detail, "does not exist (was the binary moved?)") || !strings.HasSuffix(f[0].Detail, "install again from where it is now: "+install) {
		t.Fatalf("moved binary: %+v", f)
	}

	// Another id is listed: the fix keeps it and adds the one asked about.
	other := moved
	other.Path = bin
	other.AllowedOrigins = []string{"chrome-extension://" + chromeID2 + "/"}
	writeManifest(t, opts, Chromium, other)
	f = failed(Doctor(opts))
	want := bin + " install --extension-id " + chromeID2 + " --extension-id " + chromeID + " --browser chromium --user-data-dir " + udd
	if len(f) != 1 || f[0].Name != "browser[chromium] origin" || !strings.HasSuffix(f[0].Detail, "run: "+want) {
		t.Fatalf("unlisted id: %+v\nwant the hint to end in %s", f, want)
	}

	os.Remove(filepath.Join(udd, "NativeMessagingHosts", HostName+".json"))
	f = failed(Doctor(opts))
	if len(f) != 1 || !strings.HasSuffix(f[0].Detail, "install it: "+install) {
		t.Fatalf("missing manifest: %+v", f)
	}
}

func TestInstallCommandQuotes(t *testing.T) {
	got := InstallCommand(Options{BinaryPath: "/opt/my tools/nmhost"}, Firefox, []string{"{12345678-90ab-cdef-1234-567890abcdef}"})
	want := `'/opt/my tools/nmhost' install --extension-id '{12345678-90ab-cdef-1234-567890abcdef}' --browser firefox`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := InstallCommand(Options{}, "", nil); got != "nmhost install --extension-id ID" {
		t.Fatalf("no binary, no id: %s", got)
	}
}
