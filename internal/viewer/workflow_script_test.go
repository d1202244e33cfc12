package viewer

import (
	"context"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

// TestRunWorkflowTakesAScript: /ws's run-workflow takes an agent's script
// where it takes a graph: its pure steps run; a script the converter
// refuses is refused with its code before anything runs.
func TestRunWorkflowTakesAScript(t *testing.T) {
	rt, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	v := newTestViewer(t, func(c *Config) {
		c.Runtime, c.Authorizer = rt, mediator.NewPolicy(c.App.Store(), mediator.PolicyOptions{})
	})
	c := v.browserWS()
	readWS(t, c, "hello", 5*time.Second)
	run := func(id, src string) (summary string, code string) {
		t.Helper()
		if err := c.WriteJSON(map[string]any{"type": "run-workflow", "runId": id, "script": src, "scriptName": "s.ts"}); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Minute))
		for {
			var m struct {
				Type    string
				RunID   string `json:"runId"`
				Summary *struct{ Status string }
				Code    string
			}
			if err := c.ReadJSON(&m); err != nil {
				t.Fatal(err)
			}
			if m.RunID != id {
				continue
			}
			switch m.Type {
			case "workflow-result":
				return m.Summary.Status, ""
			case "error":
				return "", m.Code
			}
		}
	}
	if status, code := run("w1", "const xs: number[] = [1, 2];\nconst n = xs.length;\n"); status != "ok" {
		t.Fatalf("a pure script: %q %q", status, code)
	}
	if _, code := run("w2", "const f = Function('return 1');\n"); code != string(mediator.CodeUnsafeOperation) && code != string(mediator.CodeNotPure) {
		t.Fatalf("a refused script: code %q", code)
	}
}
