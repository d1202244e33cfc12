package cli

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// runMain runs nmhost with args against a data dir that does not exist
// yet, and returns its exit status, stdout and stderr.
func runMain(t *testing.T, dataDir string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := map[string]string{"NMHOST_DATA_DIR": dataDir}
	code := Main(Env{Args: args, Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return env[k] }})
	return code, stdout.String(), stderr.String()
}

// TestEveryCommandAnswersHelp: --help and -h print the command's help on
// stdout and exit 0, with its positional arguments and examples, and run
// nothing (the data dir is never made). Every flag the command takes is
// in the synopsis the top-level help shows.
func TestEveryCommandAnswersHelp(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	flagLine := regexp.MustCompile(`(?m)^  (--?[a-z-]+)`)
	for _, s := range specs {
		for _, h := range []string{"--help", "-h"} {
			args := append(strings.Fields(s.name), h)
			code, out, errOut := runMain(t, dataDir, args...)
			if code != 0 || errOut != "" {
				t.Errorf("nmhost %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
				continue
			}
			if !strings.HasPrefix(out, "Usage: "+s.usageLine()+"\n") {
				t.Errorf("nmhost %s: help starts %q", strings.Join(args, " "), out[:min(len(out), 80)])
			}
			for _, a := range s.args {
				if !strings.Contains(out, "\n  "+a[0]) {
					t.Errorf("nmhost %s: help does not show the argument %s", strings.Join(args, " "), a[0])
				}
			}
			if !strings.Contains(out, "\nExamples:\n  ") {
				t.Errorf("nmhost %s: help has no examples", strings.Join(args, " "))
			}
			if h == "--help" {
				for _, m := range flagLine.FindAllStringSubmatch(out[strings.Index(out, "\n"):], -1) {
					if !strings.Contains(s.synopsis, m[1]) {
						t.Errorf("nmhost %s takes %s, which its synopsis %q does not show", s.name, m[1], s.synopsis)
					}
				}
			}
		}
	}
	for _, g := range []string{"prefs", "audit"} {
		for _, h := range []string{"--help", "-h"} {
			code, out, _ := runMain(t, dataDir, g, h)
			if code != 0 || !strings.Contains(out, "nmhost "+g+" ") {
				t.Errorf("nmhost %s %s: exit %d\n%s", g, h, code, out)
			}
		}
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Fatalf("a --help created the data dir: %v", err)
	}
}

// TestUsageErrorsExit2: the one line that is wrong, then where to look.
func TestUsageErrorsExit2(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"nope"}, {"prefs"}, {"prefs", "nope"}, {"audit"}, {"audit", "tail", "-n", "0"},
		{"denials", "--limit", "1001"}, {"denials", "--code", "nope"}, {"denials", "--permission", "nope"},
		{"run", "m.wasm"}, {"run", "--profile", "p.json"}, {"grant", "a"}, {"revoke", "a", "b", "c"},
		{"prefs", "revoke", "x"}, {"install"}, {"install", "--extension-id", "chrome-extension://" + strings.Repeat("a", 32) + "/"},
		{"serve", "--port", "-1"}, {"version", "now"}, {"demo", "--nope"}, {"help", "nope"},
	} {
		code, out, errOut := runMain(t, dataDir, args...)
		lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
		if code != 2 || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[1], "Run 'nmhost ") || !strings.HasSuffix(lines[1], "--help' for usage.") && !strings.HasSuffix(lines[1], "for the commands.") {
			t.Errorf("nmhost %s: exit %d, stdout %q, stderr %q; want 2, the error and a pointer to --help", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestCommandsDocTable: docs/commands.md's command table shows each
// command as `nmhost --help` does, and no command the host does not have.
func TestCommandsDocTable(t *testing.T) {
	readme, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(readme, []byte("\n## Commands\n"))
	if start < 0 {
		t.Fatal("docs/commands.md has no ## Commands section")
	}
	table := string(readme[start:])
	table = table[:strings.Index(table[1:], "\n## ")+1]
	// The table's markdown (code spans, links) aside, it says what the help says.
	table = strings.ReplaceAll(table, "`", "")
	table = regexp.MustCompile(`\[([^]]*)\]\([^)]*\)`).ReplaceAllString(table, "$1")
	for _, s := range specs {
		if row := "| " + s.usageLine() + " | " + s.summary + " |\n"; !strings.Contains(table, row) {
			t.Errorf("docs/commands.md's command table lacks the row\n%s", row)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^\| nmhost ([a-z]+(?: [a-z-]+)?)[ |]`).FindAllStringSubmatch(table, -1) {
		name := m[1]
		if !slices.ContainsFunc(specs, func(s *spec) bool { return s.name == name || strings.HasPrefix(name, s.name+" ") }) {
			t.Errorf("docs/commands.md's command table shows `nmhost %s`, which is no command", name)
		}
	}
}

// TestKnownCodesMatchMediator keeps --code's list equal to the constants
// of mediator/codes.go.
func TestKnownCodesMatchMediator(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../../mediator/codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				v, _ := strconv.Unquote(lit.Value)
				if v != string(mediator.CodeAllowed) {
					declared = append(declared, v)
				}
			}
		}
		return true
	})
	slices.Sort(declared)
	if got := codeNames(); !slices.Equal(got, declared) {
		t.Fatalf("knownCodes %v\nmediator/codes.go %v", got, declared)
	}
}

func TestClosest(t *testing.T) {
	fields := []string{"networkAccess", "allowedHosts", "maxMemory", "executionTimeout", "domAccess"}
	for name, want := range map[string]string{
		"domaccess": "domAccess", "alowedHosts": "allowedHosts", "AllowedHosts": "allowedHosts",
		"timeout": "", "zzz": "", "maxMem": "maxMemory",
	} {
		if got := closest(name, fields); got != want {
			t.Errorf("closest(%q) = %q; want %q", name, got, want)
		}
	}
}
