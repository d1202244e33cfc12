package workflow

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/norace"
	"github.com/agentgate/nmhost/mediator"
)

// chain builds n steps, s1..sn, each applying step to the one before it
// (written as R), starting from s0.
func chain(s0 string, n int, step string) string {
	var sb strings.Builder
	sb.WriteString(`{"id":"wf-hostile","tasks":[`)
	fmt.Fprintf(&sb, `{"id":"s0","code":{"op":"code:expr","expr":%q}}`, s0)
	for i := 1; i <= n; i++ {
		expr := strings.ReplaceAll(step, "R", fmt.Sprintf("r.s%d", i-1))
		fmt.Fprintf(&sb, `,{"id":"s%d","dependsOn":["s%d"],"code":{"op":"code:expr","expr":%q}}`, i, i-1, expr)
	}
	sb.WriteString(`]}`)
	return sb.String()
}

// one is a workflow of a 2 KiB string, s0, and one step over it, s1.
func one(expr string) string { return oneOf(2048, expr) }

// oneOf is one with a string of n bytes, built from 8 KiB pieces when
// larger (an expression is at most 16 KiB).
func oneOf(n int, expr string) string {
	if n <= 8<<10 {
		return chain("'"+strings.Repeat("x", n)+"'", 1, expr)
	}
	return chain(fmt.Sprintf("lists.range(%d).map(i, '%s').join('')", n/(8<<10), strings.Repeat("x", 8<<10)), 1, expr)
}

// big is one with a 64 KiB string: a list of 2,000 references to it is
// 128 MiB of JSON, and 2,000 is few enough iterations for CEL under the
// race detector.
func big(expr string) string { return oneOf(64<<10, expr) }

// TestHostileStepsAreTooLarge: each workflow would build gigabytes (or
// exhaust the host) without the bounds; each is refused with too_large,
// by the step that passes the bound, and the heap stays small. Without
// the bounds, a list of 2,000 pairs of references to a
// 64 KiB string is 256 MiB once stringified, and the replace 4 GiB.
func TestHostileStepsAreTooLarge(t *testing.T) {
	cases := []struct {
		name, spec string
		failing    string // the step refused with too_large
	}{
		{"concat doubling", chain("'"+strings.Repeat("x", 1024)+"'", 30, "R + R"), "s10"},
		{"stringify doubling", chain("'x'", 40, "json.stringify([R, R])"), ""},
		{"stringify of shared references", big("json.stringify(lists.range(2000).map(i, [R, R]))"), "s1"},
		{"result of shared references", big("lists.range(2000).map(i, [R, R])"), "s1"},
		{"join of shared references", big("lists.range(2000).map(i, R).join(R)"), "s1"},
		{"replace", big("R.replace('x', R)"), "s1"},
		{"format", big("'%s'.format([lists.range(2000).map(i, R)])"), "s1"},
		{"flatten", big("lists.range(2000).map(i, [R, R]).flatten()"), "s1"},
		{"split", big("(R + R + R).split('').size()"), "s1"},
		{"json.encode", big("json.encode(lists.range(2000).map(i, R))"), "s1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			s := mustParse(t, c.spec)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			sum, err := Run(context.Background(), s, f.env(nil))
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			var refused *TaskResult
			for i, r := range sum.Tasks {
				if r.Code == mediator.CodeTooLarge {
					refused = &sum.Tasks[i]
					break
				}
				if r.Status != "ok" {
					t.Fatalf("task %s failed with %s before any too_large: %s", r.Task, r.Code, r.Error)
				}
			}
			if refused == nil {
				last := sum.Tasks[len(sum.Tasks)-1]
				t.Fatalf("nothing refused with too_large: the last task, %s, ended %s", last.Task, last.Status)
			}
			if c.failing != "" && refused.Task != c.failing {
				t.Errorf("refused at %s (%s), want %s", refused.Task, refused.Error, c.failing)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %s; allocated %d MiB, heap in use %d MiB", refused.Task, refused.Error, alloc>>20, after.HeapInuse>>20)
			if alloc > 256<<20 || after.HeapInuse > 256<<20 {
				t.Fatalf("allocated %d MiB, heap in use %d MiB: over 256 MiB", alloc>>20, after.HeapInuse>>20)
			}
		})
	}
}

