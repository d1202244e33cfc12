package workflow

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// shared is a list of 2^n leaves, built at a cost of about n: each step
// holds the previous list twice.
func shared(n int) string { return "[[1]]" + strings.Repeat(".map(x, [x, x])", n) }

// TestComparisonsOfSharedValues: comparing values that share themselves
// (40 doublings: a trillion leaves, days of CPU in one uninterruptible
// call) is refused with too_large at once; ordinary comparisons are
// unchanged. Without the walk, 24 doublings already took 2.6 s, past the
// 2 s a step has.
func TestComparisonsOfSharedValues(t *testing.T) {
	bomb := shared(40)
	cases := []struct {
		name, expr string
		code       mediator.Code
		want       any
	}{
		{"==", bomb + " == " + bomb, mediator.CodeTooLarge, nil},
		{"!=", bomb + " != " + bomb, mediator.CodeTooLarge, nil},
		{"in", bomb + "[0] in " + bomb, mediator.CodeTooLarge, nil},
		{"sets.contains", "sets.contains(" + bomb + ", " + bomb + ")", mediator.CodeTooLarge, nil},
		{"sets.equivalent", "sets.equivalent(" + bomb + ", " + bomb + ")", mediator.CodeTooLarge, nil},
		// Refused before its 5 billion comparisons; CEL's tracker then
		// charges it their cost, so it ends as the cost limit's trap.
		{"distinct of a long list", "lists.range(100000).distinct().size()", mediator.CodeTrap, nil},
		{"equal lists", "[1, [2, 3], {'a': 'b'}] == [1, [2, 3], {'a': 'b'}]", "", true},
		{"unequal maps", "{'a': 1} != {'a': 2}", "", true},
		{"strings", "'abc' == 'abc' && 'a' != 'b'", "", true},
		{"a small shared value", shared(10) + " == " + shared(10), "", true},
		{"in a long list", "2 in lists.range(100000)", "", true},
		{"sets.contains of small lists", "sets.contains([1, 2, 3], [3, 1])", "", true},
		{"distinct", "[1, 2, 1, [3], [3]].distinct()", "", []any{int64(1), int64(2), []any{int64(3)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := evalBounded(t, c.expr, c.code)
			if c.code == "" && fmtAny(v) != fmtAny(c.want) {
				t.Fatalf("%v, want %v", v, c.want)
			}
		})
	}
}

func fmtAny(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestMatchesIsBounded: a match whose string length times its pattern's
// program passes maxMatchWork is refused with too_large before it runs
// (without the bound, 1 MiB and `[a-z]{1000}b` ran about 13 s in one
// call); ordinary matches are unchanged.
func TestMatchesIsBounded(t *testing.T) {
	cases := []struct {
		name, expr string
		code       mediator.Code
		want       any
	}{
		{"a long string, a large pattern", "lists.range(32).map(i, '" + strings.Repeat("a", 8192) + "').join('').matches('[a-z]{1000}b')", mediator.CodeTooLarge, nil},
		{"member form", "'abc'.matches('^a.c$')", "", true},
		{"global form", "matches('abc', 'x')", "", false},
		{"a long string, a small pattern", "lists.range(32).map(i, '" + strings.Repeat("a", 8192) + "').join('').matches('b')", "", false},
		{"a bad pattern", "'abc'.matches('(')", mediator.CodeTrap, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := evalBounded(t, c.expr, c.code)
			if c.code == "" && v != c.want {
				t.Fatalf("%v, want %v", v, c.want)
			}
		})
	}
}

// evalBounded compiles and evaluates expr, which must end with code (""
// for success), and returns its value.
func evalBounded(t *testing.T, expr string, code mediator.Code) any {
	t.Helper()
	p, err := compile(expr)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v, err := p.eval(context.Background(), map[string]any{})
	if got := mediator.CodeOf(err); err != nil && got != code || err == nil && code != "" {
		t.Fatalf("%v (%s), want %q", err, got, code)
	}
	// A guard against the unbounded, not a timing: without the refusal
	// these run for hours; the code above is the check.
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v", took)
	}
	return v
}
