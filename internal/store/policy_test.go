package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// scriptedPrompter answers every prompt with answer (or err) and counts.
type scriptedPrompter struct {
	mu     sync.Mutex
	answer mediator.Answer
	err    error
	delay  time.Duration
	asked  []mediator.PromptRequest
}

func (p *scriptedPrompter) Prompt(ctx context.Context, req mediator.PromptRequest) (mediator.Answer, error) {
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
	s := openTestStore(t, freshDir(t))
	ctx := context.Background()
	install := func(id string, perms []mediator.Permission, c mediator.Capabilities) {
		p := mediator.Profile{AgentID: id, Permissions: mediator.Permissions{Required: perms}, Capabilities: c}
		if err := p.Normalize(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.InstallAgent(ctx, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	install("all", mediator.KnownPermissions(), mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{"example.com"}, DOMAccess: mediator.DOMFull})
	install("reader", []mediator.Permission{mediator.PermPageRead, mediator.PermPageWrite}, mediator.Capabilities{DOMAccess: mediator.DOMReadOnly})
	install("offline", []mediator.Permission{mediator.PermNetworkFetch}, mediator.Capabilities{})
	return s
}

func TestZeroPolicyDecisionDenies(t *testing.T) {
	var d mediator.PolicyDecision
	if d.Allowed || d.Code != "" {
		t.Fatalf("zero decision %+v", d)
	}
}

func TestDecideTable(t *testing.T) {
	p := mediator.NewPolicy(policyStore(t), mediator.PolicyOptions{})
	fetch := func(method string) mediator.Operation {
		return mediator.Operation{AgentID: "all", Name: mediator.OpNetworkFetch, Method: method, URL: "https://example.com/", Host: "example.com"}
	}
	withLevel := func(op mediator.Operation, level string) mediator.Operation { op.SessionLevel = level; return op }
	op := func(agent, name string) mediator.Operation { return mediator.Operation{AgentID: agent, Name: name} }
	cases := []struct {
		name      string
		op        mediator.Operation
		allowed   bool
		prompt    bool
		class     mediator.SafetyClass
		code      mediator.Code
		decidedBy string
	}{
		{"log is safe", op("all", mediator.OpLog), true, false, mediator.AlwaysSafe, mediator.CodeAllowed, "class:ALWAYS_SAFE"},
		{"page text is safe", op("all", mediator.OpPageGetPageText), true, false, mediator.AlwaysSafe, mediator.CodeAllowed, "class:ALWAYS_SAFE"},
		{"GET is safe", fetch("GET"), true, false, mediator.AlwaysSafe, mediator.CodeAllowed, "class:ALWAYS_SAFE"},
		{"empty method is GET", fetch(""), true, false, mediator.AlwaysSafe, mediator.CodeAllowed, "class:ALWAYS_SAFE"},
		{"lowercase head", fetch("head"), true, false, mediator.AlwaysSafe, mediator.CodeAllowed, "class:ALWAYS_SAFE"},
		{"POST asks", fetch("POST"), false, true, mediator.RequiresConfirmation, mediator.CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		{"DELETE always asks", fetch("DELETE"), false, true, mediator.AlwaysConfirm, mediator.CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"page write asks", op("all", mediator.OpPageSetElementText), false, true, mediator.RequiresConfirmation, mediator.CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		{"clipboard write asks", op("all", mediator.OpClipboardWrite), false, true, mediator.RequiresConfirmation, mediator.CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		{"clipboard read always asks", op("all", mediator.OpClipboardRead), false, true, mediator.AlwaysConfirm, mediator.CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"notification asks", op("all", mediator.OpNotificationsShow), false, true, mediator.RequiresConfirmation, mediator.CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		// Hostile or odd inputs.
		{"unknown operation", op("all", "process.spawn"), false, false, mediator.AlwaysConfirm, mediator.CodeUnknownPermission, "class:ALWAYS_CONFIRM"},
		{"ffi is unknown", op("all", "ffi"), false, false, mediator.AlwaysConfirm, mediator.CodeUnknownPermission, "class:ALWAYS_CONFIRM"},
		{"case tricks", op("all", "Log"), false, false, mediator.AlwaysConfirm, mediator.CodeUnknownPermission, "class:ALWAYS_CONFIRM"},
		{"permission that does not match the operation", mediator.Operation{AgentID: "all", Name: mediator.OpClipboardRead, Permission: mediator.PermConsoleLog}, false, false, mediator.AlwaysConfirm, mediator.CodeBadRequest, "grant:clipboard.read"},
		{"unknown agent", op("ghost", mediator.OpLog), false, false, mediator.AlwaysSafe, mediator.CodeUnknownAgent, "grant:console.log"},
		{"bad agent id", op("../x", mediator.OpLog), false, false, mediator.AlwaysSafe, mediator.CodeUnknownAgent, "grant:console.log"},
		{"not granted", op("reader", mediator.OpLog), false, false, mediator.AlwaysSafe, mediator.CodePermissionNotGranted, "grant:console.log"},
		{"read-only DOM refuses writes without asking", op("reader", mediator.OpPageSetElementText), false, false, mediator.RequiresConfirmation, mediator.CodePermissionNotGranted, "capability:domAccess"},
		{"read-only DOM reads", op("reader", mediator.OpPageQuerySelector), true, false, mediator.AlwaysSafe, mediator.CodeAllowed, "class:ALWAYS_SAFE"},
		{"no networkAccess", mediator.Operation{AgentID: "offline", Name: mediator.OpNetworkFetch, Method: "GET"}, false, false, mediator.AlwaysSafe, mediator.CodeNetworkDisabled, "capability:networkAccess"},
		// Session levels (docs/permissions.md).
		{"low runs local safe reads", withLevel(op("all", mediator.OpPageGetPageText), mediator.LevelLow), true, false, mediator.AlwaysSafe, mediator.CodeAllowed, "class:ALWAYS_SAFE"},
		{"low refuses a GET", withLevel(fetch("GET"), mediator.LevelLow), false, false, mediator.AlwaysSafe, mediator.CodeSessionLevel, "level:low"},
		{"low refuses what would ask", withLevel(op("all", mediator.OpClipboardWrite), mediator.LevelLow), false, false, mediator.RequiresConfirmation, mediator.CodeSessionLevel, "level:low"},
		{"high runs confirmations", withLevel(fetch("POST"), mediator.LevelHigh), true, false, mediator.RequiresConfirmation, mediator.CodeAllowed, "level:high"},
		{"high still asks for always-confirm", withLevel(op("all", mediator.OpClipboardRead), mediator.LevelHigh), false, true, mediator.AlwaysConfirm, mediator.CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"high does not widen grants", withLevel(op("reader", mediator.OpLog), mediator.LevelHigh), false, false, mediator.AlwaysSafe, mediator.CodePermissionNotGranted, "grant:console.log"},
		{"unknown level", withLevel(op("all", mediator.OpLog), "root"), false, false, mediator.AlwaysSafe, mediator.CodeInvalidLevel, "level:root"},
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
	for _, perm := range mediator.KnownPermissions() {
		found := false
		for _, r := range mediator.Operations() {
			found = found || r.Permission == perm
		}
		if !found {
			t.Errorf("permission %s has no row in OperationTable", perm)
		}
	}
}

func TestAuthorizeAnswers(t *testing.T) {
	ctx := context.Background()
	post := mediator.Operation{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "POST", URL: "https://example.com/form", Host: "example.com"}
	cases := []struct {
		name   string
		answer mediator.Answer
		err    error
		want   mediator.Code // "" allows
	}{
		{"allow once", mediator.AnswerAllowOnce, nil, ""},
		{"always allow", mediator.AnswerAlwaysAllow, nil, ""},
		{"deny", mediator.AnswerDeny, nil, mediator.CodeUserDenied},
		{"always block", mediator.AnswerAlwaysBlock, nil, mediator.CodeBlockedByUser},
		{"nonsense answer denies", mediator.Answer("yes please"), nil, mediator.CodeAnswerNotOffered},
		{"empty answer denies", mediator.Answer(""), nil, mediator.CodeAnswerNotOffered},
		{"prompt failure denies", "", errors.New("window closed"), mediator.CodeInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := policyStore(t)
			pr := &scriptedPrompter{answer: c.answer, err: c.err}
			p := mediator.NewPolicy(s, mediator.PolicyOptions{Prompter: pr})
			done, err := p.Authorize(ctx, post)
			if got := mediator.CodeOf(err); got != c.want {
				t.Fatalf("code %q (%v); want %q", got, err, c.want)
			}
			if (err == nil) != (done != nil) {
				t.Fatalf("done=%v err=%v", done != nil, err)
			}
			if done != nil {
				done(nil)
			}
			req := pr.asked[0]
			if req.Op.URL != post.URL || req.Class != mediator.RequiresConfirmation {
				t.Fatalf("prompt showed %+v", req)
			}
			// A second identical call: remembered answers decide without a prompt.
			_, err2 := p.Authorize(ctx, post)
			remembered := c.answer == mediator.AnswerAlwaysAllow || c.answer == mediator.AnswerAlwaysBlock
			if wantPrompts := map[bool]int{true: 1, false: 2}[remembered]; pr.count() != wantPrompts {
				t.Fatalf("%d prompts; want %d", pr.count(), wantPrompts)
			}
			if remembered && mediator.CodeOf(err2) != c.want {
				t.Fatalf("second call code %q; want %q", mediator.CodeOf(err2), c.want)
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
	op := mediator.Operation{AgentID: "all", Name: mediator.OpClipboardWrite, TextLength: 12}
	slow := &scriptedPrompter{answer: mediator.AnswerAllowOnce, delay: time.Hour}
	p := mediator.NewPolicy(policyStore(t), mediator.PolicyOptions{Prompter: slow, PromptTimeout: 50 * time.Millisecond})
	if _, err := p.Authorize(ctx, op); mediator.CodeOf(err) != mediator.CodePromptTimeout {
		t.Fatalf("slow prompt: %v; want prompt_timeout", err)
	}
	none := mediator.NewPolicy(policyStore(t), mediator.PolicyOptions{})
	if _, err := none.Authorize(ctx, op); mediator.CodeOf(err) != mediator.CodeConfirmRequired {
		t.Fatalf("no prompter: %v; want confirmation_required", err)
	}
}

func TestAlwaysBlockWinsAndDamagedRowsAreIgnored(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := mediator.NewPolicy(s, mediator.PolicyOptions{Prompter: &scriptedPrompter{answer: mediator.AnswerDeny}})
	get := mediator.Operation{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "GET", URL: "https://example.com/", Host: "example.com"}
	pref, err := s.SetPreference(ctx, mediator.Preference{AgentID: "all", Operation: mediator.OpNetworkFetch, Target: "GET https://example.com:443", Answer: mediator.AnswerAlwaysBlock})
	if err != nil {
		t.Fatal(err)
	}
	// Blocking beats even a safe class.
	if d := p.Decide(ctx, get); d.Code != mediator.CodeBlockedByUser || d.DecidedBy != fmt.Sprintf("pref:always:%d", pref.ID) {
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
	if _, err := s.SetPreference(ctx, mediator.Preference{AgentID: "all", Operation: mediator.OpNetworkFetch, Answer: mediator.AnswerAllowOnce}); mediator.CodeOf(err) != mediator.CodeBadRequest {
		t.Fatalf("allow-once stored: %v", err)
	}
	pref2, _ := s.SetPreference(ctx, mediator.Preference{AgentID: "all", Operation: mediator.OpClipboardRead, Answer: mediator.AnswerAlwaysAllow})
	if d := p.Decide(ctx, mediator.Operation{AgentID: "all", Name: mediator.OpClipboardRead}); !d.Allowed || !d.AlwaysAllow {
		t.Fatalf("always-allow: %+v", d)
	}
	if ok, err := s.RevokePreference(ctx, pref2.ID); !ok || err != nil {
		t.Fatalf("revoke: %v %v", ok, err)
	}
	if d := p.Decide(ctx, mediator.Operation{AgentID: "all", Name: mediator.OpClipboardRead}); !d.RequiresPrompt {
		t.Fatalf("after revoke: %+v", d)
	}
}

func TestAuthorizeRecordsDecisionThenOutcome(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := mediator.NewPolicy(s, mediator.PolicyOptions{})
	done, err := p.Authorize(ctx, mediator.Operation{AgentID: "all", Name: mediator.OpPageGetPageText, TextLength: 5000})
	if err != nil {
		t.Fatal(err)
	}
	done(mediator.Errorf(mediator.CodeTimeout, "tab did not answer"))
	if _, err := p.Authorize(ctx, mediator.Operation{AgentID: "reader", Name: mediator.OpLog}); mediator.CodeOf(err) != mediator.CodePermissionNotGranted {
		t.Fatalf("ungranted log: %v", err)
	}
	page, err := s.ListAudit(ctx, 0, 10, false)
	if err != nil || len(page.Records) != 3 {
		t.Fatalf("audit: %v %+v", err, page)
	}
	dec, exe, den := page.Records[0], page.Records[1], page.Records[2]
	if dec.Kind != mediator.AuditDecision || !dec.Allowed || dec.Operation.TextLength != 5000 {
		t.Errorf("decision record %+v", dec)
	}
	if exe.Kind != mediator.AuditExecuted || exe.Ref != dec.Seq || exe.Code != mediator.CodeTimeout {
		t.Errorf("executed record %+v", exe)
	}
	if den.Allowed || den.Code != mediator.CodePermissionNotGranted {
		t.Errorf("denied record %+v", den)
	}
	denials, _ := s.ListDenials(ctx, DenialFilter{AgentID: "reader"})
	if len(denials.Denials) != 1 || denials.Denials[0].Context.Layer != "policy" || denials.Denials[0].Permission != string(mediator.PermConsoleLog) {
		t.Fatalf("denial log %+v", denials.Denials)
	}
}

func TestVerifyAuditFindsTampering(t *testing.T) {
	ctx := context.Background()
	build := func(t *testing.T) *Store {
		s := openTestStore(t, freshDir(t))
		for i := range 5 {
			if _, err := s.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: mediator.Operation{AgentID: "a", Name: mediator.OpLog}, Reason: fmt.Sprint(i)}); err != nil {
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
		// The editor recomputes record 4's chain hash: its leaf in the
		// log's tree no longer matches (record 5 would not link either).
		{"edited with a recomputed hash", "REHASH 4", 4, "leaf"},
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
	p := mediator.NewPolicy(s, mediator.PolicyOptions{})
	write := mediator.Operation{AgentID: "reader", Name: mediator.OpPageSetElementText}
	if d := p.Decide(ctx, write); d.Code != mediator.CodePermissionNotGranted {
		t.Fatalf("read-only: %+v", d)
	}
	prof := mediator.Profile{AgentID: "reader", Permissions: mediator.Permissions{Required: []mediator.Permission{mediator.PermPageRead, mediator.PermPageWrite}}, Capabilities: mediator.Capabilities{DOMAccess: mediator.DOMFull}}
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

// TestRememberedFetchAnswerCoversExactlyThatMethodAndOrigin: "always allow"
// for a POST must not let a DELETE (always-confirm), another port or the
// same host over cleartext through, and must hold for every spelling of
// the same origin.
func TestRememberedFetchAnswerCoversExactlyThatMethodAndOrigin(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := mediator.NewPolicy(s, mediator.PolicyOptions{Prompter: &scriptedPrompter{answer: mediator.AnswerAlwaysAllow}})
	post := mediator.Operation{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "POST", URL: "https://example.com/a", Host: "example.com"}
	if _, err := p.Authorize(ctx, post); err != nil {
		t.Fatal(err)
	}
	prefs, _ := s.ListPreferences(ctx, "all")
	if len(prefs) != 1 || prefs[0].Target != "POST https://example.com:443" {
		t.Fatalf("stored %+v", prefs)
	}
	for _, other := range []mediator.Operation{
		{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "DELETE", URL: "https://example.com/a", Host: "example.com"},
		{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "POST", URL: "https://example.com:8443/a", Host: "example.com"},
		{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "POST", URL: "http://example.com/a", Host: "example.com"},
		{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "POST", URL: "http://example.com:443/a", Host: "example.com"},
		{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "POST", URL: "https://other.example.com/a", Host: "other.example.com"},
	} {
		if d := p.Decide(ctx, other); !d.RequiresPrompt {
			t.Errorf("%s %s decided %+v by the POST https://example.com answer", other.Method, other.URL, d)
		}
	}
	for _, same := range []string{"https://example.com/a", "https://example.com:443/b", "HTTPS://EXAMPLE.COM/c", "https://Example.com:443/"} {
		op := post
		op.URL = same
		if d := p.Decide(ctx, op); !d.Allowed || !d.AlwaysAllow {
			t.Errorf("POST %s (the same origin): %+v", same, d)
		}
	}
}

// TestRememberedBlockHoldsForEverySpellingOfThePort: "always block DELETE
// http://127.0.0.1" is not bypassed by writing :80.
func TestRememberedBlockHoldsForEverySpellingOfThePort(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	p := mediator.NewPolicy(s, mediator.PolicyOptions{Prompter: &scriptedPrompter{answer: mediator.AnswerAlwaysBlock}})
	del := mediator.Operation{AgentID: "all", Name: mediator.OpNetworkFetch, Method: "DELETE", URL: "http://127.0.0.1/x", Host: "127.0.0.1"}
	if _, err := p.Authorize(ctx, del); mediator.CodeOf(err) != mediator.CodeBlockedByUser {
		t.Fatalf("first DELETE: %v", err)
	}
	for _, u := range []string{"http://127.0.0.1/x", "http://127.0.0.1:80/x", "HTTP://127.0.0.1:80/y"} {
		op := del
		op.URL = u
		if d := p.Decide(ctx, op); d.Code != mediator.CodeBlockedByUser {
			t.Errorf("DELETE %s: %+v; want blocked_by_user", u, d)
		}
	}
}

// TestFetchMethodsAndBodiesTheTableDoesNotCover: a method outside the
// table is refused before any prompt and never remembered; a body on a
// safe method is refused instead of riding out unasked.
func TestFetchMethodsAndBodiesTheTableDoesNotCover(t *testing.T) {
	ctx := context.Background()
	s := policyStore(t)
	prompter := &scriptedPrompter{answer: mediator.AnswerAlwaysAllow}
	p := mediator.NewPolicy(s, mediator.PolicyOptions{Prompter: prompter})
	cases := []struct {
		name   string
		method string
		body   int
		code   mediator.Code
	}{
		{"CONNECT", "CONNECT", 0, mediator.CodeMethodNotAllowed},
		{"TRACE", "TRACE", 0, mediator.CodeMethodNotAllowed},
		{"PROPFIND", "PROPFIND", 10, mediator.CodeMethodNotAllowed},
		{"lower-case trace", "trace", 0, mediator.CodeMethodNotAllowed},
		{"GET with a body", "GET", 8 << 20, mediator.CodeBodyNotAllowed},
		{"empty method with a body is GET", "", 1, mediator.CodeBodyNotAllowed},
		{"HEAD with a body", "HEAD", 1, mediator.CodeBodyNotAllowed},
		{"OPTIONS with a body", "OPTIONS", 8 << 20, mediator.CodeBodyNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := mediator.Operation{AgentID: "all", Name: mediator.OpNetworkFetch, Method: c.method, URL: "https://example.com/", Host: "example.com", TextLength: c.body}
			if _, err := p.Authorize(ctx, op); mediator.CodeOf(err) != c.code {
				t.Fatalf("Authorize: %v; want %s", err, c.code)
			}
		})
	}
	if n := prompter.count(); n != 0 {
		t.Fatalf("%d prompts shown; want none", n)
	}
	if prefs, _ := s.ListPreferences(ctx, "all"); len(prefs) != 0 {
		t.Fatalf("remembered: %+v", prefs)
	}
}
