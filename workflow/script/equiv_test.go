package script

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow"
)

// stubGateway answers tool calls from stubs and records each one, as
// the Node.js harness does; each call is one approval of the gateway's.
type stubGateway struct {
	stubs map[string]any
	mu    sync.Mutex
	calls []toolCallRecord
}

type toolCallRecord struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Args   any    `json:"args"`
}

func (g *stubGateway) CallTool(_ context.Context, _, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	var a any
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.calls = append(g.calls, toolCallRecord{server, tool, a})
	g.mu.Unlock()
	if v, ok := g.stubs[server+"."+tool]; ok {
		return json.Marshal(v)
	}
	return json.RawMessage(`{"ok": true}`), nil
}

var users = []any{
	map[string]any{"name": "ada", "age": 30, "active": true, "dept": "eng"},
	map[string]any{"name": "bo", "age": 41, "active": true, "dept": "ops"},
	map[string]any{"name": "cy", "age": 70, "active": false, "dept": "eng"},
}

var orders = []any{map[string]any{"id": 1, "total": 250}, map[string]any{"id": 2, "total": 40}, map[string]any{"id": 3, "total": 125.5}}

// equivScripts are the converted examples run both ways.
var equivScripts = []struct {
	name, file, src string
	stubs           map[string]any
}{
	{name: "average age", file: "testdata/average-age.ts", stubs: map[string]any{"db.query": users}},
	{name: "filter, reduce, length, divide", file: "testdata/filter-divide.js", stubs: map[string]any{"shop.listOrders": orders}},
	{name: "let, if, a pure loop and a result", stubs: map[string]any{"db.query": users},
		src: "const us = await mcp.db.query({});\nlet label = \"few\";\nif (us.length > 2) { label = \"many\"; }\nlet total = 0;\nfor (const u of us) { total += u.age; }\nawait mcp.s.put({ label, total });\nreturn { label, total };"},
	{name: "a loop of tool calls over a literal array", stubs: map[string]any{},
		src: "const sent = [];\nfor (const ch of [\"#a\", \"#b\", \"#c\"]) {\n  const r = await mcp.slack.send({ channel: ch, text: `hello ${ch}` });\n}\nreturn \"done\";"},
	{name: "a function, grouping and strings", stubs: map[string]any{"db.query": users},
		src: "function mean(xs) { return xs.reduce((a, b) => a + b, 0) / xs.length; }\nconst us = await mcp.db.query({ sql: \"x\" });\nconst byDept = us.reduce((acc, u) => { acc[u.dept] = [...(acc[u.dept] || []), u.age]; return acc; }, {});\nconst means = Object.fromEntries(Object.entries(byDept).map(([d, ages]) => [d, mean(ages)]));\nconst line = Object.keys(means).sort().map((d) => `${d}: ${means[d].toFixed(1)}`).join(\", \").toUpperCase();\nawait mcp.report.post({ line, json: JSON.stringify(means) });\nreturn line;"},
}

// TestEquivalence runs each converted example twice against the same
// stub tools: the script as written in Node.js (TypeScript with its types
// stripped), and its workflow in the host. Both make the same tool calls
// with the same arguments in the same order and end with the same result.
func TestEquivalence(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is missing: ./scripts/apt-install.sh node nodejs installs it (scripts/check-js.sh does)")
	}
	harness, _ := filepath.Abs("testdata/node-harness.mjs")
	for _, tc := range equivScripts {
		t.Run(tc.name, func(t *testing.T) {
			name, src := "script.js", []byte(tc.src)
			if tc.file != "" {
				var err error
				if src, err = os.ReadFile(tc.file); err != nil {
					t.Fatal(err)
				}
				name = filepath.Base(tc.file)
			}
			js := string(src)
			if isTS(name) {
				r := api.Transform(js, api.TransformOptions{Loader: api.LoaderTS, Target: api.ESNext})
				if len(r.Errors) > 0 {
					t.Fatal(r.Errors)
				}
				js = string(r.Code)
			}
			dir := t.TempDir()
			scriptFile, stubsFile := filepath.Join(dir, "script.js"), filepath.Join(dir, "stubs.json")
			stubs, _ := json.Marshal(tc.stubs)
			if err := os.WriteFile(scriptFile, []byte(js), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(stubsFile, stubs, 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(node, harness, scriptFile, stubsFile)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("node: %v\n%s", err, stderr.String())
			}
			var fromNode struct {
				Calls  []toolCallRecord `json:"calls"`
				Result any              `json:"result"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &fromNode); err != nil {
				t.Fatalf("node said %q: %v", stdout.String(), err)
			}

			spec, err := Convert(name, src, Options{ID: "equiv", AgentID: "agent"})
			if err != nil {
				t.Fatal(err)
			}
			gw := &stubGateway{stubs: tc.stubs}
			sum := runConverted(t, spec, gw)
			var result any
			for _, r := range sum.Tasks {
				if r.Status != "ok" {
					t.Fatalf("task %s: %s %s", r.Task, r.Status, r.Error)
				}
				if r.Task == "return" {
					result = r.Value
				}
			}
			if a, b := canon(t, fromNode.Calls), canon(t, gw.calls); a != b {
				t.Fatalf("tool calls differ\nnode: %s\nhost: %s", a, b)
			}
			if a, b := canon(t, fromNode.Result), canon(t, result); a != b {
				t.Fatalf("results differ\nnode: %s\nhost: %s", a, b)
			}
			if len(gw.calls) == 0 {
				t.Fatal("no tool call was made")
			}
		})
	}
}

// runConverted runs a converted workflow with a real policy on a real
// store, the stub gateway making its tool calls.
func runConverted(t testing.TB, spec workflow.Spec, gw workflow.ToolCaller) workflow.Summary {
	t.Helper()
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	env := workflow.Env{Policy: mediator.NewPolicy(st, mediator.PolicyOptions{}), Tools: gw, Settings: workflow.DefaultSettings()}
	sum, err := workflow.Run(context.Background(), spec, env)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != "ok" {
		t.Fatalf("the workflow ended %s: %+v", sum.Status, sum.Tasks)
	}
	return sum
}

// canon is v as canonical JSON (numbers as JSON numbers, keys sorted).
func canon(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(x)
	return strings.TrimSpace(string(b))
}
