package workflow

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	"github.com/agentgate/nmhost/mediator"
)

// The size bounds of a pure step. CEL's cost model counts the work of an
// evaluation, but by default it charges a call only after it returned:
// one json.stringify of a list holding the same list twice, nested 40
// deep, builds terabytes before anything is counted. So every function
// that can make its result much larger than its arguments is guarded
// before it runs, and charged in proportion to what it reads and writes.
const (
	// MaxValueBytes bounds, in bytes of JSON, a step's result and what one
	// call of a growing function (json.stringify, json.encode, format,
	// replace, join, flatten) may read or build. Past it the step fails
	// with too_large.
	MaxValueBytes = 1 << 20
	// MaxListItems bounds the list one call of split or lists.range may
	// build: each item costs a few dozen bytes of heap, so a split of a
	// string of separators is the cheapest way to a large heap.
	MaxListItems = 1 << 17
	// costPerByte is what a byte read or written costs, in CEL's units:
	// a tenth, as CEL charges its own string functions.
	costPerByte = 0.1
)

// errTooLarge marks a value past the bounds; eval reports it as too_large.
var errTooLarge = errors.New("value too large")

func tooLarge(what string, n, bound int) ref.Val {
	return types.WrapErr(fmt.Errorf("%w: %s would be %d bytes or items or more, past the bound of %d", errTooLarge, what, n, bound))
}

// guards wraps the growing functions of the extension libraries with a
// check of their arguments, by overload id. Each check returns the size
// the call would build, and whether it fits.
var guards = map[string]func(args []ref.Val) (size int, ok bool){
	"string_replace_string_string":     replaceSize,
	"string_replace_string_string_int": replaceSize,
	"list_join":                        joinSize,
	"list_join_string":                 joinSize,
	"string_split_string":              splitSize,
	"string_split_string_int":          splitSize,
	"string_format":                    argsSize,
	"list_flatten":                     argsSize,
	"list_flatten_int":                 argsSize,
	"json_encode_dyn":                  argsSize,
	"strings_quote":                    func([]ref.Val) (int, bool) { return 0, true }, // at most 6 times its input: checked after
	// Comparisons (compare.go).
	"list_sets_contains_list":   pairWork,
	"list_sets_intersects_list": pairWork,
	"list_sets_equivalent_list": pairWork,
	"list_distinct":             selfWork,
}

// guardedOptions redefines each guarded overload of env with the same
// signature and its own implementation behind the check (cel-go allows a
// binding to be replaced when the signature is the same).
//
// A guard whose overload it cannot find (a cel-go release that renamed
// one) is an error, not a silent gap: every step then fails to compile.
func guardedOptions(env *cel.Env) ([]cel.EnvOption, error) {
	var opts []cel.EnvOption
	installed := map[string]bool{}
	for name, fn := range env.Functions() {
		bindings, err := fn.Bindings()
		if err != nil {
			return nil, err
		}
		impl := map[string]func(...ref.Val) ref.Val{}
		for _, b := range bindings {
			switch {
			case b.Function != nil:
				impl[b.Operator] = b.Function
			case b.Binary != nil:
				bin := b.Binary
				impl[b.Operator] = func(a ...ref.Val) ref.Val { return bin(a[0], a[1]) }
			case b.Unary != nil:
				un := b.Unary
				impl[b.Operator] = func(a ...ref.Val) ref.Val { return un(a[0]) }
			}
		}
		for _, o := range fn.OverloadDecls() {
			check, ok := guards[o.ID()]
			orig := impl[o.ID()]
			if !ok || orig == nil {
				continue
			}
			binding := cel.FunctionBinding(func(args ...ref.Val) ref.Val {
				if n, ok := check(args); !ok {
					switch name {
					case "split":
						return tooLarge(name, n, MaxListItems)
					case "sets.contains", "sets.intersects", "sets.equivalent", "distinct":
						return tooDeep(name, n)
					}
					return tooLarge(name, n, MaxValueBytes)
				}
				// A function whose result may outgrow the check (format's
				// precision, quote's escapes) is checked after it, too: the
				// excess is garbage at once, never a value.
				out := orig(args...)
				if s, ok := out.(types.String); ok && len(s) > MaxValueBytes {
					return tooLarge(name, len(s), MaxValueBytes)
				}
				return out
			})
			overload := cel.Overload
			if o.IsMemberFunction() {
				overload = cel.MemberOverload
			}
			opts = append(opts, cel.Function(name, overload(o.ID(), o.ArgTypes(), o.ResultType(), binding)))
			installed[o.ID()] = true
		}
	}
	for id := range guards {
		if !installed[id] {
			return nil, fmt.Errorf("workflow: no overload %s with its own binding to guard", id)
		}
	}
	return opts, nil
}

