package archcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// untrustedInput are the packages that read what agents, pages, the
// extension or a local web page send: every such JSON is decoded exactly
// (mediator.DecodeExact), so a member given twice, in another case, or
// unknown cannot read one way to a person and another to the host.
func untrustedInput() []string {
	return []string{"internal/host", "internal/viewer", "internal/app/flows", "wasmhost", "netproxy", "netproxy/agentfetch",
		"pyagent", "workflow", "shell", "workspace", "mediator", "auditlog"}
}

// decodeMarker, at the end of the line of a decode or the line before it,
// says why that decode need not be exact; the reader sees every such
// choice where it is made.
const decodeMarker = "// decode:"

// LooseDecodes returns the calls in one Go file that decode JSON with
// encoding/json's or go-json-experiment's Unmarshal or NewDecoder,
// neither through mediator.DecodeExact nor under a decodeMarker comment:
// "file:line: call".
func LooseDecodes(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	json := map[string]bool{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		if path != "encoding/json" && path != "github.com/go-json-experiment/json" {
			continue
		}
		local := "json"
		if im.Name != nil {
			local = im.Name.Name
		}
		json[local] = true
	}
	// A marker covers its own line (a trailing comment) and the line
	// after the comment it starts, however many lines that comment has.
	marked := map[int]bool{}
	for _, cg := range f.Comments {
		if strings.HasPrefix(cg.List[0].Text, decodeMarker) {
			marked[fset.Position(cg.Pos()).Line] = true
			marked[fset.Position(cg.End()).Line+1] = true
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || !json[pkg.Name] || (sel.Sel.Name != "Unmarshal" && sel.Sel.Name != "NewDecoder" && sel.Sel.Name != "UnmarshalRead" && sel.Sel.Name != "UnmarshalDecode") {
			return true
		}
		line := fset.Position(call.Pos()).Line
		if !marked[line] {
			out = append(out, fmt.Sprintf("%s:%d: %s.%s", name, line, pkg.Name, sel.Sel.Name))
		}
		return true
	})
	return out, nil
}

// ExportedVars returns the exported package-level variables of one Go
// file: in the packages that hold the policy's tables, an exported
// variable is a table any importer could rewrite.
func ExportedVars(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if n.IsExported() {
					out = append(out, fmt.Sprintf("%s:%d: %s", name, fset.Position(n.Pos()).Line, n.Name))
				}
			}
		}
	}
	return out, nil
}
