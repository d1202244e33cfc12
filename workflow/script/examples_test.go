package script

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentgate/nmhost/workflow"
)

// TestDesignExamples converts the design's two worked examples: two tool
// calls, each the only task of its layer and the only layers a person
// approves (two approvals, whatever the number of pure steps), and
// between them every pure step fused into one physical layer, as
// testdata/average-age.json of the workflow package runs it. Run against
// the stub gateway, exactly the two tool calls are made (each one an
// approval of the gateway's) and the policy asks nothing.
func TestDesignExamples(t *testing.T) {
	for _, tc := range []struct {
		file      string
		tools     []string
		fusedFrom []string
		ops       []string
		layers    int
	}{
		{file: "testdata/average-age.ts", tools: []string{"users", "slack.send"}, layers: 6,
			fusedFrom: []string{"active", "totalAge", "avgAge", "rounded"},
			ops:       []string{"code:filter", "code:reduce", "code:divide", "code:Math.round"}},
		{file: "testdata/filter-divide.js", tools: []string{"orders", "reports.publish"}, layers: 5,
			fusedFrom: []string{"large", "sum", "count", "mean"},
			ops:       []string{"code:filter", "code:reduce", "code:get_length", "code:divide"}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			src, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			spec, err := Convert(filepath.Base(tc.file), src, Options{ID: "example", AgentID: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			lay, err := workflow.Plan(spec)
			if err != nil {
				t.Fatal(err)
			}
			if lay.Layers != tc.layers || lay.PhysicalLayers != 3 || len(lay.Fused) != 1 ||
				!slices.Equal(lay.Fused[0].FusedFrom, tc.fusedFrom) || !slices.Equal(lay.Fused[0].LogicalTools, tc.ops) {
				t.Fatalf("layout %+v", lay)
			}
			if len(lay.NeedsPerson) != 2 || !slices.Equal(lay.NeedsPerson[0].Tasks, tc.tools[:1]) || !slices.Equal(lay.NeedsPerson[1].Tasks, tc.tools[1:]) ||
				lay.NeedsPerson[0].Layer != 1 || lay.NeedsPerson[1].Layer != 3 {
				t.Fatalf("layers needing a person %+v", lay.NeedsPerson)
			}
			gw := &stubGateway{stubs: map[string]any{"db.query": users, "shop.listOrders": orders}}
			sum := runConverted(t, spec, gw)
			if len(gw.calls) != 2 || sum.Prompts != 0 || sum.PhysicalLayers != 3 || len(sum.Plan.SideEffects) != 2 {
				t.Fatalf("%d tool calls, %d prompts, %d physical layers, plan %+v", len(gw.calls), sum.Prompts, sum.PhysicalLayers, sum.Plan.SideEffects)
			}
			for _, s := range sum.Plan.SideEffects {
				if s.Operation != "mcp" || s.Decision != "ask" {
					t.Fatalf("plan step %+v", s)
				}
			}
		})
	}
}
