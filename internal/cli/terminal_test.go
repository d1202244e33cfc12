package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/shell"
)

// hostileNames are file names an agent can create that would rewrite a
// person's screen printed raw, and how the CLI prints each. (A backslash
// is escaped too, mediator's tests show; the workspace takes no name
// with one.)
var hostileNames = []struct{ raw, shown string }{
	{"clear\x1b[2J\x1b]0;title\x07.txt", `clear\x1b[2J\x1b]0;title\x07.txt`},
	{"ok\rEVIL.txt", `ok\rEVIL.txt`},
	{"two\nfake-line.txt", `two\nfake-line.txt`},
	{"report\u202etxt.exe", `report\u202etxt.exe`},
	{"nel\u0085.txt", `nel\u0085.txt`},
}

// assertInert fails when out holds a character a terminal would act on,
// other than the newlines and tabs of the output's own layout.
func assertInert(t *testing.T, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && r != '\t' && strings.ContainsRune(mediator.EscapeTerminal(string(r)), '\\') && r != '\\' {
			t.Fatalf("output holds U+%04X raw:\n%q", r, out)
		}
	}
}

// hostileWorkspace makes session s1 (medium) whose workspace holds a file
// of each hostile name, written as an agent's run would leave them.
func hostileWorkspace(t *testing.T) string {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "data")
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.UpdateSessionSettings(context.Background(), "s1", []byte(`{"permissionLevel":"medium"}`)); err != nil {
		t.Fatal(err)
	}
	for _, n := range hostileNames {
		if err := os.WriteFile(filepath.Join(st.SessionWorkspaceDir("s1"), n.raw), []byte("x\x1b[31mred\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dataDir
}

// TestShellPrintsNamesEscaped: every command of the person's shell that
// lists names prints an agent's hostile names escaped, one per line.
func TestShellPrintsNamesEscaped(t *testing.T) {
	dataDir := hostileWorkspace(t)
	for _, tc := range []struct{ name, command, lineFormat string }{
		{"ls", "ls", "%s"},
		{"ls -l", "ls -l", "-         10 %s"},
		{"ls -R", "ls -R", "%s"},
		{"find", "find . -type f", "%s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runMain(t, dataDir, "shell", "--session", "s1", "-c", tc.command)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(hostileNames) {
				t.Fatalf("%d lines; want one a name:\n%q", len(lines), out)
			}
			for _, n := range hostileNames {
				want := strings.Replace(tc.lineFormat, "%s", n.shown, 1)
				found := false
				for _, l := range lines {
					if l == want || l == "./"+want || strings.HasSuffix(l, "/"+n.shown) || strings.HasPrefix(l, "./"+n.shown+":") {
						found = true
					}
				}
				if !found {
					t.Errorf("no line %q in\n%q", want, out)
				}
			}
			// A file's contents (grep's matching lines) stay its bytes on
			// a pipe; only the names are escaped.
			if tc.name != "grep -r" {
				assertInert(t, out)
			}
		})
	}
}

