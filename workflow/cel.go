package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"

	"github.com/agentgate/nmhost/mediator"
)

// Pure steps are CEL: side-effect free and terminating by design. The
// environment has the standard macros (filter, map, exists, all, ...), the
// string, list, math, set and encoder extensions, and three functions of
// ours: json.parse, json.stringify and sum. A step sees one variable, r:
// the results of the tasks it depends on, by id (r.fetch1, r["fetch-1"]).
// Each evaluation is bounded by a cost limit and a time limit.
const (
	// CostLimit bounds one evaluation in CEL's cost units (about one per
	// value visited): a filter over 100,000 items fits in it, a
	// nested loop over them is not.
	CostLimit = 1_000_000
	// EvalTimeout bounds one evaluation in time, for what the cost model
	// cannot see (a regular expression, a big string).
	EvalTimeout = 2 * time.Second
)

var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	env, err := cel.NewEnv(
		cel.Variable("r", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(), ext.Lists(ext.ListsMaxRangeSize(MaxListItems)), ext.Math(), ext.Sets(), ext.Encoders(), ext.TwoVarComprehensions(),
		cel.OptionalTypes(),
		cel.Function("json.parse", cel.Overload("json_parse_string", []*cel.Type{cel.StringType}, cel.DynType,
			cel.UnaryBinding(jsonParse))),
		cel.Function("json.stringify", cel.Overload("json_stringify_dyn", []*cel.Type{cel.DynType}, cel.StringType,
			cel.UnaryBinding(jsonStringify))),
		cel.Function("sum",
			cel.Overload("sum_list_int", []*cel.Type{cel.ListType(cel.IntType)}, cel.IntType, cel.UnaryBinding(sumList)),
			cel.Overload("sum_list_double", []*cel.Type{cel.ListType(cel.DoubleType)}, cel.DoubleType, cel.UnaryBinding(sumList))),
		cel.Function("pow", cel.Overload("pow_double_double", []*cel.Type{cel.DoubleType, cel.DoubleType}, cel.DoubleType,
			cel.BinaryBinding(func(a, b ref.Val) ref.Val {
				return types.Double(math.Pow(float64(a.(types.Double)), float64(b.(types.Double))))
			}))),
	)
	if err != nil {
		return nil, err
	}
	guarded, err := guardedOptions(env)
	if err != nil {
		return nil, err
	}
	return env.Extend(guarded...)
})

// program is a compiled pure step.
type program struct{ prg cel.Program }

// programs keeps compiled steps by their text across workflows: a CEL
// program is immutable and safe to share, parsing one costs tens of
// microseconds, and a host runs the same workflows again and again. The
// cache starts over past maxPrograms.
var programs struct {
	sync.Mutex
	m map[string]program
}

const maxPrograms = 8192

// compile parses and type-checks expr: a syntax error, an unknown
// function or a wrong type is refused before the workflow starts.
func compile(expr string) (program, error) {
	programs.Lock()
	p, ok := programs.m[expr]
	programs.Unlock()
	if ok {
		return p, nil
	}
	p, err := compileNew(expr)
	if err != nil {
		return p, err
	}
	programs.Lock()
	if programs.m == nil || len(programs.m) >= maxPrograms {
		programs.m = map[string]program{}
	}
	programs.m[expr] = p
	programs.Unlock()
	return p, nil
}

func compileNew(expr string) (program, error) {
	env, err := baseEnv()
	if err != nil {
		return program{}, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return program{}, mediator.Errorf(mediator.CodeInvalidWorkflow, "%s", mediator.Truncate(iss.Err().Error(), 400))
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.CostTracking(costs{}), outputTrackers(), guardComparisons(), cel.InterruptCheckFrequency(100))
	if err != nil {
		return program{}, mediator.Errorf(mediator.CodeInvalidWorkflow, "%s", mediator.Truncate(err.Error(), 400))
	}
	return program{prg}, nil
}

type compiledExpr struct {
	p   program
	err error
}

// compileAll compiles each distinct expression once, on every core: a
// large workflow's checking is mostly compiling, and the expressions are
// independent.
func compileAll(exprs []string) map[string]compiledExpr {
	out := make(map[string]compiledExpr, len(exprs))
	var todo []string
	for _, e := range exprs {
		if _, ok := out[e]; !ok {
			out[e] = compiledExpr{}
			todo = append(todo, e)
		}
	}
	results := make([]compiledExpr, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(todo); i = int(next.Add(1)) - 1 {
				p, err := compile(todo[i])
				results[i] = compiledExpr{p, err}
			}
		}()
	}
	wg.Wait()
	for i, e := range todo {
		out[e] = results[i]
	}
	return out
}

