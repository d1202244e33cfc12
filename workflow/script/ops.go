package script

import (
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// opOf names a pure task by what its expression does last, so the plan
// and the audit trail read like the script: code:filter, code:divide,
// code:get_length, code:Math.round, ...
func opOf(e ast.Expression) string {
	switch e := unwrapOptional(e).(type) {
	case *ast.CallExpression:
		switch f := unwrapOptional(e.Callee).(type) {
		case *ast.DotExpression:
			name := f.Identifier.Name.String()
			if id, ok := f.Left.(*ast.Identifier); ok {
				if op := statics[id.Name.String()][name]; op != "" {
					return op
				}
			}
			if op := methods[name]; op != "" {
				return op
			}
		case *ast.Identifier:
			if op := conversions[f.Name.String()]; op != "" {
				return op
			}
			return "code:computation"
		}
	case *ast.BinaryExpression:
		if op, ok := binaryOps[e.Operator]; ok {
			return op
		}
		return "code:arithmetic"
	case *ast.UnaryExpression:
		switch e.Operator {
		case token.NOT:
			return "code:not"
		case token.TYPEOF:
			return "code:convert"
		}
		return "code:arithmetic"
	case *ast.DotExpression:
		if e.Identifier.Name == "length" {
			return "code:get_length"
		}
		return "code:get_property"
	case *ast.BracketExpression:
		return "code:array_access"
	case *ast.ConditionalExpression:
		return "code:logic"
	}
	return "code:expr"
}

var binaryOps = map[token.Token]string{
	token.PLUS: "code:add", token.MINUS: "code:subtract", token.MULTIPLY: "code:multiply", token.SLASH: "code:divide",
	token.REMAINDER: "code:modulo", token.EXPONENT: "code:power",
	token.EQUAL: "code:equals", token.STRICT_EQUAL: "code:equals", token.NOT_EQUAL: "code:not_equals", token.STRICT_NOT_EQUAL: "code:not_equals",
	token.GREATER: "code:greater_than", token.LESS: "code:less_than", token.GREATER_OR_EQUAL: "code:greater_or_equal", token.LESS_OR_EQUAL: "code:less_or_equal",
	token.LOGICAL_AND: "code:and", token.LOGICAL_OR: "code:or", token.COALESCE: "code:or", token.IN: "code:access",
}

// opOfAssign names a compound assignment (goja's parser gives x += y
// the operator of x + y).
func opOfAssign(t token.Token) string {
	if op, ok := binaryOps[t]; ok {
		return op
	}
	return "code:arithmetic"
}

var nodeType = reflect.TypeOf((*ast.Node)(nil)).Elem()

// walk visits n and, while visit says so, every node under it.
func walk(n ast.Node, visit func(ast.Node) bool) {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return
	}
	if !visit(n) {
		return
	}
	walkValue(reflect.ValueOf(n), visit)
}

func walkValue(v reflect.Value, visit func(ast.Node) bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return
		}
		walkValue(v.Elem(), visit)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !f.CanInterface() {
				continue
			}
			walkField(f, visit)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkField(v.Index(i), visit)
		}
	}
}

func walkField(f reflect.Value, visit func(ast.Node) bool) {
	switch f.Kind() {
	case reflect.Interface, reflect.Pointer:
		if f.IsNil() {
			return
		}
		if f.Type().Implements(nodeType) {
			if n, ok := f.Interface().(ast.Node); ok {
				walk(n, visit)
				return
			}
		}
		if f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct {
			walkValue(f, visit)
		}
	case reflect.Slice:
		walkValue(f, visit)
	case reflect.Struct:
		if f.Addr().CanInterface() {
			if n, ok := f.Addr().Interface().(ast.Node); ok {
				walk(n, visit)
				return
			}
		}
		walkValue(f, visit)
	}
}
