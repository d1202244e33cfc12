package archcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strconv"
	"strings"
)

// WireNames returns the JSON member names of one Go file's struct tags
// that are not camelCase: every wire the project speaks (native messages,
// the viewer's HTTP and /ws, guest requests, stored JSON) names members
// one way, so a reader never has to guess between sessionId and
// session_id. Files that mirror a format someone else defines (Chrome's
// host manifest) are not given to it.
func WireNames(name string, src []byte) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		field, ok := n.(*ast.Field)
		if !ok || field.Tag == nil {
			return true
		}
		tag, err := strconv.Unquote(field.Tag.Value)
		if err != nil {
			return true
		}
		member, _, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		if member != "" && member != "-" && !camel(member) {
			out = append(out, fmt.Sprintf("%s:%d: %q", name, fset.Position(field.Pos()).Line, member))
		}
		return true
	})
	return out, nil
}

// camel reports whether s is lower camelCase: a lower-case letter, then
// letters and digits.
func camel(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
		case i > 0 && (r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'):
		default:
			return false
		}
	}
	return s != ""
}
