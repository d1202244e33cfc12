package archcheck

import (
	"fmt"
	"slices"
	"strings"
)

// Module is the project's module path.
const Module = "github.com/agentgate/nmhost"

// Graph maps each package of the module (its path relative to the module,
// "mediator", "internal/store") to everything it depends on, directly or
// not, as full import paths: `go list -deps` of it.
type Graph map[string][]string

// Violation is one broken rule.
type Violation struct {
	Rule    string
	Package string
	Imports string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s imports %s", v.Rule, v.Package, v.Imports)
}

// core is where decisions, the network, the runtime, the workspace, the
// audit trail's verifier, workflows and Python inspection live: none of it
// may depend on storage (SQLite) or on anything internal.
func core() []string {
	return []string{"mediator", "netproxy", "netproxy/agentfetch", "wasmhost", "auditlog", "workspace", "workflow", "pyagent", "shell"}
}

// engines are the packages that act (run, fetch, walk files, run
// workflows, run shell lines): storage persists, it does not act, so it
// imports none of them.
func engines() []string {
	return []string{"wasmhost", "netproxy", "netproxy/agentfetch", "workflow", "pyagent", "shell",
		"internal/host", "internal/viewer", "internal/cli", "internal/app/flows"}
}

// Check applies the rules to g:
//
//   - no top-level package imports internal/ (only cmd/ and internal/ may);
//   - mediator, the decision vocabulary, imports nothing of the module;
//   - the core depends on no SQLite driver;
//   - internal/store imports no engine;
//   - host mode (internal/host) links no OTLP exporter: the browser
//     starts it for every message, and nmhost export is the CLI's alone.
func Check(g Graph) []Violation {
	var out []Violation
	own := func(dep string) (string, bool) {
		rel, ok := strings.CutPrefix(dep, Module+"/")
		return rel, ok
	}
	for _, pkg := range slices.Sorted(keys(g)) {
		deps := g[pkg]
		top := !strings.HasPrefix(pkg, "internal/") && !strings.HasPrefix(pkg, "cmd/") && pkg != "e2e"
		for _, dep := range deps {
			rel, ours := own(dep)
			switch {
			case top && ours && strings.HasPrefix(rel, "internal/"):
				out = append(out, Violation{"a top-level package imports internal/", pkg, rel})
			case pkg == "mediator" && ours && rel != "mediator":
				out = append(out, Violation{"the decision vocabulary imports nothing of ours", pkg, rel})
			case slices.Contains(core(), pkg) && strings.Contains(dep, "sqlite"):
				out = append(out, Violation{"the core imports no storage", pkg, dep})
			case pkg == "internal/store" && ours && slices.Contains(engines(), rel):
				out = append(out, Violation{"storage imports no engine", pkg, rel})
			case pkg == "internal/host" && (strings.Contains(dep, "opentelemetry") || rel == "internal/app/export"):
				out = append(out, Violation{"host mode links no exporter", pkg, dep})
			}
		}
	}
	return out
}

func keys(g Graph) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range g {
			if !yield(k) {
				return
			}
		}
	}
}
