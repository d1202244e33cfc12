package shell

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/sandbox"
)

// programDecisions keeps every decision of a shell, in order.
type programDecisions struct{ steps []string }

func (d *programDecisions) record(_ context.Context, step mediator.ShellStep, dec mediator.Decision) error {
	d.steps = append(d.steps, strings.Join(step.Argv, " ")+" "+string(dec.Code))
	return nil
}

// TestProgramsRunAtHighOnly: a command that is not built in runs as a
// program in the sandbox at high, programDecisions and recorded before it runs;
// below high it is shell_not_allowed as before, and nothing ran.
func TestProgramsRunAtHighOnly(t *testing.T) {
	for _, tc := range []struct {
		level, line, want string
		code              mediator.Code
		decisions         []string
	}{
		{"high", "sh -c 'echo made-by-a-program > made.txt; cat a.txt | wc -l'", "3\n", "", []string{"sh -c echo made-by-a-program > made.txt; cat a.txt | wc -l allowed"}},
		{"high", "git init -q repo && git -C repo status --short | wc -l && cat made.txt", "0\n", mediator.CodeNotFound, []string{"git init -q repo allowed", "git -C repo status --short allowed", "wc -l allowed", "cat made.txt"}},
		{"high", "sh -c 'exit 3' || echo failed", "failed\n", "", []string{"sh -c exit 3 allowed", " allowed"}},
		{"high", "sh -c 'echo redirected' > out.txt && cat out.txt", "redirected\n", "", []string{"sh -c echo redirected allowed", " allowed"}},
		{"high", "sh -c 'cat' < a.txt", "alpha\nbeta\ngamma\n", "", []string{"sh -c cat allowed"}},
		{"medium", "sh -c 'echo made-by-a-program > made.txt'", "", mediator.CodeShellNotAllowed, []string{"sh -c echo made-by-a-program > made.txt shell_not_allowed"}},
		{"low", "git init", "", mediator.CodeShellNotAllowed, []string{"git init shell_not_allowed"}},
		// A refused program is never worked around by ||.
		{"medium", "git init || echo no", "", mediator.CodeShellNotAllowed, []string{"git init shell_not_allowed"}},
	} {
		t.Run(tc.level+"/"+tc.line, func(t *testing.T) {
			f := newFixture(t)
			rec := &programDecisions{}
			sh := &Shell{WS: f.ws, Decide: AtLevel(tc.level, rec.record), Programs: &Programs{}}
			var out bytes.Buffer
			err := sh.Run(context.Background(), tc.line, &out)
			if mediator.CodeOf(err) != tc.code && !(tc.code == "" && err == nil) {
				t.Fatalf("err %v; want %s (output %q)", err, tc.code, out.String())
			}
			if !strings.HasSuffix(out.String(), tc.want) {
				t.Fatalf("output %q; want %q at its end", out.String(), tc.want)
			}
			if len(rec.steps) == 0 || rec.steps[0] != tc.decisions[0] {
				t.Fatalf("decisions %q; want %q first", rec.steps, tc.decisions[0])
			}
			_, made := os.Stat(filepath.Join(f.dir, "made.txt"))
			if tc.code == mediator.CodeShellNotAllowed && made == nil {
				t.Fatal("a refused program ran")
			}
		})
	}
}

// TestAProgramsWritesAreInTheLedger: what a program leaves counts
// against the workspace's quota as a built-in's writes do.
func TestAProgramsWritesAreInTheLedger(t *testing.T) {
	f := newFixture(t)
	_, before := f.ws.Usage()
	sh := &Shell{WS: f.ws, Decide: AtLevel("high", nil), Programs: &Programs{}}
	if err := sh.Run(context.Background(), "sh -c 'mkdir d && echo x > d/y'", &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if _, after := f.ws.Usage(); after != before+2 {
		t.Fatalf("%d entries, want %d", after, before+2)
	}
}

// TestWithoutTheSandboxNoProgramRuns: on a host without bubblewrap a
// high shell refuses a program with sandbox_unavailable, on record; a
// shell not given Programs refuses it as a command outside the set.
func TestWithoutTheSandboxNoProgramRuns(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no bwrap on it
	for _, tc := range []struct {
		name     string
		programs *Programs
		want     string
	}{
		{"a shell that runs programs", &Programs{}, "git init sandbox_unavailable"},
		{"a shell that runs none", nil, " shell_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := &programDecisions{}
			sh := &Shell{WS: f.ws, Decide: AtLevel("high", rec.record), Programs: tc.programs}
			err := sh.Run(context.Background(), "git init", &bytes.Buffer{})
			code := strings.Fields(tc.want)[len(strings.Fields(tc.want))-1]
			if string(mediator.CodeOf(err)) != code || len(rec.steps) != 1 || rec.steps[0] != tc.want {
				t.Fatalf("err %v, decisions %q", err, rec.steps)
			}
		})
	}
}

