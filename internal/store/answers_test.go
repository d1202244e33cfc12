package store

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// testClock is one clock for the store and the policy, moved by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// answerWorld is a store with one agent granted everything, its policy
// and a prompter whose answer each test sets.
type answerWorld struct {
	t     *testing.T
	s     *Store
	clock *testClock
	pr    *scriptedPrompter
	p     *mediator.Policy
}

const (
	moduleA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	moduleB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func newAnswerWorld(t *testing.T, answer mediator.Answer) *answerWorld {
	t.Helper()
	c := &testClock{t: time.UnixMilli(1_700_000_000_000)}
	s, err := Open(freshDir(t), Options{Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w := &answerWorld{t: t, s: s, clock: c, pr: &scriptedPrompter{answer: answer}}
	w.install(moduleA)
	w.p = mediator.NewPolicy(s, mediator.PolicyOptions{Prompter: w.pr, Now: c.now})
	return w
}

func (w *answerWorld) install(module string) {
	w.t.Helper()
	p := mediator.Profile{AgentID: "ag", Permissions: mediator.Permissions{Required: mediator.KnownPermissions()},
		Capabilities: mediator.Capabilities{NetworkAccess: true, AllowedHosts: []string{"example.com"}}}
	if err := p.Normalize(); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.s.InstallAgent(context.Background(), p, module); err != nil {
		w.t.Fatal(err)
	}
}

// post asks to POST in session (may be ""); it returns the code and how
// many prompts were shown so far.
func (w *answerWorld) post(session string) (mediator.Code, int) {
	w.t.Helper()
	op := mediator.Operation{AgentID: "ag", Name: mediator.OpNetworkFetch, Method: "POST", URL: "https://example.com/f", Host: "example.com",
		TextLength: 1, SessionID: session}
	done, err := w.p.Authorize(context.Background(), op)
	if done != nil {
		done(nil)
	}
	return mediator.CodeOf(err), w.pr.count()
}

func (w *answerWorld) prefs() []mediator.Preference {
	w.t.Helper()
	ps, err := w.s.ListPreferences(context.Background(), "")
	if err != nil {
		w.t.Fatal(err)
	}
	return ps
}

// rows counts the preference rows as stored, with nothing swept first.
func (w *answerWorld) rows() int {
	var n int
	if err := w.s.db.QueryRow(`SELECT count(*) FROM preferences`).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func (w *answerWorld) lastDecidedBy() string {
	w.t.Helper()
	page, err := w.s.ListAudit(context.Background(), 0, 1000, false)
	if err != nil {
		w.t.Fatal(err)
	}
	for i := len(page.Records) - 1; i >= 0; i-- {
		if r := page.Records[i]; r.Kind == mediator.AuditDecision {
			return r.DecidedBy
		}
	}
	return ""
}

func TestAnswerScopes(t *testing.T) {
	ok := mediator.Code("")
	cases := []struct {
		name   string
		answer mediator.Answer
		run    func(w *answerWorld)
	}{
		{"session answer holds in its session only and goes with it", mediator.AnswerAllowSession, func(w *answerWorld) {
			ctx := context.Background()
			s1, _, err := w.s.RunSession(ctx, "", "medium")
			if err != nil {
				t.Fatal(err)
			}
			if c, n := w.post(s1); c != ok || n != 1 {
				t.Fatalf("first: %q after %d prompts", c, n)
			}
			if c, n := w.post(s1); c != ok || n != 1 || !strings.HasPrefix(w.lastDecidedBy(), "pref:session:") {
				t.Fatalf("same session: %q after %d prompts, by %s", c, n, w.lastDecidedBy())
			}
			w.pr.answer = mediator.AnswerDeny
			if c, n := w.post("another"); c != mediator.CodeUserDenied || n != 2 {
				t.Fatalf("another session: %q after %d prompts; want asked and denied", c, n)
			}
			if ps := w.prefs(); len(ps) != 1 || ps[0].SessionID != s1 || ps[0].Scope != mediator.ScopeSession {
				t.Fatalf("listed %+v", ps)
			}
			if err := w.s.DeleteEphemeralSession(ctx, s1); err != nil {
				t.Fatal(err)
			}
			if n := w.rows(); n != 0 {
				t.Fatalf("%d answers left after their session was removed", n)
			}
		}},
		{"24h answer holds for a day, then is not used and is gone", mediator.AnswerAllow24h, func(w *answerWorld) {
			if c, n := w.post(""); c != ok || n != 1 {
				t.Fatalf("first: %q after %d prompts", c, n)
			}
			// The policy's clock and the store's are one here, each read
			// moving it a millisecond: the end is a day after the answer.
			day := int64(24 * time.Hour / time.Millisecond)
			if ps := w.prefs(); len(ps) != 1 || ps[0].ExpiresAt-ps[0].CreatedAt < day-10 || ps[0].ExpiresAt-ps[0].CreatedAt > day+10 {
				t.Fatalf("listed %+v", ps)
			}
			w.clock.advance(23 * time.Hour)
			if c, n := w.post(""); c != ok || n != 1 || !strings.HasPrefix(w.lastDecidedBy(), "pref:24h:") {
				t.Fatalf("after 23 h: %q after %d prompts, by %s", c, n, w.lastDecidedBy())
			}
			w.clock.advance(time.Hour)
			w.pr.answer = mediator.AnswerDeny
			if c, n := w.post(""); c != mediator.CodeUserDenied || n != 2 {
				t.Fatalf("after 24 h: %q after %d prompts; want asked again", c, n)
			}
			if n := w.rows(); n != 0 {
				t.Fatalf("the expired answer is still stored (%d rows)", n)
			}
		}},
		{"expired answers are removed on open", mediator.AnswerAllow24h, func(w *answerWorld) {
			w.post("")
			dir := w.s.Dir()
			w.s.Close()
			w.clock.advance(25 * time.Hour)
			s, err := Open(dir, Options{Now: w.clock.now})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var n int
			if err := s.db.QueryRow(`SELECT count(*) FROM preferences`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d rows after open (%v)", n, err)
			}
		}},
		{"a new module asks again", mediator.AnswerAlwaysAllow, func(w *answerWorld) {
			if c, n := w.post(""); c != ok || n != 1 {
				t.Fatalf("first: %q after %d prompts", c, n)
			}
			if ps := w.prefs(); len(ps) != 1 || ps[0].ModuleSHA256 != moduleA {
				t.Fatalf("listed %+v", ps)
			}
			if c, n := w.post(""); c != ok || n != 1 || !strings.HasPrefix(w.lastDecidedBy(), "pref:always:") {
				t.Fatalf("same module: %q after %d prompts", c, n)
			}
			w.install(moduleB)
			w.pr.answer = mediator.AnswerDeny
			if c, n := w.post(""); c != mediator.CodeUserDenied || n != 2 {
				t.Fatalf("new module: %q after %d prompts; want asked again", c, n)
			}
		}},
		{"a block is bound to the module too", mediator.AnswerAlwaysBlock, func(w *answerWorld) {
			if c, n := w.post(""); c != mediator.CodeBlockedByUser || n != 1 {
				t.Fatalf("first: %q after %d prompts", c, n)
			}
			if c, n := w.post(""); c != mediator.CodeBlockedByUser || n != 1 {
				t.Fatalf("again: %q after %d prompts", c, n)
			}
			w.install(moduleB)
			w.pr.answer = mediator.AnswerAllowOnce
			if c, n := w.post(""); c != ok || n != 2 {
				t.Fatalf("new module: %q after %d prompts; want asked again", c, n)
			}
		}},
		{"allow-and-log never asks again and records every use", mediator.AnswerAllowAndLog, func(w *answerWorld) {
			for i := range 4 {
				if c, n := w.post(""); c != ok || n != 1 {
					t.Fatalf("use %d: %q after %d prompts", i, c, n)
				}
				if by := w.lastDecidedBy(); !strings.HasPrefix(by, "pref:allow-and-log:") {
					t.Fatalf("use %d decided by %q", i, by)
				}
			}
			ps := w.prefs()
			if len(ps) != 1 || ps[0].Uses != 4 || ps[0].LastUsed == 0 {
				t.Fatalf("listed %+v", ps)
			}
			dg, err := w.s.AllowAndLogDigest(context.Background(), "ag")
			if err != nil || len(dg) != 1 || dg[0].Count != 4 || len(dg[0].Latest) != 4 || dg[0].Operation != mediator.OpNetworkFetch ||
				dg[0].Latest[0].Target != "POST https://example.com:443" || dg[0].Latest[0].AuditSeq == 0 {
				t.Fatalf("digest %+v %v", dg, err)
			}
		}},
		{"a session answer to a call with no session is refused", mediator.AnswerAllowSession, func(w *answerWorld) {
			if c, n := w.post(""); c != mediator.CodeAnswerNotOffered || n != 1 {
				t.Fatalf("%q after %d prompts; want answer_not_offered", c, n)
			}
			if req := w.pr.asked[0]; len(req.Offers) == 0 || containsAnswer(req.Offers, mediator.AnswerAllowSession) {
				t.Fatalf("offered %v", req.Offers)
			}
			if n := w.rows(); n != 0 {
				t.Fatalf("a refused answer was stored (%d rows)", n)
			}
		}},
		{"an unknown scope is refused", mediator.Answer("allow-forever"), func(w *answerWorld) {
			if c, _ := w.post("s"); c != mediator.CodeAnswerNotOffered {
				t.Fatalf("%q; want answer_not_offered", c)
			}
			if n := w.rows(); n != 0 {
				t.Fatalf("a refused answer was stored (%d rows)", n)
			}
		}},
		{"revoke asks again", mediator.AnswerAllowAndLog, func(w *answerWorld) {
			w.post("")
			ps := w.prefs()
			if ok, err := w.s.RevokePreference(context.Background(), ps[0].ID); !ok || err != nil {
				t.Fatalf("revoke: %v %v", ok, err)
			}
			w.pr.answer = mediator.AnswerDeny
			if c, n := w.post(""); c != mediator.CodeUserDenied || n != 2 {
				t.Fatalf("after revoke: %q after %d prompts", c, n)
			}
			if dg, _ := w.s.AllowAndLogDigest(context.Background(), ""); len(dg) != 0 {
				t.Fatalf("digest of a revoked answer: %+v", dg)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(newAnswerWorld(t, c.answer))
		})
	}
}

func containsAnswer(as []mediator.Answer, a mediator.Answer) bool {
	for _, x := range as {
		if x == a {
			return true
		}
	}
	return false
}

// TestOldAnswersBindToTheInstalledModule: a row written before answers
// had scopes is bound, by the migration, to the agent's code installed
// then; it keeps deciding for that code and not for the next.
func TestOldAnswersBindToTheInstalledModule(t *testing.T) {
	ctx := context.Background()
	w := newAnswerWorld(t, mediator.AnswerDeny)
	if _, err := w.s.SetPreference(ctx, mediator.Preference{AgentID: "ag", Operation: mediator.OpNetworkFetch,
		Target: "POST https://example.com:443", Answer: mediator.AnswerAlwaysAllow, ModuleSHA256: moduleA}); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before this step, as an old nmhost left it.
	for _, q := range []string{`DROP TRIGGER preference_uses_gone`, `DROP INDEX preferences_expiry`, `DROP INDEX preferences_session`,
		`ALTER TABLE preferences DROP COLUMN expires_at`, `ALTER TABLE preferences DROP COLUMN session_id`, `ALTER TABLE preferences DROP COLUMN module_sha256`,
		`PRAGMA user_version = 12`} {
		if _, err := w.s.db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dir := w.s.Dir()
	w.s.Close()
	s, err := Open(dir, Options{Now: w.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w.s = s
	w.p = mediator.NewPolicy(s, mediator.PolicyOptions{Prompter: w.pr, Now: w.clock.now})
	if ps := w.prefs(); len(ps) != 1 || ps[0].ModuleSHA256 != moduleA || ps[0].Scope != mediator.ScopeAlways {
		t.Fatalf("migrated %+v", ps)
	}
	if c, n := w.post(""); c != "" || n != 0 {
		t.Fatalf("old answer, same module: %q after %d prompts", c, n)
	}
	w.install(moduleB)
	if c, n := w.post(""); c != mediator.CodeUserDenied || n != 1 {
		t.Fatalf("old answer, new module: %q after %d prompts; want asked", c, n)
	}
}

// layerAnswer answers every layer's prompt with one answer.
type layerAnswer mediator.Answer

func (a layerAnswer) PromptLayer(context.Context, mediator.LayerPrompt) (mediator.Answer, error) {
	return mediator.Answer(a), nil
}

// TestLayerPromptRefusesWiderAnswers: a layer's prompt offers once and
// deny; any remembered answer to it is refused with answer_not_offered
// and nothing is stored, whatever prompter gave it.
func TestLayerPromptRefusesWiderAnswers(t *testing.T) {
	for _, a := range []mediator.Answer{mediator.AnswerAlwaysAllow, mediator.AnswerAllow24h, mediator.AnswerAllowAndLog,
		mediator.AnswerAllowSession, mediator.AnswerAlwaysBlock, "allow-forever"} {
		t.Run(string(a), func(t *testing.T) {
			w := newAnswerWorld(t, mediator.AnswerDeny)
			op := mediator.Operation{AgentID: "ag", Name: mediator.OpNetworkFetch, Method: "POST", URL: "https://example.com/f", Host: "example.com",
				TextLength: 1, SessionID: "s"}
			ds, err := w.p.AuthorizeLayer(context.Background(), "wf", 1, []mediator.LayerTask{{Task: "post", Op: op}}, layerAnswer(a))
			if err != nil {
				t.Fatal(err)
			}
			if d := ds[0].Decision; d.Allowed || d.Code != mediator.CodeAnswerNotOffered {
				t.Fatalf("decision %+v; want answer_not_offered", d)
			}
			if n := w.rows(); n != 0 {
				t.Fatalf("%d answers stored", n)
			}
		})
	}
}

// TestStoredAlwaysForAnOutsideReadDecidesNothing: an outside read's
// prompt offers no standing allow, so an "always allow" stored for one
// (before reads stopped offering it) asks again; a block still blocks.
func TestStoredAlwaysForAnOutsideReadDecidesNothing(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		answer mediator.Answer
		want   mediator.Code
	}{
		{mediator.AnswerAlwaysAllow, mediator.CodeConfirmRequired},
		{mediator.AnswerAllowAndLog, mediator.CodeConfirmRequired},
		{mediator.AnswerAlwaysBlock, mediator.CodeBlockedByUser},
	} {
		t.Run(string(c.answer), func(t *testing.T) {
			w := newAnswerWorld(t, mediator.AnswerDeny)
			if _, err := w.s.SetPreference(ctx, mediator.Preference{AgentID: "ag", Operation: "shell.cp", Target: `["/tmp/x"]`,
				Answer: c.answer, ModuleSHA256: moduleA}); err != nil {
				t.Fatal(err)
			}
			op := mediator.ShellOp("ag", mediator.LevelHigh, mediator.ShellStep{Command: "cp", ReadsOutside: true, Paths: []string{"/tmp/x", "x"}, Writes: true})
			d := w.p.Decide(ctx, op)
			if d.Code != c.want {
				t.Fatalf("decision %+v; want %s", d, c.want)
			}
		})
	}
}
