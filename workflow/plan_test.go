package workflow

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// threeLayers is a plan whose first layer GETs, whose second computes, and
// whose third is the task each case makes refusable.
func threeLayers(last string) string {
	return `{"id":"wf-plan","tasks":[
		{"id":"get","call":{"agentId":"fetchy","operation":"network.fetch","method":"GET","url":"https://api.example.com/in"}},
		{"id":"runner","run":{"agentId":"fetchy","input":"x"}},
		{"id":"count","dependsOn":["get"],"code":{"op":"code:access","expr":"r.get.status"}},
		` + last + `]}`
}

// TestRefusedPlanRunsNothing: a task of the last layer that the policy
// (or the host's checks before it) would refuse refuses the workflow
// before its first layer runs: no request, no run, the task and the code
// named, and the refusal in the denial log once, with its audit record.
func TestRefusedPlanRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, last string
		pref       *mediator.Preference
		want       mediator.Code
		agent      string
	}{
		{"host outside the ACL",
			`{"id":"post","dependsOn":["count"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://evil.example/x","body":"1"}}`,
			nil, mediator.CodeHostNotAllowed, "fetchy"},
		{"permission never granted",
			`{"id":"post","dependsOn":["count"],"call":{"agentId":"pure-agent","operation":"network.fetch","method":"POST","url":"https://api.example.com/x","body":"1"}}`,
			nil, mediator.CodePermissionNotGranted, "pure-agent"},
		{"remembered always-block",
			`{"id":"post","dependsOn":["count"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://api.example.com/x","body":"1"}}`,
			&mediator.Preference{AgentID: "fetchy", Operation: mediator.OpNetworkFetch, Target: "POST https://api.example.com:443", Answer: mediator.AnswerAlwaysBlock},
			mediator.CodeBlockedByUser, "fetchy"},
		{"unknown agent",
			`{"id":"post","dependsOn":["count"],"run":{"agentId":"ghost"}}`,
			nil, mediator.CodeUnknownAgent, "ghost"},
	} {
		for _, approval := range []string{ApprovePlan, ApproveLayer} {
			t.Run(tc.name+"/"+approval, func(t *testing.T) {
				f := newFixture(t)
				if tc.pref != nil {
					if _, err := f.st.SetPreference(context.Background(), *tc.pref); err != nil {
						t.Fatal(err)
					}
				}
				lp := &layerPrompter{answer: mediator.AnswerAllowOnce}
				env := f.env(lp)
				env.Settings.Approval = approval
				_, err := Run(context.Background(), mustParse(t, threeLayers(tc.last)), env)
				if mediator.CodeOf(err) != tc.want || !strings.Contains(err.Error(), `task "post" (layer 3)`) || !mediator.IsRecorded(err) {
					t.Fatalf("%v; want %s naming task post, marked recorded", err, tc.want)
				}
				if len(f.calls.done) != 0 || f.agents.runs.Load() != 0 || len(f.events) != 0 || len(lp.asked) != 0 {
					t.Fatalf("ran before the plan was refused: calls %v, runs %d, events %d, prompts %d", f.calls.done, f.agents.runs.Load(), len(f.events), len(lp.asked))
				}
				page, _ := f.st.ListDenials(context.Background(), store.DenialFilter{})
				if len(page.Denials) != 1 || page.Denials[0].Code != tc.want || page.Denials[0].AuditSeq == 0 || page.Denials[0].AgentID != tc.agent {
					t.Fatalf("denial log %+v", page.Denials)
				}
			})
		}
	}
}