// TestHostileProgramsAreDecidedBoundedAndRecorded: hostile programs run
// through a high shell are each decided before they run and leave their
// outcome on record, end contained (the canary file and server
// untouched) and bounded, and leave no process behind.
func TestHostileProgramsAreDecidedBoundedAndRecorded(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	dir, err := os.MkdirTemp("/var/tmp", "nmhost-shell-canary-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	canary := filepath.Join(dir, "canary")
	if err := os.WriteFile(canary, []byte("canary"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(canary, 0o666)
	marker := fmt.Sprintf("%d.%d", 5000+os.Getpid()%1000, time.Now().UnixNano()%1e6)
	for _, tc := range []struct {
		name, line string
		outcome    mediator.Code
	}{
		{"write outside through a symlink", "sh -c 'ln -s " + canary + " l && echo x > l'", mediator.CodeExitNonZero},
		{"a hard link to a file outside", "ln " + canary + " hl", mediator.CodeExitNonZero},
		{"connect to another loopback port", "curl -sS --max-time 5 " + srv.URL, mediator.CodeExitNonZero},
		{"10 GiB of output", "sh -c 'head -c 10G /dev/zero'", mediator.CodeTooLarge},
		{"a daemon outliving the run", "sh -c 'setsid sleep " + marker + " >/dev/null 2>&1 & echo started'", ""},
		// The bombs stop at the process limit; the shell either dies of
		// "Cannot fork" or sleeps until the run's time is up, and the
		// bombs end with the run either way.
		{"a fork bomb", "sh -c 'b() { b | b & }; b; sleep 30 # " + marker + "'", mediator.CodeTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var log []string
			decide := func(_ context.Context, step mediator.ShellStep) (func(error), error) {
				d := mediator.DecideShell("high", step)
				log = append(log, "decided "+step.Command+" "+string(d.Code))
				if !d.Allowed {
					return nil, d.Err()
				}
				return func(err error) { log = append(log, "ran "+step.Command+" "+string(mediator.CodeOf(err))) }, nil
			}
			sh := &Shell{WS: f.ws, Decide: decide, Programs: &Programs{Limits: sandbox.Limits{Processes: 48, Wall: 3 * time.Second}}}
			start := time.Now()
			err := sh.Run(context.Background(), tc.line, &bytes.Buffer{})
			if tc.outcome == mediator.CodeTimeout && mediator.CodeOf(err) == mediator.CodeExitNonZero {
				tc.outcome = mediator.CodeExitNonZero // the bomb's shell died of its limit first
			}
			if mediator.CodeOf(err) != tc.outcome && !(tc.outcome == "" && err == nil) {
				t.Fatalf("err %v; want %s", err, tc.outcome)
			}
			name := strings.Fields(tc.line)[0]
			if want := []string{"decided " + name + " allowed", "ran " + name + " " + string(tc.outcome)}; strings.Join(log, "|") != strings.Join(want, "|") {
				t.Fatalf("on record %q; want %q", log, want)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("took %v", d)
			}
			if b, err := os.ReadFile(canary); err != nil || string(b) != "canary" {
				t.Fatalf("the canary is %q (%v)", b, err)
			}
			if hits.Load() != 0 {
				t.Fatal("the canary server was reached")
			}
			if left := sandboxLeftovers(marker); len(left) != 0 {
				t.Fatalf("outlived the run: %q", left)
			}
		})
	}
}

// sandboxLeftovers are the host's processes whose command line holds
// marker.
func sandboxLeftovers(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, e.Name())
		}
	}
	return out
}
