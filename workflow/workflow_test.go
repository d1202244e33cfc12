package workflow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/mediator"
)

// fakeAgents: "pure-agent" imports nothing with a side effect, "fetchy"
// imports fetch. Runs echo their input upper-cased.
type fakeAgents struct{ runs atomic.Int64 }

func (a *fakeAgents) Pure(_ context.Context, id string) (bool, string, error) {
	switch id {
	case "pure-agent":
		return true, "", nil
	case "fetchy":
		return false, "imports restricted_api.fetch (network.fetch)", nil
	}
	return false, "", mediator.Errorf(mediator.CodeUnknownAgent, "no agent %q", id)
}

func (a *fakeAgents) Run(_ context.Context, id, input string) (map[string]any, error) {
	a.runs.Add(1)
	return map[string]any{"status": "ok", "output": strings.ToUpper(input)}, nil
}

// fakeCalls decides fetches as the host would (canonical URL given) and
// counts what it performed: the canary.
type fakeCalls struct {
	mu   sync.Mutex
	done []string
}

func (c *fakeCalls) Prepare(_ context.Context, t CallTask) (mediator.Operation, error) {
	// The ACL: only api.example.com is listed (as the host's netproxy
	// would refuse any other, before the policy).
	if !strings.HasPrefix(t.URL, "https://api.example.com/") {
		return mediator.Operation{}, mediator.Errorf(mediator.CodeHostNotAllowed, "%s is not in allowedHosts", t.URL)
	}
	return mediator.Operation{AgentID: t.AgentID, Permission: mediator.PermNetworkFetch, Name: t.Operation,
		Method: t.Method, URL: t.URL, Host: "api.example.com", TextLength: len(t.Body)}, nil
}

func (c *fakeCalls) Do(ctx context.Context, t CallTask, auth mediator.Authorizer) (map[string]any, error) {
	op, _ := c.Prepare(ctx, t)
	done, err := auth.Authorize(ctx, op)
	if err != nil {
		return nil, err
	}
	done(nil)
	c.mu.Lock()
	c.done = append(c.done, t.Method+" "+t.URL)
	c.mu.Unlock()
	if strings.HasSuffix(t.URL, "/users") {
		return map[string]any{"status": 200, "body": usersJSON}, nil
	}
	return map[string]any{"status": 200}, nil
}

// usersJSON is what the fake server answers for /users.
const usersJSON = `[{"name": "ada", "age": 30, "active": true}, {"name": "bo", "age": 41, "active": true}, {"name": "cy", "age": 70, "active": false}]`

// layerPrompter records each layer prompt and answers with answer.
type layerPrompter struct {
	answer mediator.Answer
	asked  []mediator.LayerPrompt
	onAsk  func() // called as the prompt is shown
}

func (p *layerPrompter) PromptLayer(_ context.Context, lp mediator.LayerPrompt) (mediator.Answer, error) {
	if p.onAsk != nil {
		p.onAsk()
	}
	p.asked = append(p.asked, lp)
	return p.answer, nil
}

type fixture struct {
	st     *store.Store
	policy *mediator.Policy
	agents *fakeAgents
	calls  *fakeCalls
	events []TaskResult
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p := mediator.Profile{AgentID: "fetchy", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermNetworkFetch}},
		Capabilities: mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{"api.example.com"}}}
	for _, prof := range []mediator.Profile{p, {AgentID: "pure-agent"}} {
		if err := prof.Normalize(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.InstallAgent(context.Background(), prof, ""); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{st: st, policy: mediator.NewPolicy(st, mediator.PolicyOptions{}), agents: &fakeAgents{}, calls: &fakeCalls{}}
}

func (f *fixture) env(lp mediator.LayerPrompter) Env {
	return Env{Policy: f.policy, Prompter: lp, Agents: f.agents, Calls: f.calls, Settings: DefaultSettings(),
		Events: func(r TaskResult) { f.events = append(f.events, r) }}
}

func mustParse(t testing.TB, js string) Spec {
	t.Helper()
	s, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseRefusesBadGraphs(t *testing.T) {
	for _, tc := range []struct{ name, js, want string }{
		{"no tasks", `{"tasks":[]}`, "no tasks"},
		{"cycle", `{"tasks":[{"id":"a","dependsOn":["b"],"code":{"op":"code:expr","expr":"1"}},{"id":"b","dependsOn":["a"],"code":{"op":"code:expr","expr":"1"}}]}`, "cycle through task"},
		{"self", `{"tasks":[{"id":"a","dependsOn":["a"],"code":{"op":"code:expr","expr":"1"}}]}`, "depends on itself"},
		{"unknown dependency", `{"tasks":[{"id":"a","dependsOn":["ghost"],"code":{"op":"code:expr","expr":"1"}}]}`, `depends on "ghost"`},
		{"duplicate id", `{"tasks":[{"id":"a","code":{"op":"code:expr","expr":"1"}},{"id":"a","code":{"op":"code:expr","expr":"2"}}]}`, "used twice"},
		{"two kinds", `{"tasks":[{"id":"a","code":{"op":"code:expr","expr":"1"},"run":{"agentId":"x"}}]}`, "exactly one of"},
		{"no kind", `{"tasks":[{"id":"a"}]}`, "exactly one of"},
		{"bad id", `{"tasks":[{"id":"../a","code":{"op":"code:expr","expr":"1"}}]}`, "task id"},
		{"unknown member", `{"tasks":[{"id":"a","code":{"op":"code:expr","expr":"1"}}],"extra":1}`, "expected shape"},
		{"repeated member", `{"tasks":[{"id":"a","id":"b","code":{"op":"code:expr","expr":"1"}}]}`, "expected shape"},
		{"case-variant member", `{"Tasks":[{"id":"a","code":{"op":"code:expr","expr":"1"}}]}`, "expected shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.js))
			if mediator.CodeOf(err) != mediator.CodeInvalidWorkflow || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v; want invalid_workflow ~ %q", err, tc.want)
			}
		})
	}
}