// TestPlanAskedOnce: the plan's prompt lists every side effect that needs
// a person, across layers, before anything runs; allowed once, the
// layers run without another question, each decision recorded as the
// plan's approval.
func TestPlanAskedOnce(t *testing.T) {
	f := newFixture(t)
	var before []string // what had run when the prompt was shown
	lp := &layerPrompter{answer: mediator.AnswerAllowOnce, onAsk: func() { before = slices.Clone(f.calls.done) }}
	s := mustParse(t, `{"id":"wf-once","tasks":[
		{"id":"get","call":{"agentId":"fetchy","operation":"network.fetch","method":"GET","url":"https://api.example.com/in"}},
		{"id":"post1","dependsOn":["get"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://api.example.com/a","body":"1"}},
		{"id":"mid","dependsOn":["post1"],"code":{"op":"code:Object.keys","expr":"r.post1.map(k, k)"}},
		{"id":"post2","dependsOn":["mid"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"PUT","url":"https://api.example.com/b","body":"2"}}
	]}`)
	sum, err := Run(context.Background(), s, f.env(lp))
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 0 {
		t.Fatalf("requests made before the plan was approved: %v", before)
	}
	if sum.Status != "ok" || sum.Prompts != 1 || len(lp.asked) != 1 || len(f.calls.done) != 3 {
		t.Fatalf("%+v; asked %d; performed %v", sum, len(lp.asked), f.calls.done)
	}
	var listed []string
	for _, r := range lp.asked[0].Tasks {
		listed = append(listed, r.Op.Task+"@"+string(rune('0'+r.Op.Layer))+" "+r.Op.Method)
	}
	if strings.Join(listed, ",") != "post1@2 POST,post2@4 PUT" {
		t.Fatalf("the plan's prompt lists %v", listed)
	}
	if sum.Plan.Approval != ApprovePlan || sum.Plan.ApprovedBy != "prompt:plan" || len(sum.Plan.SideEffects) != 3 || len(sum.Plan.Hash) != 64 {
		t.Fatalf("plan %+v", sum.Plan)
	}
	page, _ := f.st.ListAudit(context.Background(), 0, 100, false)
	by := map[string]string{}
	for _, r := range page.Records {
		if r.Kind == mediator.AuditDecision {
			by[r.Operation.Task] = r.DecidedBy
		}
	}
	if by["post1"] != "prompt:plan" || by["post2"] != "prompt:plan" || by["get"] != "class:"+string(mediator.AlwaysSafe) {
		t.Fatalf("decisions recorded by %v", by)
	}
}

// TestPlanAlwaysIsKeyedByItsHash: "always allow" for a plan is not asked
// again for the same plan, and is void once any side-effecting task
// changes (here, a body).
func TestPlanAlwaysIsKeyedByItsHash(t *testing.T) {
	f := newFixture(t)
	plan := func(body string) Spec {
		return mustParse(t, `{"id":"wf-always","tasks":[
			{"id":"post","call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://api.example.com/a","body":"`+body+`"}},
			{"id":"after","dependsOn":["post"],"code":{"op":"code:get_property","expr":"r.post.status"}}]}`)
	}
	for _, tc := range []struct {
		name, body string
		answer     mediator.Answer
		asked      int
		approvedBy string
	}{
		{"first run asks", "1", mediator.AnswerAlwaysAllow, 1, "pref:always:"},
		{"same plan remembered", "1", mediator.AnswerDeny, 0, "pref:always:"},
		{"changed task asks again", "22", mediator.AnswerAllowOnce, 1, "prompt:plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lp := &layerPrompter{answer: tc.answer}
			sum, err := Run(context.Background(), plan(tc.body), f.env(lp))
			if err != nil || sum.Status != "ok" || len(lp.asked) != tc.asked || !strings.HasPrefix(sum.Plan.ApprovedBy, tc.approvedBy) {
				t.Fatalf("%v %+v asked %d", err, sum.Plan, len(lp.asked))
			}
		})
	}
}