// eval runs the step over r and returns its value as plain Go (JSON-able).
func (p program) eval(ctx context.Context, r map[string]any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, EvalTimeout)
	defer cancel()
	out, _, err := p.prg.ContextEval(ctx, map[string]any{"r": r})
	if err != nil {
		code := mediator.CodeTrap
		if errors.Is(err, errTooLarge) {
			code = mediator.CodeTooLarge
		}
		return nil, mediator.Errorf(code, "the expression failed: %s", mediator.Truncate(err.Error(), 400))
	}
	b := budget{left: MaxValueBytes}
	v, err := toPlain(out, 0, &b)
	if errors.Is(err, errTooLarge) {
		return nil, checkResult(MaxValueBytes + 1)
	}
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeTrap, "the expression's value is not JSON: %v", err)
	}
	// The walk's count is close to the encoding's size, not equal to it
	// (escapes, number digits): the bound is on the bytes.
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeTrap, "the expression's value is not JSON: %v", err)
	}
	if err := checkResult(len(enc)); err != nil {
		return nil, err
	}
	return v, nil
}

func jsonParse(v ref.Val) ref.Val {
	if n := len(v.(types.String)); n > MaxValueBytes {
		return tooLarge("json.parse", n, MaxValueBytes)
	}
	var out any
	// decode: json.parse is JSON.parse over a workflow's own data, with
	// its meaning; nothing is decided from it.
	if err := json.Unmarshal([]byte(v.(types.String)), &out); err != nil {
		return types.NewErr("json.parse: %v", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(out)
}

func jsonStringify(v ref.Val) ref.Val {
	bud := budget{left: MaxValueBytes}
	native, err := toPlain(v, 0, &bud)
	if errors.Is(err, errTooLarge) {
		return tooLarge("json.stringify", MaxValueBytes+1, MaxValueBytes)
	}
	if err != nil {
		return types.NewErr("json.stringify: %v", err)
	}
	b, err := json.Marshal(native)
	if err != nil {
		return types.NewErr("json.stringify: %v", err)
	}
	if len(b) > MaxValueBytes {
		return tooLarge("json.stringify", len(b), MaxValueBytes)
	}
	return types.String(b)
}

func sumList(v ref.Val) ref.Val {
	l := v.(traits.Lister)
	it := l.Iterator()
	var total ref.Val
	for it.HasNext() == types.True {
		x := it.Next()
		if total == nil {
			total = x
			continue
		}
		total = total.(traits.Adder).Add(x)
		if types.IsError(total) {
			return total
		}
	}
	if total == nil {
		return types.IntZero
	}
	return total
}

// maxDepth bounds how deep a value toPlain converts: CEL values are finite,
// but a result may nest as deep as the JSON an agent printed.
const maxDepth = 200

// toPlain converts a CEL value to the plain Go values encoding/json
// writes: the form results travel in (task-result events, later steps).
// It takes from b about one unit per byte of JSON and fails with
// errTooLarge when b runs out: a CEL list may hold the same list twice at
// every level, and converting it would copy every path.
func toPlain(v ref.Val, depth int, b *budget) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	n := 8
	switch x := v.(type) {
	case types.String:
		n = len(x) + 2
	case types.Bytes:
		n = len(x)*4/3 + 2
	}
	if !b.take(n) {
		return nil, errTooLarge
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%v is not a JSON number", float64(x))
		}
		return float64(x), nil
	case types.String:
		return string(x), nil
	case types.Bytes:
		return []byte(x), nil
	case *types.Optional:
		if !x.HasValue() {
			return nil, nil
		}
		return toPlain(x.GetValue(), depth+1, b)
	case traits.Mapper:
		out := map[string]any{}
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			val, err := toPlain(x.Get(k), depth+1, b)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k.Value())] = val
		}
		return out, nil
	case traits.Lister:
		out := []any{}
		for it := x.Iterator(); it.HasNext() == types.True; {
			val, err := toPlain(it.Next(), depth+1, b)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	}
	if types.IsError(v) {
		return nil, fmt.Errorf("%v", v)
	}
	return nil, fmt.Errorf("a %s is not JSON", v.Type())
}
