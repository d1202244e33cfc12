package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRunsAProgramInTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := run(t, Config{Workspace: ws, Dir: "sub"}, "sh", "-c", "pwd; echo made > ../made.txt; echo to-stderr >&2; exit 3")
	if res.Exit != 3 || res.TimedOut || res.OutputCut {
		t.Fatalf("result %+v", res)
	}
	if got := string(res.Output); got != "/workspace/sub\nto-stderr\n" {
		t.Fatalf("output %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "made\n" {
		t.Fatalf("the workspace holds %q (%v)", b, err)
	}
}

func TestTheSandboxsOwnRules(t *testing.T) {
	ws := t.TempDir()
	res := run(t, Config{Workspace: ws}, "sh", "-c", `grep -E '^(NoNewPrivs|Seccomp|CapEff|CapPrm):' /proc/self/status; ulimit -t; ulimit -v; ulimit -p 2>/dev/null || ulimit -u; ulimit -n; ulimit -f; hostname; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; env | sort`)
	out := string(res.Output)
	l := DefaultLimits()
	for _, want := range []string{
		"NoNewPrivs:\t1", "Seccomp:\t2", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000",
		"\n" + strconv.FormatInt(int64(l.CPU/time.Second), 10) + "\n",
		"\n" + strconv.FormatInt(l.Memory/1024, 10) + "\n",
		"\n" + strconv.Itoa(l.Processes) + "\n",
		"\n" + strconv.Itoa(l.OpenFiles) + "\n",
		"\n" + strconv.FormatInt(l.FileSize/512, 10) + "\n",
		"nmhost-sandbox\nlo\n", "HOME=/tmp\n", "PATH=/usr/local/bin:/usr/bin:/bin\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the sandbox's report lacks %q:\n%s", want, out)
		}
	}
	// Nothing of the host's environment reaches the program.
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k != "HOME" && k != "PATH" && k != "LANG" && k != "TERM" && k != "TMPDIR" && k != "PWD" && strings.Contains(out, "\n"+k+"=") {
			t.Errorf("the host's %s reached the program", k)
		}
	}
}

// TestHostileProgramsAreContained is the table of hostile
// programs that the sandbox alone must hold: each is contained (its
// canary untouched, its target unreached), bounded, and ended.
func TestHostileProgramsAreContained(t *testing.T) {
	dir, file := canary(t)
	outsideName := filepath.Join(dir, "new")
	tests := []struct {
		name string
		argv []string
		// want is in the output; the exit status is not 0 unless ok.
		want string
		ok   bool
	}{
		{"write outside by its name", []string{"./hostile", "write", file}, "read-only file system", false},
		{"create a file outside", []string{"./hostile", "write", outsideName}, "read-only file system", false},
		{"write outside through a symlink", []string{"sh", "-c", "ln -s " + file + " link && ./hostile write link"}, "read-only file system", false},
		{"write outside through /proc/self/root", []string{"./hostile", "write", "/proc/self/root" + file}, "read-only file system", false},
		{"write outside through /proc/<pid>/cwd", []string{"sh", "-c", "cd " + dir + " && exec /workspace/hostile write /proc/$$/cwd/canary"}, "read-only file system", false},
		{"hard link to a file outside", []string{"./hostile", "link", file, "hl"}, "invalid cross-device link", false},
		{"raw socket", []string{"./hostile", "raw"}, "operation not permitted", false},
		{"packet socket", []string{"./hostile", "packet"}, "operation not permitted", false},
		{"ptrace its parent", []string{"sh", "-c", "exec ./hostile ptrace $PPID"}, "operation not permitted", false},
		{"unshare a user namespace", []string{"./hostile", "unshare-user"}, "operation not permitted", false},
		{"unshare a mount namespace", []string{"./hostile", "unshare-mount"}, "operation not permitted", false},
		{"clone into a user namespace", []string{"./hostile", "clone-user"}, "operation not permitted", false},
		{"mount a tmpfs", []string{"./hostile", "mount", "/workspace"}, "operation not permitted", false},
		{"bind mount the outside in", []string{"./hostile", "bind", dir, "/workspace"}, "operation not permitted", false},
		{"make a device node", []string{"./hostile", "mknod", "/workspace/null"}, "operation not permitted", false},
		{"keyctl", []string{"./hostile", "keyctl"}, "operation not permitted", false},
		{"bpf", []string{"./hostile", "bpf"}, "operation not permitted", false},
		{"run as the sandbox's user, never root", []string{"./hostile", "euid"}, sandboxUser() + "\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspaceWithHostile(t)
			res := run(t, Config{Workspace: ws}, tt.argv...)
			out := strings.ToLower(string(res.Output))
			if tt.ok != (res.Exit == 0) || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, output %q; want ok=%v and %q", res.Exit, res.Output, tt.ok, tt.want)
			}
			untouched(t, file)
			if _, err := os.Lstat(outsideName); err == nil {
				t.Fatalf("%s was created outside the workspace", outsideName)
			}
		})
	}
}

// sandboxUser is the user a run is as: the host's, or nobody when the
// host is root.
func sandboxUser() string {
	if os.Getuid() == 0 {
		return strconv.Itoa(rootUID)
	}
	return strconv.Itoa(os.Getuid())
}

// TestASetuidBinaryGivesNothing: a setuid-root program the sandbox can
// see runs as the sandbox's user (no new privileges, nosuid mounts). As
// root the test makes one; otherwise it checks that every mount the
// program sees is nosuid, which is what makes any setuid file inert.
func TestASetuidBinaryGivesNothing(t *testing.T) {
	ws := workspaceWithHostile(t)
	res := run(t, Config{Workspace: ws}, "sh", "-c", "awk '{print $6}' /proc/self/mountinfo | grep -vc nosuid")
	if strings.TrimSpace(string(res.Output)) != "0" {
		t.Fatalf("%s mounts without nosuid", res.Output)
	}
	if os.Getuid() != 0 {
		return
	}
	dir, _ := canary(t)
	b, err := os.ReadFile(filepath.Join(ws, "hostile"))
	if err != nil {
		t.Fatal(err)
	}
	suid := filepath.Join(dir, "suid")
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755); err != nil {
		t.Fatal(err)
	}
	res = run(t, Config{Workspace: ws}, suid, "euid")
	if string(res.Output) != sandboxUser()+"\n" {
		t.Fatalf("the setuid-root program ran as %q", res.Output)
	}
}
