package script

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/workflow"
)

// longScript is a script of n lines: a tool call every tenth line, pure
// steps between them over the last call's result and the step before.
func longScript(n int) string {
	var b strings.Builder
	b.WriteString("const r0 = await mcp.db.query({ sql: \"SELECT 1\" });\n")
	last := "r0"
	for i := 1; i < n; i++ {
		switch {
		case i%10 == 0:
			fmt.Fprintf(&b, "const r%d = await mcp.db.query({ n: v%d });\n", i, i-1)
			last = fmt.Sprintf("r%d", i)
		case i%10 == 1:
			fmt.Fprintf(&b, "const v%d = [%s].filter((x) => x !== null).length;\n", i, last)
		default:
			fmt.Fprintf(&b, "const v%d = Math.round(v%d * 3 / 2) %% 1000 + `${v%d}`.length;\n", i, i-1, i-1)
		}
	}
	return b.String()
}

// BenchmarkPlan1000Lines: converting a 1,000-line script and laying its
// workflow out, as `nmhost workflow plan` does.
func BenchmarkPlan1000Lines(b *testing.B) {
	src := []byte(longScript(1000))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		spec, err := Convert("long.js", src, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := workflow.Plan(spec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun1000Tasks: a converted workflow of 1,000 tasks (100 tool
// calls, 900 pure steps) run end to end: every task decided and recorded
// on a real store, every pure step in its own engine.
func BenchmarkRun1000Tasks(b *testing.B) {
	spec, err := Convert("long.js", []byte(longScript(1000)), Options{})
	if err != nil {
		b.Fatal(err)
	}
	if len(spec.Tasks) != 1000 {
		b.Fatalf("%d tasks", len(spec.Tasks))
	}
	for b.Loop() {
		gw := &stubGateway{stubs: map[string]any{}}
		sum := runConverted(b, spec, gw)
		if len(gw.calls) != 100 || len(sum.Tasks) != 1000 {
			b.Fatalf("%d calls, %d tasks", len(gw.calls), len(sum.Tasks))
		}
	}
}
