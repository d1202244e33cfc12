package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// shapeWorkflow is all pure, so it runs the same everywhere without a
// person or a network; its middle layers fuse.
const shapeWorkflow = `{"id": "shape", "tasks": [
  {"id": "nums", "code": {"op": "code:JSON.parse", "expr": "json.parse('[3, 1, 2]')"}},
  {"id": "sorted", "dependsOn": ["nums"], "code": {"op": "code:sort", "expr": "r.nums.sort()"}},
  {"id": "top", "dependsOn": ["sorted"], "code": {"op": "code:array_access", "expr": "r.sorted[2]"}}
]}`

// TestWorkflowResultHasOneShape: `nmhost workflow run --json`, the
// run-workflow native message and the viewer's /ws run-workflow report a
// workflow's summary in the same shape: the same members, down to the
// plan, the fused layers and each task's result.
func TestWorkflowResultHasOneShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, dir string) map[string]any
	}{
		{"nmhost workflow run --json", func(t *testing.T, dir string) map[string]any {
			file := filepath.Join(t.TempDir(), "shape.json")
			if err := os.WriteFile(file, []byte(shapeWorkflow), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(nmhostBin, "workflow", "run", "--json", file)
			cmd.Env = hostEnv(dir)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var m struct {
					Event string
					Data  map[string]any
				}
				if json.Unmarshal([]byte(line), &m) == nil && m.Event == "summary" {
					return m.Data
				}
			}
			t.Fatalf("no summary in %s", out)
			return nil
		}},
		{"run-workflow", func(t *testing.T, dir string) map[string]any {
			p := start(t, dir)
			r := call(t, p.Client, "run-workflow", map[string]any{"workflow": json.RawMessage(shapeWorkflow)})
			var data map[string]any
			if !r.Success || json.Unmarshal(r.Data, &data) != nil {
				t.Fatalf("%+v", r)
			}
			delete(data, "sessionId") // the reply's, beside the summary
			return data
		}},
		{"/ws run-workflow", func(t *testing.T, dir string) map[string]any {
			c := dialServeWS(t, dir)
			if err := c.WriteJSON(map[string]any{"type": "run-workflow", "runId": "shape", "workflow": json.RawMessage(shapeWorkflow)}); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			for {
				var msg struct {
					Type    string
					Summary map[string]any
					Error   string
				}
				if err := c.ReadJSON(&msg); err != nil {
					t.Fatal(err)
				}
				switch msg.Type {
				case "workflow-result":
					return msg.Summary
				case "error":
					t.Fatal(msg.Error)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := tc.run(t, newDataDir(t))
			if got, want := shapeOf(sum), wantShape(); !slices.Equal(got, want) {
				t.Fatalf("shape\n got %v\nwant %v", got, want)
			}
			if sum["status"] != "ok" || sum["physicalLayers"] != 1.0 || sum["layers"] != 3.0 {
				t.Fatalf("summary %v", sum)
			}
		})
	}
}

// wantShape is the summary's members, as shapeOf lists them.
func wantShape() []string {
	return []string{"fused", "fused[].fusedFrom", "fused[].layer", "fused[].logicalLayers", "fused[].logicalTools",
		"layers", "physicalLayers", "plan", "plan.approval", "plan.hash", "plan.sideEffects", "prompts", "status",
		"tasks", "tasks[].auditSeq", "tasks[].layer", "tasks[].safeToFail", "tasks[].status", "tasks[].task", "tasks[].value", "workflow"}
}

// shapeOf lists the members of v, of its objects and of its lists' first
// objects, by path, sorted.
func shapeOf(v map[string]any) []string {
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, x := range m {
			out = append(out, prefix+k)
			switch y := x.(type) {
			case map[string]any:
				walk(prefix+k+".", y)
			case []any:
				if len(y) > 0 {
					if o, ok := y[0].(map[string]any); ok {
						walk(prefix+k+"[].", o)
					}
				}
			}
		}
	}
	walk("", v)
	slices.Sort(out)
	return out
}