// TestValuesUnderTheBoundPass: the bounds leave ordinary steps alone, up
// to a result of about MaxValueBytes.
func TestValuesUnderTheBoundPass(t *testing.T) {
	for _, expr := range []string{
		"json.stringify(lists.range(400).map(i, R))",
		"R.replace('x', 'yy')",
		"lists.range(100).map(i, R).join(',')",
		"json.parse(json.stringify({'a': [R, R]})).a.size()",
		"'%s-%s'.format([R, R]).size()",
		"(R + R).split('').size()",
		"lists.range(100).map(i, [R]).flatten().size()",
		"json.encode(lists.range(100).map(i, R)).size()",
	} {
		t.Run(expr, func(t *testing.T) {
			f := newFixture(t)
			sum, err := Run(context.Background(), mustParse(t, one(expr)), f.env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if r := sum.Tasks[1]; r.Status != "ok" {
				t.Fatalf("%s: %s", r.Code, r.Error)
			}
		})
	}
}

// formatBomb is a workflow whose step "boom" formats 1e308 with 100
// digits 2,500 times (a 15 KB format string, 1 MiB of output), expr times.
func formatBomb(expr string) string {
	return `{"id":"wf-format","tasks":[
		{"id":"f","code":{"op":"code:expr","expr":"lists.range(2500).map(i, '%.100f').join('')"}},
		{"id":"a","code":{"op":"code:expr","expr":"lists.range(2500).map(i, 1e308)"}},
		{"id":"boom","dependsOn":["f","a"],"code":{"op":"code:expr","expr":"` + expr + `"}}]}`
}

// TestGrowingFunctionsCostTheirSize: json.stringify, json.parse and
// format are charged for the bytes they read and write, so repeating them
// passes the cost limit (a trap) long before their results fill the heap:
// at a cost of 1 per call, or of their input only, these steps fit in the
// limit and the format one keeps 200 MiB.
//
// Under the race detector it runs in a copy of this test binary built
// without it (norace.Moved): reaching the cost limit is work the detector
// slows past the evaluation's 2 s deadline on a loaded 2-core machine
// (seen 2026-11-28), so the step ended by its time, not its cost, and the
// test could not tell which bound held. It has nothing concurrent to check.
func TestGrowingFunctionsCostTheirSize(t *testing.T) {
	if norace.Moved(t, "1") {
		return
	}
	cases := []struct{ name, spec string }{
		{"json.stringify", one("lists.range(3000).map(i, json.stringify(R)).size()")},
		{"json.parse", one("lists.range(3000).map(i, json.parse(json.stringify(R))).size()")},
		{"format", formatBomb("lists.range(200).map(j, r.f.format(r.a)).size()")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			spec := mustParse(t, c.spec)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			sum, err := Run(context.Background(), spec, f.env(nil))
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			r := sum.Tasks[len(sum.Tasks)-1]
			if r.Code != mediator.CodeTrap || !strings.Contains(r.Error, "cost limit") {
				t.Fatalf("%s: %s %s", r.Status, r.Code, r.Error)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("allocated %d MiB, heap in use %d MiB", alloc>>20, after.HeapInuse>>20)
			if alloc > 256<<20 || after.HeapInuse > 256<<20 {
				t.Fatalf("allocated %d MiB, heap in use %d MiB: over 256 MiB", alloc>>20, after.HeapInuse>>20)
			}
		})
	}
}

// TestFormatPastTheBound: one format call whose output passes 1 MiB (its
// precision, not its arguments, makes it large) is too_large.
func TestFormatPastTheBound(t *testing.T) {
	f := newFixture(t)
	sum, err := Run(context.Background(), mustParse(t, formatBomb("(r.f + r.f).format(r.a + r.a).size()")), f.env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if r := sum.Tasks[2]; r.Code != mediator.CodeTooLarge {
		t.Fatalf("%s: %s %s", r.Status, r.Code, r.Error)
	}
}
