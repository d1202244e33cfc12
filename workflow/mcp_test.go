package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// stubTools is an MCP gateway that records each call; it answers
// db.query with usersJSON and anything else with {"ok": true}.
type stubTools struct {
	mu    sync.Mutex
	calls []string
	fail  string // a tool that fails
}

func (s *stubTools) CallTool(_ context.Context, agentID, server, tool string, args json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	s.calls = append(s.calls, agentID+" "+server+"."+tool+" "+string(args))
	s.mu.Unlock()
	switch server + "." + tool {
	case s.fail:
		return nil, errors.New("the tool failed")
	case "db.query":
		return json.RawMessage(usersJSON), nil
	}
	return json.RawMessage(`{"ok": true}`), nil
}

func TestParseRefusesBadMCPAndJSTasks(t *testing.T) {
	for _, tc := range []struct{ name, js, want string }{
		{"both args and argsExpr", `{"tasks":[{"id":"a","mcp":{"agentId":"s","server":"db","tool":"q","args":{},"argsExpr":"({})"}}]}`, "both args and argsExpr"},
		{"args not an object", `{"tasks":[{"id":"a","mcp":{"agentId":"s","server":"db","tool":"q","args":[1]}}]}`, "JSON object"},
		{"a server name with a dot", `{"tasks":[{"id":"a","mcp":{"agentId":"s","server":"db.x","tool":"q"}}]}`, "server and tool"},
		{"no tool", `{"tasks":[{"id":"a","mcp":{"agentId":"s","server":"db","tool":""}}]}`, "server and tool"},
		{"no agent", `{"tasks":[{"id":"a","mcp":{"agentId":"","server":"db","tool":"q"}}]}`, "agentId"},
		{"vars without argsExpr", `{"tasks":[{"id":"a","mcp":{"agentId":"s","server":"db","tool":"q","vars":{"x":"a"}}}]}`, "vars bind"},
		{"a var that is no dependency", `{"tasks":[{"id":"b","code":{"op":"code:expr","js":"return 1"}},{"id":"a","code":{"op":"code:expr","js":"return x","vars":{"x":"b"}}}]}`, "not one of its dependencies"},
		{"a var that is no name", `{"tasks":[{"id":"b","code":{"op":"code:expr","js":"return 1"}},{"id":"a","dependsOn":["b"],"code":{"op":"code:expr","js":"return 1","vars":{"__proto__":"b"}}}]}`, "not a JavaScript name"},
		{"expr and js", `{"tasks":[{"id":"a","code":{"op":"code:expr","expr":"1","js":"return 1"}}]}`, "exactly one of expr"},
		{"neither expr nor js", `{"tasks":[{"id":"a","code":{"op":"code:expr"}}]}`, "exactly one of expr"},
		{"a tool call safe to fail", `{"tasks":[{"id":"a","safeToFail":true,"mcp":{"agentId":"s","server":"db","tool":"q"}}]}`, "cannot be safeToFail"},
		{"mcp and code", `{"tasks":[{"id":"a","mcp":{"agentId":"s","server":"db","tool":"q"},"code":{"op":"code:expr","js":"return 1"}}]}`, "exactly one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.js))
			if mediator.CodeOf(err) != mediator.CodeInvalidWorkflow || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v; want invalid_workflow ~ %q", err, tc.want)
			}
		})
	}
}

// TestMCPWithoutGatewayIsRefused: a host with no MCP gateway refuses a
// workflow with a tool call before anything runs: its fetch is not made.
func TestMCPWithoutGatewayIsRefused(t *testing.T) {
	f := newFixture(t)
	s := mustParse(t, `{"tasks":[
		{"id":"get","call":{"agentId":"fetchy","operation":"network.fetch","method":"GET","url":"https://api.example.com/users"}},
		{"id":"send","dependsOn":["get"],"mcp":{"agentId":"fetchy","server":"slack","tool":"send","args":{"message":"hi"}}}]}`)
	_, err := Run(context.Background(), s, f.env(&layerPrompter{answer: mediator.AnswerAllowOnce}))
	if mediator.CodeOf(err) != mediator.CodeUnknownOperation || len(f.calls.done) != 0 {
		t.Fatalf("%v; performed %v", err, f.calls.done)
	}
}

