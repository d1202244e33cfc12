//go:build unix

package wasmhost

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// wasinamesWasm is testdata/wasinames: it gives WASI names as they are,
// through Go's os package and directly.
var wasinamesWasm = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("./" + filepath.Join("testdata", "wasinames"))
})

// refusalSite is one place in the source that makes a refusal a guest's
// file access can meet: its code and the literal text of its reason.
type refusalSite struct {
	key  string // "file.go:Func: reason text"
	code mediator.Code
	text string // the reason's format or literal
}

// refusalSources are the files whose refusals a guest's WASI file access
// can meet: the workspace package and the WASI listener.
func refusalSources(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "workspace", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	return append(files, "wasipath.go")
}

// forwarders are calls that refuse with a reason made elsewhere; the
// places that make those reasons are sites of their own (reasonMakers).
var forwarders = map[string]string{
	"workspace.go:Clean: why":             "badName's reasons",
	"workspace.go:openFile: lerr.Error()": "singleLink's reason",
}

// reasonMakers are functions whose string results become a
// path_not_allowed reason (through a forwarder): each string literal or
// fmt.Sprintf they return, or errors.New they make, is a site.
var reasonMakers = map[string]bool{"badName": true, "singleLink": true}

// findRefusalSites reads the source and lists every refusal it makes:
// each mediator.Errorf or mediator.Error with a refusal code (but the one
// inside notAllowed, which only formats), each notAllowed call, and each
// reason a reasonMaker makes.
func findRefusalSites(t *testing.T) []refusalSite {
	t.Helper()
	fset := token.NewFileSet()
	var sites []refusalSite
	seen := map[string]bool{}
	add := func(file, fn string, code mediator.Code, text string) {
		key := filepath.Base(file) + ":" + fn + ": " + text
		if !seen[key] {
			seen[key] = true
			sites = append(sites, refusalSite{key: key, code: code, text: text})
		}
	}
	for _, file := range refusalSources(t) {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn := fd.Name.Name
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					switch name := callName(n); {
					case name == "mediator.Errorf" && len(n.Args) >= 2 && fn != "notAllowed":
						if code, ok := codeOf(n.Args[0]); ok && mediator.IsRefusal(code) {
							add(file, fn, code, literal(fset, n.Args[1]))
						}
					case name == "notAllowed" && len(n.Args) == 2:
						add(file, fn, mediator.CodePathNotAllowed, literal(fset, n.Args[1]))
					case name == "errors.New" && reasonMakers[fn] && len(n.Args) == 1:
						add(file, fn, mediator.CodePathNotAllowed, literal(fset, n.Args[0]))
					}
				case *ast.CompositeLit:
					if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" {
						for _, el := range n.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok && exprString(fset, kv.Key) == "Code" {
								if code, ok := codeOf(kv.Value); ok && mediator.IsRefusal(code) {
									add(file, fn, code, exprString(fset, n))
								}
							}
						}
					}
				case *ast.ReturnStmt:
					if reasonMakers[fn] && len(n.Results) == 1 {
						if s := literal(fset, n.Results[0]); s != "" && !strings.HasPrefix(s, "err") && s != "nil" {
							add(file, fn, mediator.CodePathNotAllowed, s)
						}
					}
				}
				return true
			})
		}
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].key < sites[j].key })
	return sites
}

func callName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
	}
	return ""
}

// codeOf reads mediator.CodeX as the code's value.
func codeOf(e ast.Expr) (mediator.Code, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || !strings.HasPrefix(sel.Sel.Name, "Code") {
		return "", false
	}
	c, ok := codeByName[sel.Sel.Name]
	return c, ok
}

// codeByName maps the constants' names to their values; a code missing
// here fails the walk (add it).
var codeByName = map[string]mediator.Code{
	"CodePathNotAllowed": mediator.CodePathNotAllowed, "CodeQuotaExceeded": mediator.CodeQuotaExceeded,
	"CodePermissionOutsideSet": mediator.CodePermissionOutsideSet, "CodeBadRequest": mediator.CodeBadRequest,
	"CodeTooLarge": mediator.CodeTooLarge, "CodeNotFound": mediator.CodeNotFound, "CodeInternal": mediator.CodeInternal,
}

// literal is a string literal's value, a fmt.Sprintf's format, or else
// the expression as written.
func literal(fset *token.FileSet, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if s, err := strconv.Unquote(e.Value); err == nil {
			return s
		}
	case *ast.CallExpr:
		if callName(e) == "fmt.Sprintf" && len(e.Args) > 0 {
			return literal(fset, e.Args[0])
		}
	}
	return exprString(fset, e)
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, e); err != nil {
		return "?"
	}
	return b.String()
}

