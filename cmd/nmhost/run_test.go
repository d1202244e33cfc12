package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/testwasm"
)

func buildExample(t *testing.T, name string) string {
	t.Helper()
	out, err := testwasm.BuildFile("../../examples/agents/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunCommand(t *testing.T) {
	module := buildExample(t, "page-reader")
	dir := newDataDir(t)
	page := filepath.Join(t.TempDir(), "page.html")
	os.WriteFile(page, []byte(`<html><head><title>Doc</title></head><body><h1>quiet words</h1><p>one two</p></body></html>`), 0o600)
	profile := "../../examples/agents/page-reader/profile.json"
	narrowed := filepath.Join(t.TempDir(), "narrow.json")
	os.WriteFile(narrowed, []byte(`{"agentId":"page-reader","permissions":{"required":["page.read"]},"capabilities":{"domAccess":"full"}}`), 0o600)
	garbage := filepath.Join(t.TempDir(), "garbage.wasm")
	os.WriteFile(garbage, []byte("\x00asm\x01\x00\x00\x00\x01\xff"), 0o600)

	cases := []struct {
		name     string
		args     []string
		exit     int
		contains []string
	}{
		{"page answers from the file, write pre-answered",
			[]string{"run", "--profile", profile, "--page", page, "--yes-to", "page.write.setElementText", "--input", "shout", module}, 0,
			[]string{`"Doc" has 4 words`, "heading: quiet words", "heading changed", "ok, 4 calls, 0 denials"}},
		{"no terminal, no pre-answer: the write is denied, the run goes on",
			[]string{"run", "--profile", profile, "--page", page, "--input", "shout", module}, 0,
			[]string{"cannot change the heading: confirmation_required", ", 1 denial (session run-"}},
		{"no page: no_browser",
			[]string{"run", "--profile", profile, module}, 0,
			[]string{"cannot read the page: no_browser"}},
		{"import not granted: refused at link time",
			[]string{"run", "--profile", narrowed, "--page", page, module}, 1,
			[]string{"import_not_granted", "restricted_api.page_set_element_text"}},
		{"not a module", []string{"run", "--profile", profile, garbage}, 1, []string{"invalid_module"}},
		{"unknown --yes-to", []string{"run", "--profile", profile, "--yes-to", "everything", module}, 1, []string{"not an operation"}},
		{"bad level", []string{"run", "--profile", profile, "--level", "admin", module}, 1, []string{"invalid_level"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(nmhostBin, c.args...)
			cmd.Env = hostEnv(dir)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != c.exit {
				t.Fatalf("exit %d; want %d\n%s", code, c.exit, out)
			}
			for _, want := range c.contains {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