// TestAllPureWorkflowAsksNothing: pure steps and a pure agent's run, over
// three layers, with no prompt at all; every task's decision is its own
// audit record tied to the workflow and layer.
func TestAllPureWorkflowAsksNothing(t *testing.T) {
	f := newFixture(t)
	lp := &layerPrompter{answer: mediator.AnswerDeny}
	s := mustParse(t, `{"id":"wf-pure","tasks":[
		{"id":"nums","code":{"op":"code:expr","expr":"[5, 3, 8, 1, 9, 2]"}},
		{"id":"words","run":{"agentId":"pure-agent","input":"a b c","pure":true}},
		{"id":"big","dependsOn":["nums"],"code":{"op":"code:filter","expr":"r.nums.filter(n, n > 2)"}},
		{"id":"sorted","dependsOn":["big"],"code":{"op":"code:sort","expr":"r.big.sort()"}},
		{"id":"total","dependsOn":["sorted","words"],"code":{"op":"code:reduce","expr":"string(sum(r.sorted)) + ' ' + r.words.output.split(' ').join('-')"}},
		{"id":"doc","dependsOn":["total"],"code":{"op":"code:json","expr":"json.stringify({'t': r.total, 'n': json.parse('[1,2]')})"}}
	]}`)
	sum, err := Run(context.Background(), s, f.env(lp))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != "ok" || sum.Prompts != 0 || len(lp.asked) != 0 || sum.Layers != 5 {
		t.Fatalf("%+v asked %d", sum, len(lp.asked))
	}
	got := map[string]any{}
	for _, r := range sum.Tasks {
		got[r.Task] = r.Value
	}
	if got["total"] != "25 A-B-C" || got["doc"] != `{"n":[1,2],"t":"25 A-B-C"}` {
		t.Fatalf("values %v", got)
	}
	page, err := f.st.ListAudit(context.Background(), 0, 100, false)
	if err != nil || len(page.Records) != 6 {
		t.Fatalf("%v %d records", err, len(page.Records))
	}
	for _, r := range page.Records {
		op := r.Operation
		if op.Workflow != "wf-pure" || op.Layer < 1 || op.Task == "" || !r.Allowed || r.DecidedBy != "class:pure" {
			t.Fatalf("record %+v", r)
		}
	}
	if rec := page.Records[2]; rec.Operation.Name != "code:filter" || rec.Operation.Layer != 2 {
		t.Fatalf("the filter's record reads %+v", rec.Operation)
	}
}

