package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTenGiBOfOutputIsCutAndKilled(t *testing.T) {
	ws := t.TempDir()
	start := time.Now()
	res := run(t, Config{Workspace: ws, Limits: Limits{Output: 64 << 10}}, "head", "-c", "10G", "/dev/zero")
	if !res.OutputCut || len(res.Output) != 64<<10 || res.Exit != -1 {
		t.Fatalf("cut=%v, %d bytes, exit %d", res.OutputCut, len(res.Output), res.Exit)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the run took %v: it was not killed at the limit", d)
	}
}

func TestEveryProcessDiesWithTheRun(t *testing.T) {
	tests := []struct {
		name   string
		script string
		limits Limits
		// timedOut: the run is killed at Limits.Wall rather than ending.
		timedOut bool
	}{
		{"a daemon that double-forks outlives a finished run", "( ( exec sleep %s ) & ) ; echo started", Limits{}, false},
		{"a setsid daemon outlives a finished run", "setsid sh -c 'exec sleep %s' </dev/null >/dev/null 2>&1 & echo started", Limits{}, false},
		{"a run past its time", "( setsid sh -c 'exec sleep %s' & ) ; exec sleep %[1]s", Limits{Wall: time.Second}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The init's end races Run's return unless Run waits for it:
			// a few runs each.
			for range 4 {
				everyProcessDies(t, i, tt.script, tt.limits, tt.timedOut)
			}
		})
	}
}

func everyProcessDies(t *testing.T, i int, script string, limits Limits, timedOut bool) {
	t.Helper()
	// A sleep of a length no other process has marks the
	// processes of this run among the host's.
	marker := fmt.Sprintf("%d.%d%d", 4000+i, os.Getpid(), time.Now().UnixNano()%1e6)
	res := run(t, Config{Workspace: t.TempDir(), Limits: limits}, "sh", "-c", fmt.Sprintf(script, marker))
	if res.TimedOut != timedOut {
		t.Fatalf("timed out %v, want %v (%+v, %q)", res.TimedOut, timedOut, res, res.Output)
	}
	if !timedOut && (res.Exit != 0 || !strings.Contains(string(res.Output), "started")) {
		t.Fatalf("exit %d, output %q", res.Exit, res.Output)
	}
	// Run returns once the sandbox's init has exited, and the kernel
	// reaps every process of its PID namespace before that: nothing of
	// the run is left.
	if left := leftovers("sleep\x00" + marker); len(left) != 0 {
		t.Fatalf("processes outlived the run: %q", left)
	}
}

func TestTheContextEndsTheRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan Result, 1)
	ws := t.TempDir()
	go func() {
		r, err := Run(ctx, Config{Workspace: ws}, []string{"sh", "-c", "echo up > up; exec sleep 600"})
		if err != nil {
			t.Error(err)
		}
		res <- r
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(ws, "up")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the program never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if r := <-res; !r.TimedOut {
		t.Fatalf("%+v", r)
	}
}

func TestLimitsBindTheProgram(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		script string
		check  func(t *testing.T, res Result)
	}{
		{"a fork bomb stops at the process limit", Limits{Processes: 48, Wall: 3 * time.Second},
			`b() { b | b & }; b; sleep 1 # fork-bomb-marker`,
			func(t *testing.T, res Result) {
				if !strings.Contains(string(res.Output), "Cannot fork") {
					t.Fatalf("%+v %q", res, res.Output)
				}
				if left := leftovers("fork-bomb-marker"); len(left) != 0 {
					t.Fatalf("%d processes of the bomb outlived the run", len(left))
				}
			}},
		{"processes past the limit are refused", Limits{Processes: 24},
			`exec perl -e 'my $n = 0; for (1..60) { my $p = fork; last unless defined $p; if ($p == 0) { sleep 30; exit } $n++ } print "$n\n"'`,
			func(t *testing.T, res Result) {
				n, err := strconv.Atoi(strings.TrimSpace(string(res.Output)))
				if err != nil || n < 1 || n >= 24 {
					t.Fatalf("%d processes started (%q), the limit is 24", n, res.Output)
				}
			}},
		{"a memory bomb fails to allocate", Limits{Memory: 64 << 20},
			// 200 MiB in one string: the same line prints 209715200 under
			// the default limit (2 GiB).
			`exec perl -e '$x = "x" x (200*1024*1024); print length($x), "\n"'`,
			func(t *testing.T, res Result) {
				if res.Exit == 0 || !strings.Contains(string(res.Output), "Out of memory") {
					t.Fatalf("%+v %q", res, res.Output)
				}
			}},
		{"CPU time runs out", Limits{CPU: time.Second, Wall: time.Minute},
			`while :; do :; done`,
			func(t *testing.T, res Result) {
				// SIGXCPU (24) at the soft limit; the shell's loop dies
				// of it.
				if res.Exit != 128+24 && res.Exit != 128+9 {
					t.Fatalf("%+v %q", res, res.Output)
				}
			}},
		{"a file past the size limit", Limits{FileSize: 1 << 20},
			`head -c 2M /dev/zero > big; echo $?; wc -c < big`,
			func(t *testing.T, res Result) {
				if !strings.HasSuffix(string(res.Output), "1048576\n") {
					t.Fatalf("%q", res.Output)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, Config{Workspace: t.TempDir(), Limits: tt.limits}, "sh", "-c", tt.script)
			tt.check(t, res)
		})
	}
}

// TestHiddenPathsAreNotThere puts a data directory (nmhost.db, the
// signing key) and a credential folder where the sandbox's user could
// read them, and checks that the sandbox shows neither, while a sibling
// that is not hidden is read: the test can see what it checks.
func TestHiddenPathsAreNotThere(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "nmhost-hidden-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	data, creds, open := filepath.Join(base, "data"), filepath.Join(base, "home", ".ssh"), filepath.Join(base, "open")
	for _, d := range []string{data, creds, open} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(data, "nmhost.db"), filepath.Join(data, "audit.key"), filepath.Join(creds, "id_ed25519"), filepath.Join(open, "visible")} {
		if err := os.WriteFile(f, []byte("secret"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o755|0o044) }); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(base, "home"))
	res := run(t, Config{Workspace: t.TempDir(), Hide: []string{data}}, "sh", "-c",
		"cat "+filepath.Join(open, "visible")+"; echo; for f in "+data+"/nmhost.db "+data+"/audit.key "+creds+"/id_ed25519; do cat $f && echo LEAKED; done; ls -A "+data+" "+creds+"; echo end")
	out := string(res.Output)
	if !strings.HasPrefix(out, "secret\n") || strings.Contains(out, "LEAKED") || strings.Contains(out, "nmhost.db\n") || !strings.HasSuffix(out, "end\n") {
		t.Fatalf("output %q", out)
	}
}