// TestShellErrorNamesEscaped: a refusal naming a hostile file reaches the
// terminal escaped on stderr. A workspace never opens a name holding a
// control character (workspace.Clean), so commands that open each file by
// name (cat, grep -r, wc) refuse such a file, left by something other
// than an agent, with path_not_allowed, and say so inertly.
func TestShellErrorNamesEscaped(t *testing.T) {
	dataDir := hostileWorkspace(t)
	for _, command := range []string{"cat 'gone\x1b[2J'", "grep -r red .", "wc -l *"} {
		t.Run(command, func(t *testing.T) {
			code, _, errOut := runMain(t, dataDir, "shell", "--session", "s1", "-c", command)
			if code != 1 || !strings.Contains(errOut, "path_not_allowed") || !strings.Contains(errOut, `\x1b`) {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			assertInert(t, errOut)
		})
	}
}

// TestShellOutputToTerminal: to a terminal, a file's contents keep their
// lines and tabs but lose their escape sequences; to a pipe they are the
// file's bytes.
func TestShellOutputToTerminal(t *testing.T) {
	dataDir := hostileWorkspace(t)
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ws, err := st.OpenWorkspace("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteFile("page.txt", []byte("line 1\tcol\n\x1b[2J\rfake\u202e\nend\n"), false); err != nil {
		t.Fatal(err)
	}
	sh := &shell.Shell{WS: ws, Decide: shell.AtLevel(mediator.LevelMedium, nil), Names: mediator.EscapeTerminal}
	for _, tc := range []struct {
		name     string
		terminal bool
		command  string
		want     string
	}{
		{"cat to a terminal", true, "cat page.txt", "line 1\tcol\n\\x1b[2J\\rfake\\u202e\nend\n"},
		{"cat to a pipe", false, "cat page.txt", "line 1\tcol\n\x1b[2J\rfake\u202e\nend\n"},
		{"ls to a terminal", true, "ls", "ok\\rEVIL.txt\n"},
		{"ls to a pipe", false, "ls", "ok\\rEVIL.txt\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := shellOutput(context.Background(), sh, tc.command, &out, tc.terminal); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tc.want && !(strings.HasPrefix(tc.command, "ls") && strings.Contains(got, "\n"+tc.want)) {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

// TestListingsPrintAgentTextEscaped: nmhost denials, audit tail and prefs
// list print what agents chose (a reason, an agent's operation, a target)
// escaped in their text form, and as the same text in JSON.
func TestListingsPrintAgentTextEscaped(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	st, err := store.Open(dataDir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const hostile = "evil\x1b[2J\x1b]0;owned\x07\r\nfake row\u202e"
	const shown = `evil\x1b[2J\x1b]0;owned\x07\r\nfake row\u202e`
	if _, err := st.LogDenial(ctx, mediator.Denial{AgentID: "agent-1", Permission: "shell", Code: mediator.CodePathNotAllowed,
		Context: mediator.DenialContext{Reason: hostile, Details: map[string]string{"operation": "shell.cat " + hostile}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetPreference(ctx, mediator.Preference{AgentID: "agent-1", Operation: "page.write." + hostile, Target: hostile,
		Answer: mediator.AnswerAlwaysAllow}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Allowed: true, DecidedBy: hostile,
		Operation: mediator.Operation{AgentID: "agent-1", Name: "shell." + hostile}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"denials", []string{"denials"}},
		{"audit tail", []string{"audit", "tail"}},
		{"prefs list", []string{"prefs", "list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runMain(t, dataDir, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			assertInert(t, out)
			if !strings.Contains(out, shown) {
				t.Fatalf("no escaped text in\n%s", out)
			}
		})
	}
	t.Run("denials --json", func(t *testing.T) {
		code, out, _ := runMain(t, dataDir, "denials", "--json")
		var d mediator.Denial
		if code != 0 || json.Unmarshal([]byte(out), &d) != nil || d.Context.Reason != hostile {
			t.Fatalf("exit %d: JSON %q does not hold the reason as it was", code, out)
		}
	})
}

// TestPromptShowsTargetEscaped: the question a person answers shows the
// target an agent chose escaped, so a bidi override or an escape
// sequence cannot show another URL than the one being allowed.
func TestPromptShowsTargetEscaped(t *testing.T) {
	var out bytes.Buffer
	p, _ := newCLIPrompter(strings.NewReader("d\n"), &out, nil)
	p.interactive = true // as if stdin were a terminal
	req := mediator.PromptRequest{Class: mediator.RequiresConfirmation, Reason: "why\x1b[2J",
		Op: mediator.Operation{AgentID: "a", Name: mediator.OpNetworkFetch, Method: "POST", URL: "https://evil.test/\u202etxt.moc.knab\r"}}
	if _, err := p.Prompt(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertInert(t, out.String())
	for _, want := range []string{`target: POST https://evil.test/\u202etxt.moc.knab\r`, `why\x1b[2J`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("prompt %q does not show %q", out.String(), want)
		}
	}
}