// TestMixedWorkflowAsksOncePerLayer: approved layer by layer, the
// side-effecting layer gets one prompt naming only its tasks that need a
// person (the POSTs, not the GET, not the pure step), with their exact
// targets.
func TestMixedWorkflowAsksOncePerLayer(t *testing.T) {
	f := newFixture(t)
	lp := &layerPrompter{answer: mediator.AnswerAllowOnce}
	s := mustParse(t, `{"id":"wf-mixed","tasks":[
		{"id":"prep","code":{"op":"code:map","expr":"['x','y'].map(s, s + '!')"}},
		{"id":"post1","dependsOn":["prep"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://api.example.com/a","body":"1"}},
		{"id":"post2","dependsOn":["prep"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://api.example.com/b","body":"2"}},
		{"id":"get","dependsOn":["prep"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"GET","url":"https://api.example.com/c"}},
		{"id":"count","dependsOn":["prep"],"code":{"op":"code:arithmetic","expr":"size(r.prep) * 2"}},
		{"id":"after","dependsOn":["post1","post2","get","count"],"code":{"op":"code:logic","expr":"r.post1.status == 200 && r.count == 4"}}
	]}`)
	env := f.env(lp)
	env.Settings.Approval = ApproveLayer
	sum, err := Run(context.Background(), s, env)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != "ok" || sum.Prompts != 1 || len(lp.asked) != 1 {
		t.Fatalf("%+v prompts %d", sum, len(lp.asked))
	}
	asked := lp.asked[0]
	var names []string
	for _, req := range asked.Tasks {
		names = append(names, req.Op.Task+" "+req.Op.Method+" "+req.Op.URL)
	}
	if asked.Layer != 2 || strings.Join(names, ",") != "post1 POST https://api.example.com/a,post2 POST https://api.example.com/b" {
		t.Fatalf("layer %d prompt lists %v", asked.Layer, names)
	}
	if len(f.calls.done) != 3 {
		t.Fatalf("performed %v", f.calls.done)
	}
	for _, r := range sum.Tasks {
		if r.Task == "after" && r.Value != true {
			t.Fatalf("after = %v", r.Value)
		}
	}
}

// TestDeniedLayerStopsOnlyItsDependants: approved layer by layer, the
// person denies the layer;
// its tasks are user_denied and recorded so, their dependants do not run
// (dependency_failed), and nothing was sent.
func TestDeniedLayerStopsOnlyItsDependants(t *testing.T) {
	f := newFixture(t)
	lp := &layerPrompter{answer: mediator.AnswerDeny}
	s := mustParse(t, `{"id":"wf-deny","tasks":[
		{"id":"post","call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://api.example.com/a","body":"1"}},
		{"id":"uses","dependsOn":["post"],"code":{"op":"code:access","expr":"r.post.status"}},
		{"id":"other","code":{"op":"code:expr","expr":"1 + 1"}}
	]}`)
	env := f.env(lp)
	env.Settings.Approval = ApproveLayer
	sum, err := Run(context.Background(), s, env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"post": "user_denied", "uses": "dependency_failed", "other": "ok"}
	for _, r := range sum.Tasks {
		if r.Status != want[r.Task] {
			t.Errorf("%s: %s (%s)", r.Task, r.Status, r.Error)
		}
	}
	if len(f.calls.done) != 0 {
		t.Fatalf("a denied task was performed: %v", f.calls.done)
	}
	page, _ := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "fetchy"})
	if len(page.Denials) != 1 || page.Denials[0].Code != mediator.CodeUserDenied {
		t.Fatalf("denial log %+v", page.Denials)
	}
}

// TestCorruptedWorkflowIsRefusedBeforeAnythingRuns: a task marked pure
// whose module imports fetch refuses the whole workflow (not_pure) in
// strictMode: no run, no call, no record. Out of strictMode it is decided
// as a side-effecting run instead.
func TestCorruptedWorkflowIsRefusedBeforeAnythingRuns(t *testing.T) {
	f := newFixture(t)
	js := `{"id":"wf-bad","tasks":[
		{"id":"first","run":{"agentId":"pure-agent","input":"x","pure":true}},
		{"id":"liar","dependsOn":["first"],"run":{"agentId":"fetchy","input":"x","pure":true}}
	]}`
	_, err := Run(context.Background(), mustParse(t, js), f.env(nil))
	if mediator.CodeOf(err) != mediator.CodeNotPure || !strings.Contains(err.Error(), "imports restricted_api.fetch") {
		t.Fatalf("%v", err)
	}
	if f.agents.runs.Load() != 0 {
		t.Fatal("a task ran before the workflow was refused")
	}
	if page, _ := f.st.ListAudit(context.Background(), 0, 10, false); len(page.Records) != 0 {
		t.Fatalf("records written for a refused workflow: %+v", page.Records)
	}
	env := f.env(nil)
	env.Settings.StrictMode = false
	sum, err := Run(context.Background(), mustParse(t, js), env)
	if err != nil || sum.Status != "ok" || f.agents.runs.Load() != 2 {
		t.Fatalf("%v %+v", err, sum)
	}
}

