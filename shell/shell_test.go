package shell

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

type fixture struct {
	ws      *workspace.Workspace
	dir     string
	outside string // a directory outside the workspace with sample.txt
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	os.MkdirAll(outside, 0o700)
	os.WriteFile(filepath.Join(outside, "sample.txt"), []byte("outside line\n"), 0o600)
	ws, err := workspace.Open(filepath.Join(base, "ws"), workspace.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	for name, body := range map[string]string{"a.txt": "alpha\nbeta\ngamma\n", "b.txt": "one two three\n", "notes/n1.md": "# one\nTODO x\n"} {
		ws.Mkdir("notes", true)
		if err := ws.WriteFile(name, []byte(body), false); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{ws: ws, dir: filepath.Join(base, "ws"), outside: outside}
}

func (f *fixture) run(t *testing.T, level, line string) (string, error) {
	t.Helper()
	root, err := os.OpenRoot("/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	sh := &Shell{WS: f.ws, Decide: AtLevel(level, nil), Outside: root}
	var out bytes.Buffer
	err = sh.Run(context.Background(), line, &out)
	return out.String(), err
}

func TestCommands(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ line, want string }{
		{"ls", "a.txt\nb.txt\nnotes\n"},
		{"ls notes", "n1.md\n"},
		{"cat a.txt", "alpha\nbeta\ngamma\n"},
		{"head -n 1 a.txt", "alpha\n"},
		{"tail -n 2 a.txt", "beta\ngamma\n"},
		{"wc -l a.txt", "3 a.txt\n"},
		{"grep -n TODO notes/n1.md", "2:TODO x\n"},
		{"grep -c a a.txt", "3\n"},
		{"grep -r TODO notes", "TODO x\n"},
		{"find . -name '*.md'", "notes/n1.md\n"},
		{"cat *.txt | wc -l", "4\n"},
		{"echo hi > c.txt && cat c.txt", "hi\n"},
		{"echo more >> c.txt; cat c.txt", "hi\nmore\n"},
		{"cp a.txt d.txt && head -n 1 d.txt", "alpha\n"},
		{"mv d.txt e.txt && ls", "a.txt\nb.txt\nc.txt\ne.txt\nnotes\n"},
		{"rm e.txt c.txt && ls", "a.txt\nb.txt\nnotes\n"},
		{"mkdir -p x/y && touch x/y/z && find x -type f", "x/y/z\n"},
		{"rm -r x; ls", "a.txt\nb.txt\nnotes\n"},
		{"pwd", "/workspace\n"},
		{"cat /workspace/b.txt", "one two three\n"},
		{`echo "a b" 'c d' e\ f`, "a b c d e f\n"},
		{"cat missing.txt || echo fallback", "fallback\n"},
		{"grep -c x < a.txt", "0\n"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := f.run(t, "medium", tc.line)
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestHostileCommandLines: every construct outside the shell's set is
// refused with its code before anything runs, and the outside file is
// never touched.
func TestHostileCommandLines(t *testing.T) {
	f := newFixture(t)
	sample := filepath.Join(f.outside, "sample.txt")
	for _, tc := range []struct {
		level, line string
		code        mediator.Code
	}{
		{"high", "cat $(echo a.txt)", mediator.CodeShellNotAllowed},
		{"high", "cat `echo a.txt`", mediator.CodeShellNotAllowed},
		{"high", "cat $HOME/.ssh/id_rsa", mediator.CodeShellNotAllowed},
		{"high", `cat "$HOME"`, mediator.CodeShellNotAllowed},
		{"high", "cat ~/.bashrc", mediator.CodeShellNotAllowed},
		{"high", "echo $((1+1))", mediator.CodeShellNotAllowed},
		{"high", "X=1 ls", mediator.CodeShellNotAllowed},
		{"high", "ls &", mediator.CodeShellNotAllowed},
		{"high", "(ls)", mediator.CodeShellNotAllowed},
		{"high", "{ ls; }", mediator.CodeShellNotAllowed},
		{"high", "f() { ls; }", mediator.CodeShellNotAllowed},
		{"high", "if true; then ls; fi", mediator.CodeShellNotAllowed},
		{"high", "sh -c ls", mediator.CodeShellNotAllowed},
		{"high", "bash", mediator.CodeShellNotAllowed},
		{"high", "ls; curl http://127.0.0.1/", mediator.CodeShellNotAllowed},
		{"high", "ls && python3 -c 1", mediator.CodeShellNotAllowed},
		{"high", "cat a.txt 2> err.txt", mediator.CodeShellNotAllowed},
		{"high", "cat a.txt > " + sample, mediator.CodePathNotAllowed},
		{"high", "cp a.txt " + sample, mediator.CodePathNotAllowed},
		{"high", "echo x >> " + sample, mediator.CodePathNotAllowed},
		{"high", "rm " + sample, mediator.CodePathNotAllowed},
		{"high", "mv a.txt " + sample, mediator.CodePathNotAllowed},
		{"high", "cat ../outside/sample.txt", mediator.CodePathNotAllowed},
		{"high", "echo x > ../outside/sample.txt", mediator.CodePathNotAllowed},
		{"high", "ls " + f.outside, mediator.CodePathNotAllowed},
		{"high", "cat " + f.outside + "/*", mediator.CodePathNotAllowed},
		{"high", "rm x || rm " + sample, mediator.CodePathNotAllowed},
		{"medium", "cat " + sample, mediator.CodeSessionLevel},
		{"medium", "cp " + sample + " in.txt", mediator.CodeSessionLevel},
		{"low", "wc a.txt", mediator.CodeSessionLevel},
		{"low", "grep a a.txt", mediator.CodeSessionLevel},
		{"low", "cat a.txt | wc -l", mediator.CodeSessionLevel},
		{"medium", "cat a.txt\x00", mediator.CodeShellNotAllowed},
		{"medium", "cat 'unterminated", mediator.CodeShellNotAllowed},
		{"medium", "", mediator.CodeShellNotAllowed},
		{"medium", "cat nothing-*.txt", mediator.CodeNotFound},
		{"medium", "grep '(' a.txt", mediator.CodeBadRequest},
		{"medium", "ls --color", mediator.CodeBadRequest},
		{"bogus", "ls", mediator.CodeInvalidLevel},
	} {
		t.Run(tc.level+"/"+mediator.Truncate(tc.line, 50), func(t *testing.T) {
			_, err := f.run(t, tc.level, tc.line)
			if mediator.CodeOf(err) != tc.code {
				t.Fatalf("%v; want %s", err, tc.code)
			}
			if b, _ := os.ReadFile(sample); string(b) != "outside line\n" {
				t.Fatalf("the outside file became %q", b)
			}
		})
	}
}

// TestHighSessionReadsOutside is the model's case: at high, an outside
// file is copied in; the reverse copy to an outside destination is
// denied at every level.
func TestHighSessionReadsOutside(t *testing.T) {
	f := newFixture(t)
	sample := filepath.Join(f.outside, "sample.txt")
	if out, err := f.run(t, "high", "cp "+sample+" imported.txt && cat imported.txt"); err != nil || out != "outside line\n" {
		t.Fatalf("%q %v", out, err)
	}
	for _, level := range []string{"low", "medium", "high"} {
		dst := filepath.Join(f.outside, "exported.txt")
		if _, err := f.run(t, level, "cp a.txt "+dst); mediator.CodeOf(err) != mediator.CodePathNotAllowed {
			t.Fatalf("%s: %v", level, err)
		}
		if _, err := os.Stat(dst); err == nil {
			t.Fatalf("%s: the outside destination exists", level)
		}
	}
	if out, err := f.run(t, "low", "ls"); err != nil || !strings.Contains(out, "imported.txt") {
		t.Fatalf("%q %v", out, err)
	}
}

// TestNoDeciderRunsNothing: a shell nobody decides for refuses every
// command, and changes nothing.
func TestNoDeciderRunsNothing(t *testing.T) {
	f := newFixture(t)
	sh := &Shell{WS: f.ws}
	var out bytes.Buffer
	err := sh.Run(context.Background(), "echo x > new.txt", &out)
	if mediator.CodeOf(err) != mediator.CodeShellNotAllowed {
		t.Fatalf("%v", err)
	}
	if _, err := f.ws.Stat("new.txt"); mediator.CodeOf(err) != mediator.CodeNotFound {
		t.Fatalf("new.txt: %v", err)
	}
}

// decided is one call of a test Decider and its outcome.
type decided struct {
	step    mediator.ShellStep
	outcome error
	ran     bool
}

// TestDeciderSeesPaths: each command is put to Decide with the names it
// reads and writes (patterns expanded, workspace names relative, outside
// names absolute and cleaned), and done hears how it went. A refusal from
// Decide is never worked around with ||.
func TestDeciderSeesPaths(t *testing.T) {
	f := newFixture(t)
	sample := filepath.Join(f.outside, "sample.txt")
	for _, tc := range []struct {
		name, line string
		refuse     string // a command Decide refuses
		want       [][]string
		outcomes   []mediator.Code
	}{
		{"glob", "cat *.txt", "", [][]string{{"a.txt", "b.txt"}}, []mediator.Code{""}},
		{"workspace prefix", "cat /workspace/a.txt > c.txt", "", [][]string{{"a.txt", "c.txt"}}, []mediator.Code{""}},
		{"outside cleaned", "cp " + f.outside + "/../outside/sample.txt in.txt", "", [][]string{{sample, "in.txt"}}, []mediator.Code{""}},
		{"rm", "rm in.txt c.txt", "", [][]string{{"in.txt", "c.txt"}}, []mediator.Code{""}},
		{"failure reaches done", "cat missing.txt || echo x", "", [][]string{{"missing.txt"}, nil}, []mediator.Code{mediator.CodeNotFound, ""}},
		{"refusal is not worked around", "rm a.txt || cat b.txt", "rm", [][]string{{"a.txt"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []*decided
			decide := func(_ context.Context, s mediator.ShellStep) (func(error), error) {
				d := &decided{step: s}
				calls = append(calls, d)
				if s.Command == tc.refuse {
					return nil, mediator.Errorf(mediator.CodeUserDenied, "no")
				}
				return func(err error) { d.ran, d.outcome = true, err }, nil
			}
			root, _ := os.OpenRoot("/")
			defer root.Close()
			sh := &Shell{WS: f.ws, Decide: decide, Outside: root}
			err := sh.Run(context.Background(), tc.line, &bytes.Buffer{})
			if tc.refuse != "" && mediator.CodeOf(err) != mediator.CodeUserDenied {
				t.Fatalf("%v; want user_denied", err)
			}
			if len(calls) != len(tc.want) {
				t.Fatalf("%d decisions; want %d", len(calls), len(tc.want))
			}
			for i, c := range calls {
				if strings.Join(c.step.Paths, ",") != strings.Join(tc.want[i], ",") {
					t.Errorf("step %d paths %q; want %q", i, c.step.Paths, tc.want[i])
				}
				if tc.outcomes == nil {
					if c.ran {
						t.Errorf("step %d ran after a refusal", i)
					}
					continue
				}
				if !c.ran || mediator.CodeOf(c.outcome) != tc.outcomes[i] {
					t.Errorf("step %d: ran %v, outcome %v; want %q", i, c.ran, c.outcome, tc.outcomes[i])
				}
			}
			if _, err := f.ws.Stat("a.txt"); err != nil {
				t.Fatalf("a.txt: %v", err)
			}
		})
	}
}
