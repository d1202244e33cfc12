package norace

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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

// Moved runs t in a copy of the package's test binary built without the
// race detector, when this binary has it and is not that copy, and then
// reports true: t's own body must not run here. value (not empty) reaches
// the copy through Copy. t fails when it fails in the copy, or did not run
// there.
func Moved(t *testing.T, value string) bool {
	t.Helper()
	if !Enabled {
		return false
	}
	if _, copied := Copy(); copied {
		return false
	}
	bin := filepath.Join(t.TempDir(), "norace.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
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