func replaceSize(args []ref.Val) (int, bool) {
	s, ok1 := args[0].(types.String)
	old, ok2 := args[1].(types.String)
	repl, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return 0, true // the original reports the type error
	}
	n := strings.Count(string(s), string(old))
	if len(args) > 3 {
		if lim, ok := args[3].(types.Int); ok && lim >= 0 && int64(n) > int64(lim) {
			n = int(lim)
		}
	}
	size := len(s) + n*(len(repl)-len(old))
	if n > 0 && len(repl) > 0 && size/n < len(repl)-len(old) { // overflow
		return math.MaxInt, false
	}
	return size, size <= MaxValueBytes
}

func joinSize(args []ref.Val) (int, bool) {
	l, ok := args[0].(traits.Lister)
	if !ok {
		return 0, true
	}
	sep := 0
	if len(args) > 1 {
		if s, ok := args[1].(types.String); ok {
			sep = len(s)
		}
	}
	size := 0
	for it := l.Iterator(); it.HasNext() == types.True; {
		if s, ok := it.Next().(types.String); ok {
			size += len(s)
		}
		size += sep
		if size > MaxValueBytes {
			return size, false
		}
	}
	return size, true
}

func splitSize(args []ref.Val) (int, bool) {
	s, ok1 := args[0].(types.String)
	sep, ok2 := args[1].(types.String)
	if !ok1 || !ok2 {
		return 0, true
	}
	var n int
	if sep == "" {
		n = utf8.RuneCountInString(string(s))
	} else {
		n = strings.Count(string(s), string(sep)) + 1
	}
	return n, n <= MaxListItems
}

// argsSize bounds functions whose result is at most about as large as the
// values they walk (format, flatten, json.encode): the walk itself stops
// at the bound, so a list sharing itself exponentially costs no more.
func argsSize(args []ref.Val) (int, bool) {
	b := budget{left: MaxValueBytes}
	for _, a := range args {
		if !b.walk(a, 0) {
			return MaxValueBytes + 1, false
		}
	}
	return MaxValueBytes - b.left, true
}

// budget counts about one unit per byte of a value's JSON encoding, so a
// walk of a value that shares itself stops early rather than visiting
// every path.
type budget struct{ left int }

func (b *budget) take(n int) bool {
	b.left -= n
	return b.left >= 0
}

func (b *budget) walk(v ref.Val, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case types.String:
		return b.take(len(x) + 2)
	case types.Bytes:
		return b.take(len(x)*4/3 + 2)
	case *types.Optional:
		if x.HasValue() {
			return b.walk(x.GetValue(), depth+1)
		}
		return b.take(4)
	case traits.Mapper:
		if !b.take(2) {
			return false
		}
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			if !b.walk(k, depth+1) || !b.walk(x.Get(k), depth+1) || !b.take(2) {
				return false
			}
		}
		return true
	case traits.Lister:
		if !b.take(2) {
			return false
		}
		for it := x.Iterator(); it.HasNext() == types.True; {
			if !b.walk(it.Next(), depth+1) || !b.take(1) {
				return false
			}
		}
		return true
	}
	return b.take(8)
}

// outputTrackers charge format and quote for what they build: the
// extension library charges them for their input only, and format's
// precision (up to 100 digits) makes a 6-byte clause 410 bytes, so 200
// calls of a 15 KB format string would keep 200 MiB within the cost
// limit. They override the library's trackers (program options given to
// Program apply after the libraries').
func outputTrackers() cel.ProgramOption {
	track := func(args []ref.Val, result ref.Val) *uint64 {
		c := 1 + uint64(float64(byteSize(args[0])+byteSize(result))*costPerByte)
		return &c
	}
	return cel.CostTrackerOptions(
		interpreter.OverloadCostTracker("string_format", track),
		interpreter.OverloadCostTracker("strings_quote", track),
	)
}

// costs charges our own functions in proportion to what they read and
// build; nil leaves a call to CEL's defaults and the extension libraries'
// trackers.
type costs struct{}

func (costs) CallCost(_, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	var c uint64
	switch overloadID {
	case "json_stringify_dyn", "json_parse_string":
		c = 1 + uint64(float64(byteSize(args[0])+byteSize(result))*costPerByte)
	case "sum_list_int", "sum_list_double":
		c = 1 + uint64(sizeOf(args[0]))
	default:
		return nil
	}
	return &c
}

var _ interpreter.ActualCostEstimator = costs{}

// byteSize is the size of a string or the count of a list's or map's
// items: the cost model's measure, no walk.
func byteSize(v ref.Val) int {
	switch x := v.(type) {
	case types.String:
		return len(x)
	case types.Bytes:
		return len(x)
	}
	return sizeOf(v)
}

func sizeOf(v ref.Val) int {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok {
			return int(n)
		}
	}
	return 1
}

// checkResult refuses a step result past MaxValueBytes once encoded.
func checkResult(n int) error {
	if n > MaxValueBytes {
		return mediator.Errorf(mediator.CodeTooLarge, "the step's value is %d bytes of JSON or more, past the bound of %d", n, MaxValueBytes)
	}
	return nil
}
