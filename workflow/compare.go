package workflow

import (
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// Comparisons walk values deeply, and a CEL value can share itself:
// `[[1]].map(x, [x, x])` chained 40 times costs 40 units and is a list of
// 2^40 leaves, so `a == a` (one call, which CEL's deadline cannot
// interrupt) would run for days. Each operand of a comparison is walked
// first, at most maxCompareNodes nodes (strings and numbers count one),
// and a comparison whose work would pass maxCompareWork is refused with
// too_large before it starts.
const (
	maxCompareNodes = 1 << 20
	// maxCompareWork is 16 times the cost limit: the quadratic functions
	// (distinct, the set functions) are charged about their work by CEL,
	// after the fact, so anything over CostLimit fails anyway; the margin
	// leaves the nested values of in and the sets their room.
	maxCompareWork = 16 * CostLimit
)

// nodes counts v's nodes up to limit; past it, it returns limit+1.
func nodes(v ref.Val, limit int) int {
	n := 0
	var walk func(v ref.Val, depth int) bool
	walk = func(v ref.Val, depth int) bool {
		if n++; n > limit || depth > maxDepth {
			return false
		}
		switch x := v.(type) {
		case types.String, types.Bytes, types.Int, types.Uint, types.Double, types.Bool, types.Null:
			return true
		case *types.Optional:
			return !x.HasValue() || walk(x.GetValue(), depth+1)
		case traits.Mapper:
			for it := x.Iterator(); it.HasNext() == types.True; {
				k := it.Next()
				if !walk(k, depth+1) || !walk(x.Get(k), depth+1) {
					return false
				}
			}
		case traits.Lister:
			for it := x.Iterator(); it.HasNext() == types.True; {
				if !walk(it.Next(), depth+1) {
					return false
				}
			}
		}
		return true
	}
	if !walk(v, 0) {
		return limit + 1
	}
	return n
}

func tooDeep(what string, n int) ref.Val {
	return types.WrapErr(fmt.Errorf("%w: %s would compare %d nodes or more, past the bound of %d", errTooLarge, what, n, maxCompareWork))
}

// compareGuards are checks for the guards table (bound.go): in and the
// set functions compare every node of one side with every node of the
// other at worst, distinct its list with itself.
func pairWork(args []ref.Val) (int, bool) {
	a, b := nodes(args[0], maxCompareNodes), nodes(args[1], maxCompareNodes)
	if a > maxCompareNodes || b > maxCompareNodes {
		return max(a, b), false
	}
	return a * b, a*b <= maxCompareWork
}

func selfWork(args []ref.Val) (int, bool) {
	n := nodes(args[0], maxCompareNodes)
	if n > maxCompareNodes {
		return n, false
	}
	return n * n, n*n <= maxCompareWork
}

// guardComparisons is a decorator that puts ==, != and in (which CEL
// plans as their own instructions or binds once per function, not through
// the overloads guards replaces) behind the same walk, and matches behind
// a bound on its work.
func guardComparisons() cel.ProgramOption {
	return cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok || len(call.Args()) != 2 {
			return i, nil
		}
		switch call.Function() {
		case "_==_", "_!=_", "@in":
			return guardedCmp{call}, nil
		case "matches":
			return guardedMatch{call}, nil // regex.go
		}
		return i, nil
	})
}

// guardedCmp is ==, != or in with its operands walked first. It keeps the
// call's id, name, overload and arguments, so the cost tracker charges it
// as it charged the original, and computes what the original computes:
// types.Equal, its negation, the container's Contains.
type guardedCmp struct{ interpreter.InterpretableCall }

func (g guardedCmp) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	args := g.Args()
	l := args[0].Exec(frame)
	if types.IsUnknownOrError(l) {
		return l
	}
	r := args[1].Exec(frame)
	if types.IsUnknownOrError(r) {
		return r
	}
	switch g.Function() {
	case "@in":
		if n, ok := pairWork([]ref.Val{l, r}); !ok {
			return tooDeep("in", n)
		}
		c, ok := r.(traits.Container)
		if !ok {
			return types.NewErr("no such overload: in %s", r.Type())
		}
		return c.Contains(l)
	}
	for _, v := range []ref.Val{l, r} {
		switch v.(type) {
		case traits.Lister, traits.Mapper, *types.Optional:
			if n := nodes(v, maxCompareNodes); n > maxCompareNodes {
				return tooDeep(g.Function(), n)
			}
		}
	}
	eq := types.Equal(l, r)
	if g.Function() == "_!=_" {
		if b, ok := eq.(types.Bool); ok {
			return !b
		}
	}
	return eq
}

func (g guardedCmp) Eval(act interpreter.Activation) ref.Val {
	return g.Exec(interpreter.AsFrame(act))
}