// verbs splits a format into its literal text.
var verbs = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`)

// reasonHas reports whether reason holds every literal piece of the
// site's text.
func reasonHas(reason, text string) bool {
	for _, piece := range verbs.Split(text, -1) {
		if len(piece) >= 3 && !strings.Contains(reason, piece) {
			return false
		}
	}
	return true
}

// notThroughWASI are the sites a guest's WASI file access cannot reach,
// each with why; every other site needs a scenario below.
var notThroughWASI = map[string]string{
	"workspace.go:Clean: an empty name":                      `WASI cleans a guest's name first: "" reaches the workspace as "."`,
	"workspace.go:Clean: a name that leaves the workspace":   `WASI refuses a name that climbs out before the workspace sees it; wasipath.go records that (its own site)`,
	"names.go:badName: not valid UTF-8":                      "WASI refuses a name that is not valid UTF-8 before the workspace sees it; wasipath.go records that (its own site)",
	"workspace.go:fail: %s: %v":                              "an ordinary failure (exists, not empty, is a directory): the guest gets the operating system's errno, and Hooks.Refused is not called (workspace.Hooks)",
	"workspace.go:ReadFile: %s is larger than %d bytes":      "ReadFile is the shell's and agent-call's; a guest reads through its open file",
	"changes.go:WriteFile: the workspace itself, not a file": "WriteFile is the shell's and agent-call's; a guest writes through its open file",
	"changes.go:WriteFile: %s is not a regular file":         "WriteFile is the shell's and agent-call's; a guest writes through its open file",
	"program.go:Program: the program left %d bytes in the workspace, more than its %d-byte quota; remove some": "a high session's program in the sandbox, never a guest (shell TestAProgramsWritesAreInTheLedger, workspace TestProgramRecountsTheLedger)",
	"changes.go:Mkdir: %s is not a directory": "only a mkdir with its parents (the shell's mkdir -p) walks them; a guest's mkdir makes one directory",
	"ledger.go:count: the workspace holds more than %d files and directories, its quota; remove some by hand": "when the workspace is opened, before any guest runs; its opener reports it",
	"ledger.go:count: the workspace holds entries deeper than %d levels, the limit; remove them by hand":      "when the workspace is opened, before any guest runs; its opener reports it",
}

// siteScenario is a run of wasinames (or fsprobe) that meets a site.
type siteScenario struct {
	sites   []string // the keys of the sites it meets
	set     mediator.PermissionSet
	fsprobe bool // run fsprobe, which links under readonly, instead
	limits  workspace.Limits
	plant   func(t *testing.T, ws string) // in the workspace before the run
	input   string
	ok      int           // how many of its lines succeed (the first ones); the rest are each refused at the site
	rt      *Runtime      // nil: the tests' shared one
	status  mediator.Code // how the run ends; "" ok
}

var siteScenarios = []siteScenario{
	{sites: []string{"wasipath.go:After: %q is a name that climbs out of the directory it is relative to, or an absolute one: a run reaches files only under %s, by names inside it"},
		input: strings.Join([]string{`at-create ../escape.txt`, `at-create /etc/escape.txt`, `at-create a/../../x`, `at-open ../../nmhost.db`,
			`at-open /etc/hostname`, `at-mkdir ../d`, `at-rmdir ../d`, `at-unlink ../escape.txt`, `at-stat /etc/hostname`, `at-rename a ../escape.txt`}, "\n")},
	{sites: []string{"wasipath.go:After: %q is outside %s, the only directory a run is given (%s)"},
		input: strings.Join([]string{`create ../escape.txt owned`, `create /etc/escape.txt owned`, `create a/../../x owned`,
			`open ../../nmhost.db`, `open /etc/hostname`, `open /workspace/../escape.txt`}, "\n")},
	{sites: []string{"workspace.go:Clean: longer than %d bytes"}, input: "at-open " + strings.Repeat("n", workspace.MaxNameLen+1)},
	{sites: []string{"workspace.go:Clean: a NUL byte"}, input: `at-create "a\x00b"`},
	{sites: []string{"workspace.go:Clean: an absolute name: names are relative to the workspace"}, input: `at-create "a\\b"`},
	{sites: []string{"wasipath.go:After: %q is not valid UTF-8: there is no one way to show such a name"}, input: `at-create "a\xffb"`},
	{sites: []string{"names.go:badName: a name holding the control character U+%04X"}, input: `at-create "a\x1bb"`},
	{sites: []string{"names.go:badName: a name holding the bidirectional control U+%04X"}, input: `at-create "a\u202eb"`},
	{sites: []string{"workspace.go:fail: a name that leaves the workspace (through '..' or a link)"},
		plant: func(t *testing.T, ws string) {
			must(t, os.Symlink(filepath.Join(filepath.Dir(ws), "escape.txt"), filepath.Join(ws, "planted")))
		},
		input: "at-open planted\nat-create planted"},
	{sites: []string{"workspace.go:notPlain: a %s, not a regular file or a directory"},
		plant: func(t *testing.T, ws string) { must(t, syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o600)) },
		input: "at-open pipe"},
	{sites: []string{"link_unix.go:singleLink: a file with another hard link, which may be outside the workspace"},
		plant: func(t *testing.T, ws string) {
			must(t, os.Link(filepath.Join(filepath.Dir(ws), "escape.txt"), filepath.Join(ws, "linked")))
		},
		input: "at-open linked\nat-create linked"},
	{sites: []string{"ledger.go:tooDeep: %d levels deep; a workspace holds nothing deeper than %d"},
		input: "at-mkdir " + strings.Repeat("d/", workspace.MaxDepth) + "d"},
	{sites: []string{"ledger.go:fits: the workspace would hold %d bytes; its quota is %d"},
		limits: workspace.Limits{MaxBytes: 4}, input: "at-create big"},
	{sites: []string{"ledger.go:fits: the workspace would hold %d files and directories; its quota is %d"},
		limits: workspace.Limits{MaxFiles: 1}, input: "at-mkdir a\nat-mkdir b", ok: 1},
	{sites: []string{"changes.go:Remove: the workspace itself"}, input: "at-rmdir ."},
	{sites: []string{"changes.go:Rename: a move of the workspace itself"}, input: "at-rename . moved"},
	{sites: []string{"wasi.go:readOnly: %s: the workspace is read-only for this agent (its permission set gives read access)"},
		set: mediator.SetReadonly, fsprobe: true, input: "write /workspace/new.txt x"},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestEveryWorkspaceRefusalSiteIsRecorded reads the source for every
