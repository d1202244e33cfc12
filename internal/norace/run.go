package norace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// env, set in the copy's environment, holds what the parent passed to Run:
// its presence is how the copy knows it is the copy.
const env = "NMHOST_TEST_NORACE"

// Copy returns what the parent passed to Run, and whether this process is
// the copy Run started.
func Copy() (string, bool) {
	v := os.Getenv(env)
	return v, v != ""
}

// Binary returns the path of this package's test binary built without
// the race detector, when this binary has it; otherwise this binary
// itself. The copy is built once per process (go test -c in the current
// directory, the package's), however many tests use it, into a directory
// of the user's cache keyed by the package's directory: a finished run
// leaves one binary per package there, which the next run's build
// replaces by a rename, so runs at once never see a half-written file.
// Each build first removes the copies whose package directory is gone
// (a clone that was deleted).
func Binary(t testing.TB) string {
	t.Helper()
	if !Enabled {
		return os.Args[0]
	}
	path, err := built()
	if err != nil {
		t.Fatalf("building the copy without the race detector: %v", err)
	}
	return path
}

// built is build, once per process.
var built = sync.OnceValues(build)

func build() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "nmhost-norace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	sweep(dir)
	sum := sha256.Sum256([]byte(wd))
	final := filepath.Join(dir, filepath.Base(wd)+"-"+hex.EncodeToString(sum[:6])+".test")
	// Beside the copy, the directory it was built from, for sweep.
	if err := os.WriteFile(final+".dir", []byte(wd), 0o644); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".build-*")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if out, err := exec.Command("go", "test", "-c", "-o", tmp.Name(), ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go test -c: %v\n%s", err, out)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

// sweep removes the copies in dir whose package directory no longer
// exists. Errors are ignored: another process may be sweeping too.
func sweep(dir string) {
	marks, _ := filepath.Glob(filepath.Join(dir, "*.test.dir"))
	for _, m := range marks {
		src, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		if _, err := os.Stat(string(src)); errors.Is(err, fs.ErrNotExist) {
			os.Remove(strings.TrimSuffix(m, ".dir"))
			os.Remove(m)
		}
	}
}

// Moved runs t in a copy of the package's test binary built without the
// race detector (Binary), when this binary has it and is not that copy,
// and then reports true: t's own body must not run here. value (not
// empty) reaches the copy through Copy. t fails when it fails in the copy,
// or did not run there.
func Moved(t *testing.T, value string) bool {
	t.Helper()
	if !Enabled {
		return false
	}
	if _, copied := Copy(); copied {
		return false
	}
	cmd := exec.Command(Binary(t), "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+value)
	out, err := cmd.CombinedOutput()
	t.Logf("without the race detector:\n%s", out)
	if err != nil {
		t.Fatalf("the test failed without the race detector: %v", err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name()+" ")) {
		t.Fatal("the test did not run without the race detector")
	}
	return true
}
