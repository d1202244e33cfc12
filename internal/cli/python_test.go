package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInspectPythonSource(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, src, set, conf string
	}{
		{"plain", "t = await restricted_api.getPageText()\nrestricted_api.log(t)\n", "readonly", "0.80"},
		{"dynamic", "f = getattr(restricted_api, 'fetch')\n", "minimal", "0.50"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".py")
			os.WriteFile(path, []byte(c.src), 0o644)
			code, out, errOut := runMain(t, filepath.Join(dir, "data"), "inspect", path)
			if code != 0 || !strings.Contains(out, "Python agent, permission set "+c.set+", confidence "+c.conf) {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			code, out, _ = runMain(t, filepath.Join(dir, "data"), "inspect", "--json", path)
			var rep struct {
				Runtime       string
				PermissionSet string
				Confidence    float64
				Uses          []struct{ Name, Permission string }
			}
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Runtime != "python" || rep.PermissionSet != c.set {
				t.Fatalf("exit %d: %s", code, out)
			}
		})
	}
	t.Run("hostile/not UTF-8", func(t *testing.T) {
		path := filepath.Join(dir, "bad.py")
		os.WriteFile(path, []byte("print('\xff')"), 0o644)
		if code, _, errOut := runMain(t, filepath.Join(dir, "data"), "inspect", path); code == 0 || !strings.Contains(errOut, "bad_request") {
			t.Fatalf("exit %d: %s", code, errOut)
		}
	})
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Error("inspect made a data dir")
	}
}

func TestRunOfAPythonAgentSaysWhereItRuns(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "p.json")
	os.WriteFile(profile, []byte(`{"agentId":"py-word-count","runtime":"python","permissions":{"required":["page.read"]}}`), 0o644)
	src := filepath.Join(dir, "a.py")
	os.WriteFile(src, []byte("print(1)\n"), 0o644)
	code, _, errOut := runMain(t, filepath.Join(dir, "data"), "run", "--profile", profile, src)
	for _, want := range []string{"Python agents run in the browser", "Pyodide", "options page", "Run"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if code == 0 {
		t.Error("exit 0 for a run that did not happen")
	}
}
