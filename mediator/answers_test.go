package mediator

import (
	"slices"
	"testing"
	"time"
)

func TestPreferenceHolds(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	const code = "c0de"
	op := Operation{AgentID: "a", SessionID: "s1"}
	base := Preference{ID: 1, AgentID: "a", ModuleSHA256: code}
	with := func(f func(*Preference)) Preference { p := base; f(&p); return p }
	cases := []struct {
		name string
		p    Preference
		op   Operation
		code string
		want bool
	}{
		{"always, same code", with(func(p *Preference) { p.Answer = AnswerAlwaysAllow }), op, code, true},
		{"always, other code", with(func(p *Preference) { p.Answer = AnswerAlwaysAllow }), op, "other", false},
		{"always, agent now without code", with(func(p *Preference) { p.Answer = AnswerAlwaysAllow }), op, "", false},
		{"block, other code", with(func(p *Preference) { p.Answer = AnswerAlwaysBlock }), op, "other", false},
		{"24h before its end", with(func(p *Preference) { p.Answer, p.ExpiresAt = AnswerAllow24h, now.UnixMilli()+1 }), op, code, true},
		{"24h at its end", with(func(p *Preference) { p.Answer, p.ExpiresAt = AnswerAllow24h, now.UnixMilli() }), op, code, false},
		{"24h with no end is damaged", with(func(p *Preference) { p.Answer = AnswerAllow24h }), op, code, false},
		{"session, same session", with(func(p *Preference) { p.Answer, p.SessionID = AnswerAllowSession, "s1" }), op, code, true},
		{"session, other session", with(func(p *Preference) { p.Answer, p.SessionID = AnswerAllowSession, "s2" }), op, code, false},
		{"session, call without a session", with(func(p *Preference) { p.Answer, p.SessionID = AnswerAllowSession, "s1" }), Operation{AgentID: "a"}, code, false},
		{"session answer without its session", with(func(p *Preference) { p.Answer = AnswerAllowSession }), Operation{AgentID: "a"}, code, false},
		{"allow-and-log", with(func(p *Preference) { p.Answer = AnswerAllowAndLog }), op, code, true},
		{"allow-once is never remembered", with(func(p *Preference) { p.Answer = AnswerAllowOnce }), op, code, false},
		{"damaged answer", with(func(p *Preference) { p.Answer = "always-allow-ish" }), op, code, false},
		{"no id", Preference{Answer: AnswerAlwaysAllow, ModuleSHA256: code}, op, code, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.Holds(c.op, c.code, now); got != c.want {
				t.Fatalf("Holds = %v, want %v", got, c.want)
			}
		})
	}
}

func TestCheckAnswerRefusesWhatWasNotOffered(t *testing.T) {
	cases := []struct {
		name    string
		answer  Answer
		offered []Answer
		ok      bool
	}{
		{"offered", AnswerAllow24h, PromptOffers(Operation{}), true},
		{"session offered in a session", AnswerAllowSession, PromptOffers(Operation{SessionID: "s"}), true},
		{"session without a session", AnswerAllowSession, PromptOffers(Operation{}), false},
		{"always to a layer", AnswerAlwaysAllow, LayerOffers(), false},
		{"24h to a plan", AnswerAllow24h, PlanOffers(), false},
		{"allow-and-log to a plan", AnswerAllowAndLog, PlanOffers(), false},
		{"block to a plan", AnswerAlwaysBlock, PlanOffers(), false},
		{"unknown scope", "allow-forever", PromptOffers(Operation{SessionID: "s"}), false},
		{"case variant", "Allow-Once", PromptOffers(Operation{}), false},
		{"empty", "", PromptOffers(Operation{}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckAnswer(c.answer, c.offered)
			if (err == nil) != c.ok || (err != nil && CodeOf(err) != CodeAnswerNotOffered) {
				t.Fatalf("CheckAnswer(%q) = %v", c.answer, err)
			}
		})
	}
}

func TestAnswerScopesAndNames(t *testing.T) {
	if got := PromptOffers(Operation{SessionID: "s"}); !slices.Equal(got, []Answer{AnswerAllowOnce, AnswerAllowSession, AnswerAllow24h,
		AnswerAlwaysAllow, AnswerAllowAndLog, AnswerDeny, AnswerAlwaysBlock}) {
		t.Fatalf("offers %v", got)
	}
	for _, c := range []struct {
		a          Answer
		scope      Scope
		allows     bool
		remembered bool
		by         string
	}{
		{AnswerAllowOnce, ScopeOnce, true, false, ""},
		{AnswerAllowSession, ScopeSession, true, true, "pref:session:3"},
		{AnswerAllow24h, Scope24h, true, true, "pref:24h:3"},
		{AnswerAlwaysAllow, ScopeAlways, true, true, "pref:always:3"},
		{AnswerAllowAndLog, ScopeAllowAndLog, true, true, "pref:allow-and-log:3"},
		{AnswerDeny, ScopeOnce, false, false, ""},
		{AnswerAlwaysBlock, ScopeAlways, false, true, "pref:always:3"},
		{"nonsense", "", false, false, ""},
	} {
		t.Run(string(c.a), func(t *testing.T) {
			if c.a.Scope() != c.scope || c.a.Allows() != c.allows || c.a.Remembered() != c.remembered {
				t.Fatalf("scope %q allows %v remembered %v", c.a.Scope(), c.a.Allows(), c.a.Remembered())
			}
			if c.remembered {
				if by := (Preference{ID: 3, Answer: c.a}).DecidedBy(); by != c.by {
					t.Fatalf("decidedBy %q, want %q", by, c.by)
				}
			}
		})
	}
}

func TestOutsideReadsOfferNoStandingAllow(t *testing.T) {
	read := Operation{AgentID: "a", Name: OpShellPrefix + "cp", SessionID: "s", Shell: &ShellStep{Command: "cp", ReadsOutside: true, Paths: []string{"/tmp/x", "x"}}}
	if got := PromptOffers(read); !slices.Equal(got, []Answer{AnswerAllowOnce, AnswerAllowSession, AnswerDeny, AnswerAlwaysBlock}) {
		t.Fatalf("an outside read offered %v", got)
	}
	for _, a := range []Answer{AnswerAllow24h, AnswerAlwaysAllow, AnswerAllowAndLog} {
		if err := CheckAnswer(a, PromptOffers(read)); CodeOf(err) != CodeAnswerNotOffered {
			t.Errorf("%s to an outside read: %v", a, err)
		}
	}
	inside := read
	inside.Shell = &ShellStep{Command: "cp"}
	if got := PromptOffers(inside); len(got) != 7 {
		t.Fatalf("a workspace command offered %v", got)
	}
}