// TestDeniedPlanRunsNothing: denying the plan refuses the workflow
// before anything runs, each asked task's refusal recorded once.
func TestDeniedPlanRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		lp   mediator.LayerPrompter
		want mediator.Code
	}{
		{"denied", &layerPrompter{answer: mediator.AnswerDeny}, mediator.CodeUserDenied},
		{"nobody to ask", nil, mediator.CodeConfirmRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := Run(context.Background(), mustParse(t, threeLayers(
				`{"id":"post","dependsOn":["count"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","url":"https://api.example.com/x","body":"1"}}`)), f.env(tc.lp))
			if mediator.CodeOf(err) != tc.want || !mediator.IsRecorded(err) {
				t.Fatalf("%v", err)
			}
			if len(f.calls.done) != 0 || f.agents.runs.Load() != 0 {
				t.Fatalf("ran: %v %d", f.calls.done, f.agents.runs.Load())
			}
			page, _ := f.st.ListDenials(context.Background(), store.DenialFilter{})
			if len(page.Denials) != 1 || page.Denials[0].Code != tc.want || page.Denials[0].AuditSeq == 0 {
				t.Fatalf("denial log %+v", page.Denials)
			}
		})
	}
}

// TestApprovalModes: "ask" for a tool asks about a call the policy would
// allow without asking; "auto" leaves the policy's decision; neither
// lets through what the policy refuses. In layer approval the questions
// come a layer at a time, after the plan was decided.
func TestApprovalModes(t *testing.T) {
	get := `{"id":"get","call":{"agentId":"fetchy","operation":"network.fetch","method":"GET","url":"https://api.example.com/in"}}`
	for _, tc := range []struct {
		name     string
		tools    map[string]string
		approval string
		tasks    string
		asked    int
		want     mediator.Code // of the refusal; "" runs
	}{
		{"auto: a GET asks nothing", map[string]string{"network.fetch": ModeAuto}, "", get, 0, ""},
		{"ask: a GET is asked about", map[string]string{"network.fetch": ModeAsk}, "", get, 1, ""},
		{"a misspelt mode asks", map[string]string{"network.fetch": "sometimes"}, "", get, 1, ""},
		{"ask, layer by layer", map[string]string{"network.fetch": ModeAsk}, ApproveLayer, get, 1, ""},
		{"auto never loosens a refusal", map[string]string{"network.fetch": ModeAuto}, "",
			`{"id":"get","call":{"agentId":"pure-agent","operation":"network.fetch","method":"GET","url":"https://api.example.com/in"}}`, 0, mediator.CodePermissionNotGranted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			lp := &layerPrompter{answer: mediator.AnswerAllowOnce}
			env := f.env(lp)
			env.Settings.Tools, env.Settings.Approval = tc.tools, tc.approval
			sum, err := Run(context.Background(), mustParse(t, `{"id":"wf-modes","tasks":[`+tc.tasks+`]}`), env)
			if mediator.CodeOf(err) != tc.want && !(tc.want == "" && err == nil) {
				t.Fatalf("%v; want %q", err, tc.want)
			}
			if len(lp.asked) != tc.asked || tc.want == "" && sum.Status != "ok" {
				t.Fatalf("asked %d; %+v", len(lp.asked), sum)
			}
		})
	}
}

// TestComputedURLIsDecidedWhenKnown: a call whose URL a step computes is
// listed as deferred, decided at its layer (refused there when its URL
// is outside the ACL), and asked about there when it needs a person.
func TestComputedURLIsDecidedWhenKnown(t *testing.T) {
	for _, tc := range []struct {
		name, url, status string
		asked             int
	}{
		{"listed host", "https://api.example.com/computed", "ok", 1},
		{"unlisted host", "https://evil.example/computed", string(mediator.CodeHostNotAllowed), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			lp := &layerPrompter{answer: mediator.AnswerAllowOnce}
			sum, err := Run(context.Background(), mustParse(t, `{"id":"wf-computed","tasks":[
				{"id":"where","code":{"op":"code:String","expr":"'`+tc.url+`'"}},
				{"id":"post","dependsOn":["where"],"call":{"agentId":"fetchy","operation":"network.fetch","method":"POST","urlExpr":"r.where","body":"1"}}]}`), f.env(lp))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sum.Plan.Deferred, []string{"post"}) || sum.Plan.SideEffects[0].Decision != "deferred" {
				t.Fatalf("plan %+v", sum.Plan)
			}
			if sum.Tasks[1].Status != tc.status || len(lp.asked) != tc.asked || tc.asked == 1 && lp.asked[0].Layer != 2 {
				t.Fatalf("%+v asked %d", sum.Tasks, len(lp.asked))
			}
		})
	}
}

