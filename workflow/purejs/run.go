package purejs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"

	"github.com/agentgate/nmhost/mediator"
)

// Limits bound one step.
type Limits struct {
	// Timeout is the step's CPU time: past it the engine is interrupted
	// wherever it is.
	Timeout time.Duration
	// MaxResultBytes bounds the step's result as JSON, and each input.
	MaxResultBytes int
	// MaxHeapGrowth is how far the process's heap may grow while the step
	// runs before it is interrupted (memory_limit).
	MaxHeapGrowth uint64
	// MaxCallStack bounds the engine's call depth.
	MaxCallStack int
	// MaxLength bounds the length asked of padStart, padEnd, repeat and
	// Array.from: one call cannot ask for more than this at once.
	MaxLength int
}

// DefaultLimits are the host's: those of a CEL step (2 s) and of a
// workflow's values.
func DefaultLimits() Limits {
	return Limits{Timeout: 2 * time.Second, MaxResultBytes: 4 << 20, MaxHeapGrowth: 256 << 20, MaxCallStack: 256, MaxLength: 1 << 20}
}

// Run calls body as the body of a strict JavaScript function whose
// parameters are the names of vars, each bound to its value as JSON
// (parsed inside the engine: no Go object is ever reachable from the
// step), and returns the function's result as JSON decodes it (nil for
// undefined). A step that throws fails with trap; one past its time with
// timeout; one whose heap grows too far with memory_limit; one whose
// result is too large with too_large.
func Run(ctx context.Context, body string, vars map[string]any, lim Limits) (any, error) {
	names := make([]string, 0, len(vars))
	for n := range vars {
		if !ValidName(n) {
			return nil, mediator.Errorf(mediator.CodeInvalidWorkflow, "%q is not a JavaScript name to bind", mediator.Truncate(n, 64))
		}
		names = append(names, n)
	}
	slices.Sort(names)
	inputs := make([]string, len(names))
	for i, n := range names {
		b, err := json.Marshal(vars[n])
		if err != nil {
			return nil, mediator.Errorf(mediator.CodeTrap, "input %s is not JSON: %v", n, err)
		}
		if len(b) > lim.MaxResultBytes {
			return nil, mediator.Errorf(mediator.CodeTooLarge, "input %s is %d bytes; the limit is %d", n, len(b), lim.MaxResultBytes)
		}
		inputs[i] = string(b)
	}
	vm := goja.New()
	vm.SetMaxCallStackSize(lim.MaxCallStack)
	stop := watch(ctx, vm, lim)
	defer stop()
	out, err := call(vm, names, inputs, body, lim)
	if err != nil {
		return nil, classify(err, stop)
	}
	return out, nil
}

// call builds the step's function from exactly the text Check proved is
// one function (the engine's own Function constructor would let a body
// close its function and run code outside it), then removes every way
// to a function constructor and eval before the step runs.
func call(vm *goja.Runtime, names, inputs []string, body string, lim Limits) (any, error) {
	src, err := wrap(body, names)
	if err != nil {
		return nil, err
	}
	fnv, err := vm.RunString(src)
	if err != nil {
		return nil, err
	}
	fn, ok := goja.AssertFunction(fnv)
	if !ok {
		return nil, errors.New("the step is not a function")
	}
	jsonObj := vm.Get("JSON").ToObject(vm)
	parse, _ := goja.AssertFunction(jsonObj.Get("parse"))
	stringify, _ := goja.AssertFunction(jsonObj.Get("stringify"))
	if _, err := vm.RunString(fmt.Sprintf(harden, lim.MaxLength)); err != nil {
		return nil, fmt.Errorf("hardening the engine: %w", err)
	}
	vals := make([]goja.Value, len(inputs))
	for i, in := range inputs {
		v, err := parse(goja.Undefined(), vm.ToValue(in))
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	res, err := fn(goja.Undefined(), vals...)
	if err != nil {
		return nil, err
	}
	if goja.IsUndefined(res) {
		return nil, nil
	}
	s, err := stringify(goja.Undefined(), res)
	if err != nil {
		return nil, err
	}
	if goja.IsUndefined(s) {
		return nil, nil // a function, a symbol: nothing JSON can carry
	}
	text := s.String()
	if len(text) > lim.MaxResultBytes {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "the step's result is %d bytes as JSON; the limit is %d", len(text), lim.MaxResultBytes)
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return nil, mediator.Errorf(mediator.CodeTrap, "the step's result: %v", err)
	}
	return v, nil
}

// harden runs before the step: it takes away eval and the constructors
// of functions (reachable as any function's .constructor), so no string
// can become code, and caps the calls that allocate a length they are
// given in one go.
const harden = `(function () {
	"use strict";
	const protos = [Object.getPrototypeOf(function () {}), Object.getPrototypeOf(async function () {}), Object.getPrototypeOf(function* () {})];
	for (const p of protos) {
		delete p.constructor;
		if (Object.prototype.hasOwnProperty.call(p, "constructor")) throw new Error("a function constructor stays reachable");
	}
	delete globalThis.eval;
	delete globalThis.Function;
	const max = %d;
	const guard = (obj, name, len) => {
		const orig = obj[name];
		Object.defineProperty(obj, name, { value: function (...a) {
			const n = len(this, a);
			if (n > max) throw new RangeError(name + " of " + n + " is more than the step may allocate at once (" + max + ")");
			return orig.apply(this, a);
		}, writable: true, configurable: true });
	};
	guard(String.prototype, "padStart", (s, a) => Number(a[0]));
	guard(String.prototype, "padEnd", (s, a) => Number(a[0]));
	guard(String.prototype, "repeat", (s, a) => String(s).length * Number(a[0]));
	guard(Array, "from", (s, a) => (a[0] == null ? 0 : Number(a[0].length)));
})()`

