package host

import (
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestRunWorkflowTakesAScript: run-workflow takes an agent's script where
// it takes a graph: converted before anything runs, its pure steps run;
// a script the converter refuses is refused, on the record, and a request
// with both a graph and a script is refused.
func TestRunWorkflowTakesAScript(t *testing.T) {
	h := newHarness(t, true)
	var sum struct {
		Status string `json:"status"`
	}
	h.mustOK("run-workflow", map[string]any{"script": "const xs: number[] = [1, 2, 3];\nconst total = xs.reduce((s, x) => s + x, 0);\n", "scriptName": "sum.ts"}, &sum)
	if sum.Status != "ok" {
		t.Fatalf("summary %+v", sum)
	}
	h.wantCode(h.call("run-workflow", map[string]any{"script": "const x = eval('1');\n"}), mediator.CodeUnsafeOperation)
	h.wantCode(h.call("run-workflow", map[string]any{"script": "const x = 1;\n", "workflow": map[string]any{"tasks": []any{}}}), mediator.CodeBadRequest)
	page, err := h.st.ListDenials(t.Context(), store.DenialFilter{Code: mediator.CodeUnsafeOperation})
	if err != nil || len(page.Denials) == 0 {
		t.Fatalf("the refused script is not in the denial log: %+v %v", page, err)
	}
}