// TestSafeToFail: a pure step's failure is reported, its dependants
// skip, and the workflow succeeds; a step marked safeToFail false, or a
// call's failure, fails it.
func TestSafeToFail(t *testing.T) {
	for _, tc := range []struct {
		name, flag, status string
	}{
		{"pure steps are safe to fail", "", "ok"},
		{"unless they say otherwise", `,"safeToFail":false`, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			sum, err := Run(context.Background(), mustParse(t, `{"id":"wf-safe","tasks":[
				{"id":"bad"`+tc.flag+`,"code":{"op":"code:JSON.parse","expr":"json.parse('{not json')"}},
				{"id":"uses","dependsOn":["bad"],"code":{"op":"code:get_length","expr":"size(r.bad)"}},
				{"id":"fine","code":{"op":"code:Math.round","expr":"math.round(2.5)"}}]}`), f.env(nil))
			if err != nil {
				t.Fatal(err)
			}
			got := []string{sum.Tasks[0].Status, sum.Tasks[1].Status, sum.Tasks[2].Status}
			if sum.Status != tc.status || got[0] != "trap" || got[1] != "dependency_failed" || got[2] != "ok" {
				t.Fatalf("%s %v", sum.Status, got)
			}
		})
	}
	if _, err := Parse([]byte(`{"tasks":[{"id":"c","safeToFail":true,"call":{"agentId":"fetchy","operation":"network.fetch","url":"https://api.example.com/"}}]}`)); mediator.CodeOf(err) != mediator.CodeInvalidWorkflow {
		t.Fatalf("a call marked safeToFail: %v", err)
	}
}

// TestOperationNames: every pure operation name is accepted as a step;
// every unsafe one is refused as unsafe_operation before anything runs,
// whatever the settings; a made-up one stays invalid_workflow.
func TestOperationNames(t *testing.T) {
	// One store for every name: a code step's name is judged before it
	// runs and leaves nothing in the store that another name's run reads,
	// and a store per name (about 90 of them) cost 25 s under the race
	// detector.
	f := newFixture(t)
	check := func(op string, validate bool) error {
		env := f.env(nil)
		env.Settings.ValidatePureCode = validate
		_, err := Run(context.Background(), Spec{ID: "wf", Tasks: []Task{{ID: "a", Code: &CodeStep{Op: op, Expr: "1"}}}}, env)
		return err
	}
	if n := len(mediator.PureOperations()); n < 70 {
		t.Fatalf("only %d pure operation names", n)
	}
	for _, op := range mediator.PureOperations() {
		t.Run("pure "+op, func(t *testing.T) {
			if err := check(op, true); err != nil {
				t.Fatal(err)
			}
		})
	}
	for _, op := range []string{"code:eval", "code:Function", "code:fetch", "code:setTimeout", "code:Promise.all", "code:await",
		"code:console.log", "code:Deno.readTextFile", "code:process.exit", "code:localStorage.setItem", "code:require"} {
		t.Run("unsafe "+op, func(t *testing.T) {
			for _, validate := range []bool{true, false} {
				if err := check(op, validate); mediator.CodeOf(err) != mediator.CodeUnsafeOperation {
					t.Fatalf("validatePureCode %v: %v", validate, err)
				}
			}
		})
	}
	if err := check("code:exec", true); mediator.CodeOf(err) != mediator.CodeInvalidWorkflow {
		t.Fatalf("made-up name: %v", err)
	}
}