func TestPureCodeValidation(t *testing.T) {
	for _, tc := range []struct {
		name, op, expr string
		want           mediator.Code
	}{
		{"syntax", "code:expr", "1 +", mediator.CodeInvalidWorkflow},
		{"unknown function", "code:expr", "system('ls')", mediator.CodeInvalidWorkflow},
		{"not a pure operation", "network.fetch", "1", mediator.CodeInvalidWorkflow},
		{"made-up operation", "code:exec", "1", mediator.CodeInvalidWorkflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			s := Spec{ID: "wf", Tasks: []Task{{ID: "a", Code: &CodeStep{Op: tc.op, Expr: tc.expr}}}}
			if _, err := Run(context.Background(), s, f.env(nil)); mediator.CodeOf(err) != tc.want {
				t.Fatalf("%v; want %s", err, tc.want)
			}
			// Without validatePureCode the step fails when it runs, alone.
			env := f.env(nil)
			env.Settings.ValidatePureCode = false
			sum, err := Run(context.Background(), s, env)
			if err != nil || sum.Tasks[0].Status == "ok" {
				t.Fatalf("%v %+v", err, sum)
			}
		})
	}
}

// TestExpressionBounds: a step that would run away hits the cost limit
// and fails alone, as a trap.
func TestExpressionBounds(t *testing.T) {
	f := newFixture(t)
	s := mustParse(t, `{"id":"wf","tasks":[
		{"id":"boom","code":{"op":"code:map","expr":"lists.range(3000).map(i, lists.range(3000).map(j, i * j)).size()"}},
		{"id":"fine","code":{"op":"code:expr","expr":"'ok'"}}
	]}`)
	sum, err := Run(context.Background(), s, f.env(nil))
	if err != nil {
		t.Fatal(err)
	}
	// Whichever bound comes first (the cost limit, or the time limit on a
	// slow machine) ends it; both are traps of that step alone.
	bounded := strings.Contains(sum.Tasks[0].Error, "cost") || strings.Contains(sum.Tasks[0].Error, "deadline exceeded")
	if sum.Tasks[0].Code != mediator.CodeTrap || !bounded || sum.Tasks[1].Status != "ok" {
		t.Fatalf("%+v", sum.Tasks)
	}
}

// BenchmarkPureWorkflow1000 is a 1,000-task all-pure workflow (CEL steps
// in chains of ten) end to end: parse, check, decide and record every
// task (one group commit per fused run of layers), evaluate every step.
// "warm" runs the same workflow again, its steps compiled once; "cold"
// gives every step a new text each time, so every step is compiled.
func BenchmarkPureWorkflow1000(b *testing.B) {
	spec := func(salt int) []byte {
		var sb strings.Builder
		sb.WriteString(`{"id":"wf-bench","tasks":[`)
		for i := range 1000 {
			if i > 0 {
				sb.WriteByte(',')
			}
			if i%10 == 0 {
				fmt.Fprintf(&sb, `{"id":"t%d","code":{"op":"code:expr","expr":"[1,2,3,4,%d]"}}`, i, salt)
				continue
			}
			fmt.Fprintf(&sb, `{"id":"t%d","dependsOn":["t%d"],"code":{"op":"code:map","expr":"r.t%d.map(x, x + %d)"}}`, i, i-1, i-1, salt)
		}
		sb.WriteString(`]}`)
		return []byte(sb.String())
	}
	f := newFixture(b)
	run := func(b *testing.B, js []byte) {
		s, err := Parse(js)
		if err != nil {
			b.Fatal(err)
		}
		sum, err := Run(context.Background(), s, f.env(nil))
		if err != nil || sum.Status != "ok" {
			b.Fatalf("%v %s", err, sum.Status)
		}
	}
	b.Run("warm", func(b *testing.B) {
		js := spec(1)
		run(b, js)
		for b.Loop() {
			run(b, js)
		}
	})
	b.Run("cold", func(b *testing.B) {
		salt := 1000
		for b.Loop() {
			salt++
			run(b, spec(salt))
		}
	})
}

// BenchmarkAuthorizeLayer10 is a layer's overhead without its prompt:
// deciding ten tasks (five safe fetches, five pure steps) and appending
// their ten audit records, durably, in one transaction.
func BenchmarkAuthorizeLayer10(b *testing.B) {
	f := newFixture(b)
	tasks := make([]mediator.LayerTask, 10)
	for i := range tasks {
		if i%2 == 0 {
			tasks[i] = mediator.LayerTask{Task: fmt.Sprint("g", i), Op: mediator.Operation{AgentID: "fetchy", Permission: mediator.PermNetworkFetch,
				Name: mediator.OpNetworkFetch, Method: "GET", URL: "https://api.example.com/x", Host: "api.example.com"}}
		} else {
			tasks[i] = mediator.LayerTask{Task: fmt.Sprint("p", i), Op: mediator.Operation{Name: "code:map"}, Pure: true}
		}
	}
	ctx := context.Background()
	for b.Loop() {
		ds, err := f.policy.AuthorizeLayer(ctx, "wf-bench", 1, tasks, nil)
		if err != nil || !ds[0].Decision.Allowed {
			b.Fatalf("%v %+v", err, ds)
		}
	}
}
