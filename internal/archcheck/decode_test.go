package archcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLooseDecodesCatchesPlantedOnes: a plain decode is found under any
// import name; DecodeExact and a marked decode are not.
func TestLooseDecodesCatchesPlantedOnes(t *testing.T) {
	src := `package p

import (
	"encoding/json"
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/agentgate/nmhost/mediator"
)

func f(b []byte, v any) {
	json.Unmarshal(b, v)
	_ = jsonv2.Unmarshal(b, v)
	_ = json.NewDecoder(nil)
	_ = mediator.DecodeExact(b, v)
	// decode: our own stored text, written by json.Marshal
	_ = json.Unmarshal(b, v)
	_ = json.Unmarshal(b, v) // decode: the same
}
`
	got, err := LooseDecodes("p.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"p.go:11: json.Unmarshal", "p.go:12: jsonv2.Unmarshal", "p.go:13: json.NewDecoder"}
	if !slices.Equal(got, want) {
		t.Fatalf("LooseDecodes = %q; want %q", got, want)
	}
}

// TestUntrustedInputIsDecodedExactly: no package that reads untrusted
// input decodes JSON any other way than mediator.DecodeExact, except where
// a "// decode:" comment says why.
func TestUntrustedInputIsDecodedExactly(t *testing.T) {
	eachSource(t, untrustedInput(), func(name string, src []byte) {
		if name == "mediator/decode.go" {
			return // DecodeExact itself
		}
		loose, err := LooseDecodes(name, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range loose {
			t.Errorf("%s: untrusted input decoded loosely; use mediator.DecodeExact, or say why not with a %q comment", l, decodeMarker)
		}
	})
}

// eachSource calls fn with each non-test Go file of pkgs, named
// "pkg/file.go".
func eachSource(t *testing.T, pkgs []string, fn func(name string, src []byte)) {
	t.Helper()
	for _, pkg := range pkgs {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fn(pkg+"/"+filepath.Base(f), src)
		}
	}
}

// TestNoExportedTables: the packages that hold the policy (the
// vocabulary, the Python API, the ACL, the runtime's ABI) export no
// variables, so no importer can rewrite a table; tables are read
// through functions that return copies.
func TestNoExportedTables(t *testing.T) {
	planted, err := ExportedVars("p.go", []byte("package p\n\nvar Table = []string{\"a\"}\nvar table = 1\n"))
	if err != nil || len(planted) != 1 || planted[0] != "p.go:3: Table" {
		t.Fatalf("a planted table: %v %v", planted, err)
	}
	eachSource(t, []string{"mediator", "pyagent", "netproxy", "wasmhost", "workspace", "shell", "workflow", "auditlog"}, func(name string, src []byte) {
		vars, err := ExportedVars(name, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vars {
			t.Errorf("%s: an exported variable; make it unexported and read it through a function that returns a copy", v)
		}
	})
}

// TestOneRunConstructor: a run's spec is built in one place,
// internal/app/runs, so every entry point (the native host, the viewer, the
// CLI, a workflow's task) gets the same session, durability, page binding
// and records. Tests may build their own.
func TestOneRunConstructor(t *testing.T) {
	var where []string
	eachRepoSource(t, nil, func(p string, src []byte) {
		if strings.Contains(string(src), "wasmhost.RunSpec{") {
			where = append(where, p)
		}
	})
	if !slices.Equal(where, []string{"../../internal/app/runs/runs.go"}) {
		t.Fatalf("wasmhost.RunSpec is built in %v; only internal/app/runs may build one", where)
	}
}

// eachRepoSource calls fn with each non-test Go file of the module (by
// its slash path from this directory), outside testdata, hidden
// directories and the directories skip names.
func eachRepoSource(t *testing.T, skip []string, fn func(p string, src []byte)) {
	t.Helper()
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || slices.Contains(skip, d.Name())) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(p), src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWireNamesAreCamelCase: every JSON member name in a struct tag is
// camelCase, outside the formats others define (Chrome's host manifest:
// package manifest, and the tests that read it), the separate tools
// module, and the session API's published names (publishedName).
func TestWireNamesAreCamelCase(t *testing.T) {
	planted, err := WireNames("p.go", []byte("package p\n\ntype T struct {\n\tA string `json:\"run_id,omitempty\"`\n\tB string `json:\"runId\"`\n\tC string `json:\"-\"`\n}\n"))
	if err != nil || len(planted) != 1 || planted[0] != `p.go:4: "run_id"` {
		t.Fatalf("a planted snake_case member: %v %v", planted, err)
	}
	eachRepoSource(t, []string{"tools", "manifest"}, func(p string, src []byte) {
		names, err := WireNames(p, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if publishedName(n) {
				continue
			}
			t.Errorf("%s: a JSON member that is not camelCase (docs/protocol.md, hello)", n)
		}
	})
}

// TestRulesLiveInTheCore: the front ends (the native host, the viewer,
// the CLI) build no policy, fetcher, runtime or store of their own and
// apply no administrator's rule themselves: they call the core
// (internal/app), whose operations hold the rules, so an answer cannot
// depend on the door a question came through. The pattern list is
// checked against planted lines first, so a rule that no longer matches
// anything cannot pass silently.
func TestRulesLiveInTheCore(t *testing.T) {
	forbidden := regexp.MustCompile(`mediator\.NewPolicy\(|agentfetch\.New\(|wasmhost\.New\(|store\.Open\(|adminpolicy\.Load\(|` +
		`\.(RefuseGrant|RefuseLevel|Blocked|LevelAbove|DecidePersonShell)\(|mediator\.DecideShell\(|` +
		`\b(st|Store\(\))\.(Grant|Revoke|InstallAgent|PutModule|UpdateSessionSettings\w*)\(|` +
		`"github\.com/agentgate/nmhost/internal/store"|\.Store\(\)`)
	for _, planted := range []string{"p := mediator.NewPolicy(st, o)", "s.st.Grant(ctx, a, p)", "a.Store().UpdateSessionSettingsIf(ctx, id, b, nil)",
		"if p, ok := admin.Blocked(perm); ok {", "rt, _ := wasmhost.New(ctx, cfg)", `	"github.com/agentgate/nmhost/internal/store"`, "st := core.Store()"} {
		if !forbidden.MatchString(planted) {
			t.Fatalf("the rule does not catch %q", planted)
		}
	}
	var where []string
	eachRepoSource(t, nil, func(p string, src []byte) {
		front := strings.HasPrefix(p, "../../internal/host/") || strings.HasPrefix(p, "../../internal/viewer/") || strings.HasPrefix(p, "../../internal/cli/") ||
			strings.HasPrefix(p, "../../internal/mcpserve/")
		if !front {
			return
		}
		for i, line := range strings.Split(string(src), "\n") {
			if forbidden.MatchString(line) {
				where = append(where, fmt.Sprintf("%s:%d: %s", p, i+1, strings.TrimSpace(line)))
			}
		}
	})
	if len(where) > 0 {
		t.Fatalf("a front end applies a rule or builds a part itself; call the core (internal/app) instead:\n%s", strings.Join(where, "\n"))
	}
}

// publishedName reports whether n (WireNames' "path:line: \"name\"") is
// one of the session API's published names, in the files that speak that
// contract (docs/viewer.md, "Sessions"): the settings and the websocket
// run message accept them beside the camelCase ones, and the settings
// replies carry both.
func publishedName(n string) bool {
	where, name, _ := strings.Cut(n, ": ")
	file, _, _ := strings.Cut(where, ":")
	files := []string{"../../internal/store/sessions.go", "../../internal/viewer/api.go", "../../internal/viewer/ws.go"}
	names := []string{`"permission_level"`, `"root_dir"`, `"session_id"`}
	return slices.Contains(files, file) && slices.Contains(names, name)
}

// TestOnlyTheCoreImportsTheStore: outside tests, only the application
// core (internal/app and its parts) imports internal/store; the store's
// own test helpers (internal/storetest) aside.
func TestOnlyTheCoreImportsTheStore(t *testing.T) {
	const imp = `"github.com/agentgate/nmhost/internal/store"`
	var where []string
	eachRepoSource(t, nil, func(p string, src []byte) {
		core := strings.HasPrefix(p, "../../internal/app/") || strings.HasPrefix(p, "../../internal/store/") || strings.HasPrefix(p, "../../internal/storetest/")
		if !core && strings.Contains(string(src), imp) {
			where = append(where, p)
		}
	})
	if len(where) > 0 {
		t.Fatalf("only the application core imports the store; these do too: %v", where)
	}
}

// TestNoTransportImportsAnother: the native host, the viewer and the MCP
// gateway are each a transport over the core; none imports another (or
// the CLI, which wires them), so a rule cannot live in one door and be
// borrowed by the next.
func TestNoTransportImportsAnother(t *testing.T) {
	transports := []string{"internal/host", "internal/viewer", "internal/mcpserve", "internal/cli"}
	var where []string
	eachRepoSource(t, nil, func(p string, src []byte) {
		for _, from := range transports[:3] {
			if !strings.HasPrefix(p, "../../"+from+"/") {
				continue
			}
			for _, to := range transports {
				if to != from && strings.Contains(string(src), `"github.com/agentgate/nmhost/`+to+`"`) {
					where = append(where, p+" imports "+to)
				}
			}
		}
	})
	if len(where) > 0 {
		t.Fatalf("a transport imports another; share through the core (internal/app) instead:\n%s", strings.Join(where, "\n"))
	}
}
