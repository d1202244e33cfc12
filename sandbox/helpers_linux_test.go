package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestMain removes what hostileBin built.
func TestMain(m *testing.M) {
	code := m.Run()
	if hostileDir != "" {
		os.RemoveAll(hostileDir)
	}
	os.Exit(code)
}

// hostileDir holds hostileBin's build, once it was made.
var hostileDir string

// hostileBin is testdata/hostile built once for the test binary.
var hostileBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "nmhost-hostile-")
	if err != nil {
		return "", err
	}
	hostileDir = dir
	out := filepath.Join(dir, "hostile")
	cmd := exec.Command("go", "build", "-o", out, "./testdata/hostile")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", &exec.Error{Name: "go build: " + string(b), Err: err}
	}
	return out, nil
})

// workspaceWithHostile is a new workspace holding the hostile program.
func workspaceWithHostile(t *testing.T) string {
	t.Helper()
	bin, err := hostileBin()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hostile"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// run runs argv in a sandbox over ws and fails the test when the
// sandbox could not be made.
func run(t *testing.T, cfg Config, argv ...string) Result {
	t.Helper()
	res, err := Run(context.Background(), cfg, argv)
	if err != nil {
		t.Fatalf("Run(%q): %v", argv, err)
	}
	return res
}

// canary is a file outside every workspace that the sandbox can see
// (under /var/tmp, which the sandbox binds read-only) and that anyone
// could write on the host (mode 0666 in a 0777 directory): only the
// sandbox's read-only mounts keep it as it is.
func canary(t *testing.T) (dir, file string) {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "nmhost-canary-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "canary")
	if err := os.WriteFile(file, []byte("canary"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func untouched(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil || string(b) != "canary" {
		t.Fatalf("the canary %s is %q (%v), not as it was", file, b, err)
	}
}

// leftovers are the host's processes whose command line holds marker.
func leftovers(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
