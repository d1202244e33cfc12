package mediator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedPrompter answers every prompt with answer (or err) and counts.
type scriptedPrompter struct {
	mu     sync.Mutex
	answer Answer
	err    error
	delay  time.Duration
	asked  []PromptRequest
}

func (p *scriptedPrompter) Prompt(ctx context.Context, req PromptRequest) (Answer, error) {
	p.mu.Lock()
	p.asked = append(p.asked, req)
	p.mu.Unlock()
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return p.answer, p.err
}

func (p *scriptedPrompter) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.asked)
}

// policyStore has three agents: "all" with every permission and full DOM
// access, "reader" with page.read and read-only DOM, "offline" with
// network.fetch granted but networkAccess off.
func policyStore(t *testing.T) *Store {
	t.Helper()
	s := openTestStore(t, t.TempDir())
	ctx := context.Background()
	install := func(id string, perms []Permission, c Capabilities) {
		p := Profile{AgentID: id, Permissions: Permissions{Required: perms}, Capabilities: c}
		if err := p.Normalize(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.InstallAgent(ctx, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	install("all", KnownPermissions, Capabilities{NetworkAccess: true, AllowedHosts: []string{"example.com"}, DOMAccess: DOMFull})
	install("reader", []Permission{PermPageRead, PermPageWrite}, Capabilities{DOMAccess: DOMReadOnly})
	install("offline", []Permission{PermNetworkFetch}, Capabilities{})
	return s
}

func TestZeroPolicyDecisionDenies(t *testing.T) {
	var d PolicyDecision
	if d.Allowed || d.Code != "" {
		t.Fatalf("zero decision %+v", d)
	}
}

func TestDecideTable(t *testing.T) {
	p := NewPolicy(policyStore(t), PolicyOptions{})
	fetch := func(method string) Operation {
		return Operation{AgentID: "all", Name: OpNetworkFetch, Method: method, URL: "https://example.com/", Host: "example.com"}
	}
	withLevel := func(op Operation, level string) Operation { op.SessionLevel = level; return op }
	op := func(agent, name string) Operation { return Operation{AgentID: agent, Name: name} }
	cases := []struct {
		name      string
		op        Operation
		allowed   bool
		prompt    bool
		class     SafetyClass
		code      Code
		decidedBy string
	}{
		{"log is safe", op("all", OpLog), true, false, AlwaysSafe, CodeAllowed, "class:ALWAYS_SAFE"},
		{"page text is safe", op("all", OpPageGetPageText), true, false, AlwaysSafe, CodeAllowed, "class:ALWAYS_SAFE"},
		{"GET is safe", fetch("GET"), true, false, AlwaysSafe, CodeAllowed, "class:ALWAYS_SAFE"},
		{"empty method is GET", fetch(""), true, false, AlwaysSafe, CodeAllowed, "class:ALWAYS_SAFE"},
		{"lowercase head", fetch("head"), true, false, AlwaysSafe, CodeAllowed, "class:ALWAYS_SAFE"},
		{"POST asks", fetch("POST"), false, true, RequiresConfirmation, CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		{"DELETE always asks", fetch("DELETE"), false, true, AlwaysConfirm, CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"page write asks", op("all", OpPageSetElementText), false, true, RequiresConfirmation, CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		{"clipboard write asks", op("all", OpClipboardWrite), false, true, RequiresConfirmation, CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		{"clipboard read always asks", op("all", OpClipboardRead), false, true, AlwaysConfirm, CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"notification asks", op("all", OpNotificationsShow), false, true, RequiresConfirmation, CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		// Hostile or odd inputs.
		{"unknown operation", op("all", "process.spawn"), false, false, AlwaysConfirm, CodeUnknownPermission, "class:ALWAYS_CONFIRM"},
		{"ffi is unknown", op("all", "ffi"), false, false, AlwaysConfirm, CodeUnknownPermission, "class:ALWAYS_CONFIRM"},
		{"case tricks", op("all", "Log"), false, false, AlwaysConfirm, CodeUnknownPermission, "class:ALWAYS_CONFIRM"},
		{"permission that does not match the operation", Operation{AgentID: "all", Name: OpClipboardRead, Permission: PermConsoleLog}, false, false, AlwaysConfirm, CodeBadRequest, "grant:clipboard.read"},
		{"unknown agent", op("ghost", OpLog), false, false, AlwaysSafe, CodeUnknownAgent, "grant:console.log"},
		{"bad agent id", op("../x", OpLog), false, false, AlwaysSafe, CodeUnknownAgent, "grant:console.log"},
		{"not granted", op("reader", OpLog), false, false, AlwaysSafe, CodePermissionNotGranted, "grant:console.log"},
		{"read-only DOM refuses writes without asking", op("reader", OpPageSetElementText), false, false, RequiresConfirmation, CodePermissionNotGranted, "capability:domAccess"},
		{"read-only DOM reads", op("reader", OpPageQuerySelector), true, false, AlwaysSafe, CodeAllowed, "class:ALWAYS_SAFE"},
		{"no networkAccess", Operation{AgentID: "offline", Name: OpNetworkFetch, Method: "GET"}, false, false, AlwaysSafe, CodeNetworkDisabled, "capability:networkAccess"},
		// Session levels (seed 001).
		{"low runs local safe reads", withLevel(op("all", OpPageGetPageText), LevelLow), true, false, AlwaysSafe, CodeAllowed, "class:ALWAYS_SAFE"},
		{"low refuses a GET", withLevel(fetch("GET"), LevelLow), false, false, AlwaysSafe, CodeSessionLevel, "level:low"},
		{"low refuses what would ask", withLevel(op("all", OpClipboardWrite), LevelLow), false, false, RequiresConfirmation, CodeSessionLevel, "level:low"},
		{"high runs confirmations", withLevel(fetch("POST"), LevelHigh), true, false, RequiresConfirmation, CodeAllowed, "level:high"},
		{"high still asks for always-confirm", withLevel(op("all", OpClipboardRead), LevelHigh), false, true, AlwaysConfirm, CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"high does not widen grants", withLevel(op("reader", OpLog), LevelHigh), false, false, AlwaysSafe, CodePermissionNotGranted, "grant:console.log"},
		{"unknown level", withLevel(op("all", OpLog), "root"), false, false, AlwaysSafe, CodeInvalidLevel, "level:root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := p.Decide(context.Background(), c.op)
			if d.Allowed != c.allowed || d.RequiresPrompt != c.prompt || d.Level != c.class || d.Code != c.code || d.DecidedBy != c.decidedBy {
				t.Fatalf("got %+v\nwant allowed=%v prompt=%v class=%s code=%s decidedBy=%s", d, c.allowed, c.prompt, c.class, c.code, c.decidedBy)
			}
			if again := p.Decide(context.Background(), c.op); again != d {
				t.Fatalf("same input, different decision: %+v then %+v", d, again)
			}
		})
	}
}

func TestEveryKnownPermissionHasAnOperation(t *testing.T) {
	for _, perm := range KnownPermissions {
		found := false
		for _, r := range OperationTable {
			found = found || r.Permission == perm
		}
		if !found {
			t.Errorf("permission %s has no row in OperationTable", perm)
		}
	}
}

func TestAuthorizeAnswers(t *testing.T) {
	ctx := context.Background()
	post := Operation{AgentID: "all", Name: OpNetworkFetch, Method: "POST", URL: "https://example.com/form", Host: "example.com"}
	cases := []struct {
		name   string
		answer Answer
		err    error
		want   Code // "" allows
	}{
		{"allow once", AnswerAllowOnce, nil, ""},
		{"always allow", AnswerAlwaysAllow, nil, ""},
		{"deny", AnswerDeny, nil, CodeUserDenied},
		{"always block", AnswerAlwaysBlock, nil, CodeBlockedByUser},
		{"nonsense answer denies", Answer("yes please"), nil, CodeUserDenied},
		{"empty answer denies", Answer(""), nil, CodeUserDenied},
		{"prompt failure denies", "", errors.New("window closed"), CodeInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := policyStore(t)
			pr := &scriptedPrompter{answer: c.answer, err: c.err}
			p := NewPolicy(s, PolicyOptions{Prompter: pr})
			done, err := p.Authorize(ctx, post)
			if got := CodeOf(err); got != c.want {
				t.Fatalf("code %q (%v); want %q", got, err, c.want)
			}
			if (err == nil) != (done != nil) {
				t.Fatalf("done=%v err=%v", done != nil, err)
			}
			if done != nil {
				done(nil)
			}
			req := pr.asked[0]
			if req.Op.URL != post.URL || req.Class != RequiresConfirmation {
				t.Fatalf("prompt showed %+v", req)
			}
			// A second identical call: remembered answers decide without a prompt.
			_, err2 := p.Authorize(ctx, post)
			remembered := c.answer == AnswerAlwaysAllow || c.answer == AnswerAlwaysBlock
			if wantPrompts := map[bool]int{true: 1, false: 2}[remembered]; pr.count() != wantPrompts {
				t.Fatalf("%d prompts; want %d", pr.count(), wantPrompts)
			}
			if remembered && CodeOf(err2) != c.want {
				t.Fatalf("second call code %q; want %q", CodeOf(err2), c.want)
			}
			// The same operation to another host is a different target: asked again.
			other := post
			other.Host, other.URL = "api.example.com", "https://api.example.com/"
			p.Authorize(ctx, other)
			if pr.count() < 2 {
				t.Fatal("a remembered answer for one host applied to another")
			}
			rep, verr := s.VerifyAudit(ctx)
			if verr != nil || !rep.OK {
				t.Fatalf("audit %+v %v", rep, verr)
			}
		})
	}
}

func TestPromptTimeoutAndNoPrompter(t *testing.T) {
	ctx := context.Background()
	op := Operation{AgentID: "all", Name: OpClipboardWrite, TextLength: 12}
	slow := &scriptedPrompter{answer: AnswerAllowOnce, delay: time.Hour}
	p := NewPolicy(policyStore(t), PolicyOptions{Prompter: slow, PromptTimeout: 50 * time.Millisecond})
	if _, err := p.Authorize(ctx, op); CodeOf(err) != CodePromptTimeout {
		t.Fatalf("slow prompt: %v; want prompt_timeout", err)
	}
	none := NewPolicy(policyStore(t), PolicyOptions{})
	if _, err := none.Authorize(ctx, op); CodeOf(err) != CodeConfirmRequired {
		t.Fatalf("no prompter: %v; want confirmation_required", err)
	}
}

func TestAlwaysBlockWinsAndDamagedRowsAreIgnored(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := NewPolicy(s, PolicyOptions{Prompter: &scriptedPrompter{answer: AnswerDeny}})
	get := Operation{AgentID: "all", Name: OpNetworkFetch, Method: "GET", Host: "example.com"}
	pref, err := s.SetPreference(ctx, Preference{AgentID: "all", Operation: OpNetworkFetch, Target: "GET example.com", Answer: AnswerAlwaysBlock})
	if err != nil {
		t.Fatal(err)
	}
	// Blocking beats even a safe class.
	if d := p.Decide(ctx, get); d.Code != CodeBlockedByUser || d.DecidedBy != fmt.Sprintf("preference:%d", pref.ID) {
		t.Fatalf("blocked GET: %+v", d)
	}
	// A damaged answer is no answer: the class decides again.
	if _, err := s.db.Exec(`UPDATE preferences SET answer = 'always-allow-ish' WHERE id = ?`, pref.ID); err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(ctx, get); !d.Allowed || d.DecidedBy != "class:ALWAYS_SAFE" {
		t.Fatalf("damaged row: %+v", d)
	}
	if prefs, _ := s.ListPreferences(ctx, "all"); len(prefs) != 0 {
		t.Fatalf("damaged row listed: %+v", prefs)
	}
	if _, err := s.SetPreference(ctx, Preference{AgentID: "all", Operation: OpNetworkFetch, Answer: AnswerAllowOnce}); CodeOf(err) != CodeBadRequest {
		t.Fatalf("allow-once stored: %v", err)
	}
	pref2, _ := s.SetPreference(ctx, Preference{AgentID: "all", Operation: OpClipboardRead, Answer: AnswerAlwaysAllow})
	if d := p.Decide(ctx, Operation{AgentID: "all", Name: OpClipboardRead}); !d.Allowed || !d.AlwaysAllow {
		t.Fatalf("always-allow: %+v", d)
	}
	if ok, err := s.RevokePreference(ctx, pref2.ID); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if d := p.Decide(ctx, Operation{AgentID: "all", Name: OpClipboardRead}); !d.RequiresPrompt {
		t.Fatalf("after revoke: %+v", d)
	}
}

func TestAuthorizeRecordsDecisionThenOutcome(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := NewPolicy(s, PolicyOptions{})
	done, err := p.Authorize(ctx, Operation{AgentID: "all", Name: OpPageGetPageText, TextLength: 5000})
	if err != nil {
		t.Fatal(err)
	}
	done(Errorf(CodeTimeout, "tab did not answer"))
	if _, err := p.Authorize(ctx, Operation{AgentID: "reader", Name: OpLog}); CodeOf(err) != CodePermissionNotGranted {
		t.Fatalf("ungranted log: %v", err)
	}
	page, err := s.ListAudit(ctx, 0, 10, false)
	if err != nil || len(page.Records) != 3 {
		t.Fatalf("audit: %v %+v", err, page)
	}
	dec, exe, den := page.Records[0], page.Records[1], page.Records[2]
	if dec.Kind != AuditDecision || !dec.Allowed || dec.Operation.TextLength != 5000 {
		t.Errorf("decision record %+v", dec)
	}
	if exe.Kind != AuditExecuted || exe.Ref != dec.Seq || exe.Code != CodeTimeout {
		t.Errorf("executed record %+v", exe)
	}
	if den.Allowed || den.Code != CodePermissionNotGranted {
		t.Errorf("denied record %+v", den)
	}
	denials, _ := s.ListDenials(ctx, DenialFilter{AgentID: "reader"})
	if len(denials.Denials) != 1 || denials.Denials[0].Context.Layer != "policy" || denials.Denials[0].Permission != string(PermConsoleLog) {
		t.Fatalf("denial log %+v", denials.Denials)
	}
}

func TestVerifyAuditFindsTampering(t *testing.T) {
	ctx := context.Background()
	build := func(t *testing.T) *Store {
		s := openTestStore(t, t.TempDir())
		for i := range 5 {
			if _, err := s.AppendAudit(ctx, AuditEntry{Kind: AuditDecision, Operation: Operation{AgentID: "a", Name: OpLog}, Reason: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	cases := []struct {
		name   string
		sql    string
		badSeq int64
		word   string
	}{
		{"untouched", "", 0, ""},
		{"edited body", `UPDATE audit SET body = replace(body, '"allowed":false', '"allowed":true') WHERE seq = 3`, 3, "edited"},
		{"edited time", `UPDATE audit SET ts = ts + 1, body = replace(body, '"ts":', '"ts":1') WHERE seq = 2`, 2, "edited"},
		// The editor recomputes record 4's hash: record 5 no longer links.
		{"edited with a recomputed hash", "REHASH 4", 5, "link"},
		{"removed in the middle", `DELETE FROM audit WHERE seq = 2`, 2, "removed"},
		{"removed first", `DELETE FROM audit WHERE seq = 1`, 1, "removed"},
		// Swap two records' contents, keeping seq: the links break.
		{"reordered", `UPDATE audit SET body = CASE seq WHEN 2 THEN (SELECT body FROM audit WHERE seq = 3) ELSE (SELECT body FROM audit WHERE seq = 2) END,
			hash = CASE seq WHEN 2 THEN (SELECT hash FROM audit WHERE seq = 3) ELSE (SELECT hash FROM audit WHERE seq = 2) END,
			prev = CASE seq WHEN 2 THEN (SELECT prev FROM audit WHERE seq = 3) ELSE (SELECT prev FROM audit WHERE seq = 2) END WHERE seq IN (2, 3)`, 2, "link"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := build(t)
			if c.sql == "REHASH 4" {
				var prev, body string
				s.db.QueryRow(`SELECT prev, body FROM audit WHERE seq = 4`).Scan(&prev, &body)
				body = strings.Replace(body, `"reason":"3"`, `"reason":"x"`, 1)
				if _, err := s.db.Exec(`UPDATE audit SET body = ?, hash = ? WHERE seq = 4`, body, auditHash(prev, 4, []byte(body))); err != nil {
					t.Fatal(err)
				}
			} else if c.sql != "" {
				if _, err := s.db.Exec(c.sql); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := s.VerifyAudit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if c.badSeq == 0 {
				if !rep.OK || rep.Records != 5 || rep.LastHash == "" {
					t.Fatalf("intact chain reported %+v", rep)
				}
				return
			}
			if rep.OK || rep.BadSeq != c.badSeq || !strings.Contains(rep.Problem, c.word) {
				t.Fatalf("report %+v; want bad seq %d (%s)", rep, c.badSeq, c.word)
			}
		})
	}
}

// TestReinstallIsSeenAtOnce: the policy caches parsed capabilities; a
// re-install (by this or another process) must change the next decision.
func TestReinstallIsSeenAtOnce(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := NewPolicy(s, PolicyOptions{})
	write := Operation{AgentID: "reader", Name: OpPageSetElementText}
	if d := p.Decide(ctx, write); d.Code != CodePermissionNotGranted {
		t.Fatalf("read-only: %+v", d)
	}
	prof := Profile{AgentID: "reader", Permissions: Permissions{Required: []Permission{PermPageRead, PermPageWrite}}, Capabilities: Capabilities{DOMAccess: DOMFull}}
	if err := prof.Normalize(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InstallAgent(ctx, prof, ""); err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(ctx, write); !d.RequiresPrompt {
		t.Fatalf("after re-install with full DOM access: %+v", d)
	}
}

// TestRememberedFetchAnswerCoversExactlyThatMethodAndPort: "always allow"
// for a POST must not let a DELETE (always-confirm) or another port through.
func TestRememberedFetchAnswerCoversExactlyThatMethodAndPort(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := NewPolicy(s, PolicyOptions{Prompter: &scriptedPrompter{answer: AnswerAlwaysAllow}})
	post := Operation{AgentID: "all", Name: OpNetworkFetch, Method: "POST", URL: "http://example.com:8080/a", Host: "example.com"}
	if _, err := p.Authorize(ctx, post); err != nil {
		t.Fatal(err)
	}
	prefs, _ := s.ListPreferences(ctx, "all")
	if len(prefs) != 1 || prefs[0].Target != "POST example.com:8080" {
		t.Fatalf("stored %+v", prefs)
	}
	for _, other := range []Operation{
		{AgentID: "all", Name: OpNetworkFetch, Method: "DELETE", URL: "http://example.com:8080/a", Host: "example.com"},
		{AgentID: "all", Name: OpNetworkFetch, Method: "POST", URL: "http://example.com:9090/a", Host: "example.com"},
		{AgentID: "all", Name: OpNetworkFetch, Method: "POST", URL: "http://example.com/a", Host: "example.com"},
	} {
		if d := p.Decide(ctx, other); !d.RequiresPrompt {
			t.Errorf("%s %s decided %+v by the POST :8080 answer", other.Method, other.URL, d)
		}
	}
	if d := p.Decide(ctx, post); !d.Allowed || !d.AlwaysAllow {
		t.Fatalf("the same POST: %+v", d)
	}
}
