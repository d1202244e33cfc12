package purejs

import (
	"context"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// TestBounds runs hostile steps: each ends with its reason code, never
// with the host's memory or time, and none reaches code from a string or
// an object of the host.
func TestBounds(t *testing.T) {
	lim := DefaultLimits()
	lim.Timeout = 300 * time.Millisecond
	lim.MaxHeapGrowth = 64 << 20
	for _, tc := range []struct {
		name, body string
		vars       map[string]any
		want       mediator.Code
		value      any
		timeout    time.Duration
		heap       uint64 // MaxHeapGrowth, when not the table's
	}{
		{name: "inputs are JSON, the result too", body: "return xs.filter((x) => x > 1).length", vars: map[string]any{"xs": []any{1, 2, 3}}, value: 2.0},
		{name: "undefined is nil", body: "return undefined"},
		{name: "a throw is a trap", body: "throw new Error('no')", want: mediator.CodeTrap},
		{name: "an endless loop stops at the deadline", body: "for (;;) {}", want: mediator.CodeTimeout},
		{name: "recursion stops at the stack bound", body: "const f = (n) => f(n + 1) + 1; return f(0)", want: mediator.CodeTrap},
		{name: "padStart asks for too much at once", body: "return 'x'.padStart(1e9)", want: mediator.CodeTrap},
		{name: "repeat asks for too much at once", body: "return 'ab'.repeat(1e8)", want: mediator.CodeTrap},
		{name: "Array.from of a huge length", body: "return Array.from({length: 1e9})", want: mediator.CodeTrap},
		{name: "doubling a string past the result bound", body: "let s = 'x'.repeat(1000); for (let i = 0; i < 13; i++) s = s + s; return s", want: mediator.CodeTooLarge, timeout: 60 * time.Second, heap: 1 << 30},
		{name: "doubling a string grows the heap past its bound", body: "let s = 'x'.repeat(1 << 20); for (let i = 0; i < 8; i++) s = s + s; return s.length", want: mediator.CodeMemoryLimit, timeout: 60 * time.Second},
		{name: "no eval", body: "return eval('1')", want: mediator.CodeTrap},
		{name: "no Function", body: "return Function('return 1')()", want: mediator.CodeTrap},
		{name: "constructor.constructor is no Function", body: "return [].map.constructor('return 1')()", want: mediator.CodeTrap},
		{name: "an async function's constructor neither", body: "return typeof Object.getPrototypeOf(async function () {}).constructor('return 1')", value: "object"},
		{name: "no host objects", body: "return [typeof require, typeof process, typeof console, typeof fetch, typeof setTimeout].join()", value: "undefined,undefined,undefined,undefined,undefined"},
		{name: "a function is no JSON value", body: "return () => 1"},
		{name: "a pollution stays in its step", body: "const o = {}; o['__proto__'].polluted = 1; return ({}).polluted", value: 1.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := lim
			if tc.timeout != 0 {
				lim.Timeout = tc.timeout
			}
			if tc.heap != 0 {
				lim.MaxHeapGrowth = tc.heap
			}
			start := time.Now()
			v, err := Run(context.Background(), tc.body, tc.vars, lim)
			t.Logf("%v", time.Since(start))
			if mediator.CodeOf(err) != tc.want {
				t.Fatalf("%v (%v), want %q", err, v, tc.want)
			}
			if err == nil && v != tc.value {
				t.Fatalf("value %#v, want %#v", v, tc.value)
			}
		})
	}
	// The pollution of the last step is not in the next.
	v, err := Run(context.Background(), "return ({}).polluted === undefined", nil, lim)
	if err != nil || v != true {
		t.Fatalf("a later step saw the pollution: %v %v", v, err)
	}
}

// TestBodyStaysInItsFunction: a body that closes its function to run
// code outside it does not parse.
func TestBodyStaysInItsFunction(t *testing.T) {
	body := "return 1 }); globalThis.escaped = 1; (function () {"
	if err := Check(body, nil); mediator.CodeOf(err) != mediator.CodeInvalidWorkflow {
		t.Fatalf("Check: %v", err)
	}
	if _, err := Run(context.Background(), body, nil, DefaultLimits()); mediator.CodeOf(err) != mediator.CodeInvalidWorkflow {
		t.Fatalf("Run: %v", err)
	}
	if err := Check("return a + b", map[string]string{"a": "x", "b": "y"}); err != nil {
		t.Fatal(err)
	}
	if err := Check("return 1", map[string]string{"constructor": "x"}); mediator.CodeOf(err) != mediator.CodeInvalidWorkflow {
		t.Fatalf("a reserved name bound: %v", err)
	}
}

// TestArgsExprIsOneExpression: an argsExpr that ends its expression to
// run statements after it is refused; one expression passes.
func TestArgsExprIsOneExpression(t *testing.T) {
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{"{ a: 1, b: `x${n}` }", true},
		{"n > 1 ? { a: n } : {}", true},
		{"1); globalThis.x = 1; (2", false},
		{"1\n); while (true) {} (", false},
		{"", false},
	} {
		err := CheckExpr(tc.expr, map[string]string{"n": "t"})
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.expr, err)
		}
	}
}
