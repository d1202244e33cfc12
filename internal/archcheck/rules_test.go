package archcheck

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRulesCatchPlantedViolations: each rule fires on a planted
// violation, and a clean graph passes.
func TestRulesCatchPlantedViolations(t *testing.T) {
	clean := Graph{
		"mediator":       {"fmt", Module + "/mediator"},
		"wasmhost":       {Module + "/mediator", Module + "/workspace"},
		"internal/store": {Module + "/mediator", "modernc.org/sqlite"},
		"internal/host":  {Module + "/internal/store", Module + "/wasmhost"},
	}
	if v := Check(clean); len(v) != 0 {
		t.Fatalf("a clean graph: %v", v)
	}
	for _, c := range []struct {
		name, rule string
		g          Graph
	}{
		{"a top-level package imports internal", "a top-level package imports internal/", Graph{"wasmhost": {Module + "/internal/shell"}}},
		{"the vocabulary imports the network", "the decision vocabulary imports nothing of ours", Graph{"mediator": {Module + "/netproxy"}}},
		{"the core pulls in SQLite", "the core imports no storage", Graph{"netproxy": {"modernc.org/sqlite"}}},
		{"storage runs modules", "storage imports no engine", Graph{"internal/store": {Module + "/wasmhost"}}},
		{"host mode links the exporter", "host mode links no exporter", Graph{"internal/host": {"go.opentelemetry.io/proto/otlp/logs/v1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Check(c.g)
			if len(v) != 1 || v[0].Rule != c.rule {
				t.Fatalf("Check = %v; want one %q", v, c.rule)
			}
		})
	}
}

// moduleGraph is the module's real graph, from go list.
func moduleGraph(t *testing.T) Graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := Graph{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, Module), "/")
		g[rel] = p.Deps
	}
	return g
}

// TestModuleKeepsTheRules: the module as it is breaks none of them.
func TestModuleKeepsTheRules(t *testing.T) {
	g := moduleGraph(t)
	if len(g) < 15 {
		t.Fatalf("go list found %d packages", len(g))
	}
	for _, v := range Check(g) {
		t.Error(v)
	}
}

// TestREADMENamesEveryPackage: the README's architecture section names
// every package of the module, so its diagram cannot silently omit one.
func TestREADMENamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, arch, ok := strings.Cut(string(b), "## Architecture")
	if !ok {
		t.Fatal("README has no Architecture section")
	}
	arch, _, _ = strings.Cut(arch, "\n## ")
	for pkg := range moduleGraph(t) {
		if pkg == "" || strings.HasPrefix(pkg, "internal/archcheck") {
			continue
		}
		if !strings.Contains(arch, pkg) {
			t.Errorf("README's architecture section does not name %s", pkg)
		}
	}
}