// place that refuses a guest's file access (each refusal the workspace
// package makes, each reason it gives, and the refusals of WASI's own
// name resolution, wasipath.go), and runs, for each, a guest that meets
// it: the refusal is in the denial log with its code, its reason and its
// audit record, and the files outside the workspace (a canary beside it
// and one two levels up, where "../../nmhost.db" points) are untouched.
// A site no guest can meet through WASI is listed with the reason; a new
// site with neither fails, as does a scenario or a listing for a site no
// longer in the source.
func TestEveryWorkspaceRefusalSiteIsRecorded(t *testing.T) {
	sites := findRefusalSites(t)
	bySite := map[string]refusalSite{}
	for _, s := range sites {
		bySite[s.key] = s
	}
	covered := map[string]bool{}
	for _, sc := range siteScenarios {
		for _, k := range sc.sites {
			covered[k] = true
		}
	}
	for _, s := range sites {
		if _, fwd := forwarders[s.key]; fwd {
			continue
		}
		if !covered[s.key] && notThroughWASI[s.key] == "" {
			t.Errorf("refusal site %q (%s) has no scenario that meets it and is not listed as out of a guest's reach", s.key, s.code)
		}
	}
	for k := range covered {
		if _, ok := bySite[k]; !ok {
			t.Errorf("a scenario meets %q, which is not in the source", k)
		}
	}
	for k := range notThroughWASI {
		if _, ok := bySite[k]; !ok {
			t.Errorf("%q is listed as out of a guest's reach but is not in the source", k)
		}
	}
	for k := range forwarders {
		if _, ok := bySite[k]; !ok {
			t.Errorf("forwarder %q is not in the source", k)
		}
	}
	if t.Failed() {
		for _, s := range sites {
			t.Logf("site %s", s.key)
		}
		t.FailNow()
	}

	for _, sc := range siteScenarios {
		t.Run(sc.sites[0], func(t *testing.T) {
			res, denials := runInWorkspace(t, sc)
			lines := strings.Split(strings.TrimSpace(res.Output), "\n")
			for i, l := range lines {
				if refused := strings.Contains(l, ": error "); refused != (i >= sc.ok) {
					t.Errorf("line %d: %s", i+1, l)
				}
			}
			refusals := len(lines) - sc.ok
			for _, key := range sc.sites {
				site := bySite[key]
				n := 0
				for _, d := range denials {
					if d.Code == site.code && d.Context.Layer == "workspace" && d.AuditSeq > 0 && reasonHas(d.Context.Reason, site.text) {
						n++
					}
				}
				// Every refused call of the run met this site: one denial each.
				if n < refusals {
					t.Errorf("%d denials of %s with its reason and audit record for %d refused calls:\n%s\ndenials: %+v", n, site.code, refusals, res.Output, denials)
				}
			}
		})
	}
}
