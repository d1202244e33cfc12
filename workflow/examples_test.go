package workflow

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestDesignExamples runs the example workflows of the pure-operations
// design (testdata/*.json) with the outcomes it describes: pure steps are
// never asked about, whatever the approval; a mixed graph asks only about
// its side effects (once for the plan, or once per layer that has one,
// with the query's tool set to ask as the design's read-only query was);
// adjacent pure layers run fused, reported with the steps and names they
// were; a step named for eval, or whose code reaches for the network, is
// refused before anything runs.
func TestDesignExamples(t *testing.T) {
	askFetch := map[string]string{mediator.OpNetworkFetch: ModeAsk}
	for _, tc := range []struct {
		name, file string
		approval   string
		tools      map[string]string
		want       mediator.Code // the workflow's refusal; "" runs
		prompts    int
		asked      []string // the tasks the prompts listed, in order
		requests   []string
		values     map[string]any
		layers     int
		physical   int
		fusedFrom  []string
		tools2     []string
	}{
		{name: "average age, the plan approved once", file: "average-age.json", tools: askFetch, prompts: 1,
			asked:    []string{"users", "send"},
			requests: []string{"GET https://api.example.com/users", "POST https://api.example.com/notify"},
			values:   map[string]any{"count": int64(2), "avg": 35.5, "rounded": 36.0}, layers: 6, physical: 3,
			fusedFrom: []string{"active", "total", "count", "avg", "rounded"},
			tools2:    []string{"code:filter", "code:reduce", "code:get_length", "code:divide", "code:Math.round"}},
		{name: "average age, layer by layer: two questions, none for the pure steps", file: "average-age.json", approval: ApproveLayer, tools: askFetch, prompts: 2,
			asked:    []string{"users", "send"},
			requests: []string{"GET https://api.example.com/users", "POST https://api.example.com/notify"},
			values:   map[string]any{"rounded": 36.0}, layers: 6, physical: 3,
			fusedFrom: []string{"active", "total", "count", "avg", "rounded"},
			tools2:    []string{"code:filter", "code:reduce", "code:get_length", "code:divide", "code:Math.round"}},
		{name: "only pure steps: no question", file: "pure-only.json", approval: ApproveLayer, tools: askFetch,
			values: map[string]any{"avg": 35.5}, layers: 4, physical: 1,
			fusedFrom: []string{"users", "active", "total", "count", "avg"},
			tools2:    []string{"code:JSON.parse", "code:filter", "code:reduce", "code:get_length", "code:divide"}},
		{name: "mixed: only the side effect is asked about", file: "mixed.json", prompts: 1, asked: []string{"post"},
			requests: []string{"GET https://api.example.com/users", "POST https://api.example.com/notify"},
			values:   map[string]any{"upper": "ADA, BO, CY"}, layers: 5, physical: 3,
			fusedFrom: []string{"names", "line", "upper"}, tools2: []string{"code:map", "code:join", "code:toUpperCase"}},
		{name: "corrupted operation name", file: "corrupted-op.json", want: mediator.CodeUnsafeOperation},
		{name: "corrupted step code", file: "corrupted-code.json", want: mediator.CodeInvalidWorkflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			f := newFixture(t)
			lp := &layerPrompter{answer: mediator.AnswerAllowOnce}
			env := f.env(lp)
			env.Settings.Approval, env.Settings.Tools = tc.approval, tc.tools
			spec, err := Parse(raw)
			var sum Summary
			if err == nil {
				sum, err = Run(context.Background(), spec, env)
			}
			if tc.want != "" || err != nil {
				if mediator.CodeOf(err) != tc.want || len(f.calls.done) != 0 {
					t.Fatalf("%v (want %q); performed %v", err, tc.want, f.calls.done)
				}
				return
			}
			var asked []string
			for _, p := range lp.asked {
				for _, r := range p.Tasks {
					if r.Op.Name != mediator.OpNetworkFetch {
						t.Fatalf("a prompt lists %s", r.Op.Name)
					}
					asked = append(asked, r.Op.Task)
				}
			}
			if sum.Status != "ok" || sum.Prompts != tc.prompts || !slices.Equal(asked, tc.asked) || !slices.Equal(f.calls.done, tc.requests) {
				t.Fatalf("status %s, %d prompts listing %v; requests %v", sum.Status, sum.Prompts, asked, f.calls.done)
			}
			got := map[string]any{}
			for _, r := range sum.Tasks {
				got[r.Task] = r.Value
			}
			for k, v := range tc.values {
				if got[k] != v {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
			if sum.Layers != tc.layers || sum.PhysicalLayers != tc.physical || len(sum.Fused) != 1 ||
				!slices.Equal(sum.Fused[0].FusedFrom, tc.fusedFrom) || !slices.Equal(sum.Fused[0].LogicalTools, tc.tools2) {
				t.Fatalf("layers %d, physical %d, fused %+v", sum.Layers, sum.PhysicalLayers, sum.Fused)
			}
		})
	}
}