// watch interrupts the engine when the step's time is up, its context
// ends, or the heap grows past the limit; stop ends the watch and tells
// why it interrupted.
func watch(ctx context.Context, vm *goja.Runtime, lim Limits) func() error {
	done := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var why error
	interrupt := func(err error) {
		mu.Lock()
		if why == nil {
			why = err
		}
		mu.Unlock()
		vm.Interrupt(err)
	}
	go func() {
		timer := time.NewTimer(lim.Timeout)
		defer timer.Stop()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		base := heapBytes()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				interrupt(mediator.Errorf(mediator.CodeTimeout, "the step was stopped: %v", ctx.Err()))
				return
			case <-timer.C:
				interrupt(mediator.Errorf(mediator.CodeTimeout, "the step ran past its %v", lim.Timeout))
				return
			case <-tick.C:
				if h := heapBytes(); h > base && h-base > lim.MaxHeapGrowth {
					interrupt(mediator.Errorf(mediator.CodeMemoryLimit, "the step grew the heap by more than %d MiB", lim.MaxHeapGrowth>>20))
					return
				}
			}
		}
	}()
	return func() error {
		once.Do(func() { close(done) })
		mu.Lock()
		defer mu.Unlock()
		return why
	}
}

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
var heapMu sync.Mutex

func heapBytes() uint64 {
	heapMu.Lock()
	defer heapMu.Unlock()
	metrics.Read(heapSample)
	if heapSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return heapSample[0].Value.Uint64()
}

// classify gives an engine's error its reason code.
func classify(err error, stop func() error) error {
	if why := stop(); why != nil {
		return why
	}
	var me *mediator.Error
	if errors.As(err, &me) {
		return err
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return mediator.Errorf(mediator.CodeTrap, "the step threw: %s", mediator.Truncate(ex.Value().String(), 400))
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return mediator.Errorf(mediator.CodeTrap, "the step went deeper than %s", "its call-stack bound")
	}
	return mediator.Errorf(mediator.CodeTrap, "%s", mediator.Truncate(err.Error(), 400))
}

// ValidName reports whether s is a plain JavaScript name a step may bind:
// ASCII letters, digits, '_' and '$', not starting with a digit, not a
// reserved word and not one of the names the engine takes away.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$') {
			return false
		}
	}
	return !slices.Contains(reserved, s)
}

var reserved = strings.Fields(`break case catch class const continue debugger default delete do else enum export extends false
finally for function if import in instanceof new null return super switch this throw true try typeof var void while with yield
let static implements interface package private protected public await arguments eval undefined NaN Infinity
Function Object Array String Number Boolean Math JSON globalThis __proto__ constructor prototype`)

// Check parses body as a step's function body with the names of vars,
// without running it: a step that cannot parse, or whose body closes its
// function to run code outside it, refuses its workflow before anything
// runs.
func Check(body string, vars map[string]string) error {
	names := make([]string, 0, len(vars))
	for n := range vars {
		if !ValidName(n) {
			return mediator.Errorf(mediator.CodeInvalidWorkflow, "%q is not a JavaScript name to bind", mediator.Truncate(n, 64))
		}
		names = append(names, n)
	}
	slices.Sort(names)
	_, err := wrap(body, names)
	return err
}

// CheckExpr parses expr as one JavaScript expression (an mcp task's
// argsExpr): text that ends the expression to run statements after it is
// refused. (What an expression computes is the engine's to bound, as a
// step's body is.)
func CheckExpr(expr string, vars map[string]string) error {
	src := "(\n" + expr + "\n)"
	prog, err := parser.ParseFile(nil, "expr", src, 0, parser.WithDisableSourceMaps)
	if err == nil && len(prog.Body) == 1 {
		if _, ok := prog.Body[0].(*ast.ExpressionStatement); ok {
			return Check("return ("+expr+"\n);", vars)
		}
	}
	return mediator.Errorf(mediator.CodeInvalidWorkflow, "argsExpr is not one JavaScript expression")
}

// wrap is the step's function as text, once proved to be exactly one
// function expression whose body is the step's.
func wrap(body string, names []string) (string, error) {
	src := "(function (" + strings.Join(names, ",") + ") {\n\"use strict\";\n" + body + "\n})"
	prog, err := parser.ParseFile(nil, "step", src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return "", mediator.Errorf(mediator.CodeInvalidWorkflow, "the step's JavaScript does not parse: %s", mediator.Truncate(err.Error(), 400))
	}
	if len(prog.Body) == 1 {
		if st, ok := prog.Body[0].(*ast.ExpressionStatement); ok {
			if fn, ok := st.Expression.(*ast.FunctionLiteral); ok && int(fn.Idx0()) == 2 && int(fn.Body.Idx1()) == len(src) {
				return src, nil
			}
		}
	}
	return "", mediator.Errorf(mediator.CodeInvalidWorkflow, "the step's JavaScript is not one function body: it closes its function")
}