// TestJSWorkflowRuns: tool calls through the gateway, in order, with
// arguments computed by the script's own expression; the pure steps in
// JavaScript, fused into one physical layer; the plan lists each tool
// call as needing a person, with its arguments.
func TestJSWorkflowRuns(t *testing.T) {
	f := newFixture(t)
	tools := &stubTools{}
	env := f.env(&layerPrompter{answer: mediator.AnswerAllowOnce})
	env.Tools = tools
	s := mustParse(t, `{"id":"avg","tasks":[
		{"id":"users","mcp":{"agentId":"script","server":"db","tool":"query","args":{"sql":"SELECT * FROM users"}}},
		{"id":"active","dependsOn":["users"],"code":{"op":"code:filter","js":"return (users.filter((u) => u.active));","vars":{"users":"users"}}},
		{"id":"avgAge","dependsOn":["active"],"code":{"op":"code:divide","js":"return (active.reduce((s, u) => s + u.age, 0) / active.length);","vars":{"active":"active"}}},
		{"id":"send","dependsOn":["avgAge","users"],"mcp":{"agentId":"script","server":"slack","tool":"send","argsExpr":"{ message: `+"`Average age: ${Math.round(a)}`"+` }","vars":{"a":"avgAge"}}}]}`)
	sum, err := Run(context.Background(), s, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`script db.query {"sql":"SELECT * FROM users"}`, `script slack.send {"message":"Average age: 36"}`}
	if sum.Status != "ok" || strings.Join(tools.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("status %s, calls %q", sum.Status, tools.calls)
	}
	if sum.Layers != 4 || sum.PhysicalLayers != 3 || len(sum.Fused) != 1 || strings.Join(sum.Fused[0].LogicalTools, ",") != "code:filter,code:divide" {
		t.Fatalf("layers %d physical %d fused %+v", sum.Layers, sum.PhysicalLayers, sum.Fused)
	}
	se := sum.Plan.SideEffects
	if len(se) != 2 || se[0].Operation != "mcp" || se[0].Tool != "db.query" || se[0].Decision != "ask" || string(se[0].Args) != `{"sql":"SELECT * FROM users"}` ||
		se[1].Tool != "slack.send" || se[1].ArgsExpr == "" || se[1].Layer != 4 {
		t.Fatalf("plan %+v", se)
	}
}

// TestJSStepFailures: a pure step that throws is safe to fail (its
// dependants skip, the workflow is ok); a tool call that fails fails the
// workflow and its dependants skip.
func TestJSStepFailures(t *testing.T) {
	f := newFixture(t)
	tools := &stubTools{fail: "slack.send"}
	env := f.env(nil)
	env.Tools = tools
	s := mustParse(t, `{"tasks":[
		{"id":"boom","code":{"op":"code:expr","js":"throw new Error('no')"}},
		{"id":"after","dependsOn":["boom"],"code":{"op":"code:expr","js":"return 1"}}]}`)
	sum, err := Run(context.Background(), s, env)
	if err != nil || sum.Status != "ok" || sum.Tasks[0].Status != "trap" || !sum.Tasks[0].SafeToFail || sum.Tasks[1].Status != "dependency_failed" {
		t.Fatalf("%v %+v", err, sum)
	}
	s = mustParse(t, `{"tasks":[
		{"id":"send","mcp":{"agentId":"script","server":"slack","tool":"send"}},
		{"id":"after","dependsOn":["send"],"mcp":{"agentId":"script","server":"db","tool":"query"}}]}`)
	sum, err = Run(context.Background(), s, env)
	if err != nil || sum.Status != "failed" || sum.Tasks[1].Status != "dependency_failed" || len(tools.calls) != 1 || tools.calls[0] != "script slack.send {}" {
		t.Fatalf("%v %+v %q", err, sum, tools.calls)
	}
}
