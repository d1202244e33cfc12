package shell

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
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
