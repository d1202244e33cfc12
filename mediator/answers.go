package mediator

import (
	"context"
	"slices"
	"strconv"
	"time"
)

// The answers a prompt may offer beyond the first four (records.go). Each
// names its scope: how long, and for what, it is remembered.
const (
	// AnswerAllowSession allows until the run's session is removed, in
	// that session only.
	AnswerAllowSession Answer = "allow-session"
	// AnswerAllow24h allows for DayAnswerLifetime from the answer.
	AnswerAllow24h Answer = "allow-24h"
	// AnswerAllowAndLog allows without asking again, and every use is a
	// decision record of its own (decidedBy "pref:allow-and-log:ID") and
	// a line of the options page's digest.
	AnswerAllowAndLog Answer = "allow-and-log"
)

// DayAnswerLifetime is how long an allow-24h answer holds.
const DayAnswerLifetime = 24 * time.Hour

// Scope is how far a remembered answer reaches: "always", "session",
// "24h" or "allow-and-log"; "once" for an answer that is not remembered.
type Scope string

const (
	ScopeOnce        Scope = "once"
	ScopeSession     Scope = "session"
	Scope24h         Scope = "24h"
	ScopeAlways      Scope = "always"
	ScopeAllowAndLog Scope = "allow-and-log"
)

// answerScopes is every answer a prompt can carry, in the order a prompt
// shows them, with its scope; an answer not listed here is no answer.
var answerScopes = []struct {
	a Answer
	s Scope
}{
	{AnswerAllowOnce, ScopeOnce},
	{AnswerAllowSession, ScopeSession},
	{AnswerAllow24h, Scope24h},
	{AnswerAlwaysAllow, ScopeAlways},
	{AnswerAllowAndLog, ScopeAllowAndLog},
	{AnswerDeny, ScopeOnce},
	{AnswerAlwaysBlock, ScopeAlways},
}

// Scope is the answer's scope; "" for a string that is no answer.
func (a Answer) Scope() Scope {
	for _, x := range answerScopes {
		if x.a == a {
			return x.s
		}
	}
	return ""
}

// Allows reports whether the answer allows the operation.
func (a Answer) Allows() bool {
	return a == AnswerAllowOnce || a == AnswerAllowSession || a == AnswerAllow24h || a == AnswerAlwaysAllow || a == AnswerAllowAndLog
}

// Remembered reports whether the answer is stored and decides later
// operations without a prompt.
func (a Answer) Remembered() bool {
	s := a.Scope()
	return s != "" && s != ScopeOnce
}

// PromptOffers is what a prompt about op offers, in the order shown:
// every answer, but "for this session" only when the operation belongs to
// a session the answer can be bound to, and no allow that outlives the
// session (24 hours, always, allow-and-log) for a shell command that reads
// files outside the workspace: those are the person's own files, and a
// standing allow would let the agent read them again unasked long after
// the task that needed them. An answer outside the offers is refused
// (answer_not_offered), so the extension cannot widen what was asked, and
// a stored answer outside them decides nothing (Policy.facts).
func PromptOffers(op Operation) []Answer {
	outside := op.Shell != nil && op.Shell.ReadsOutside
	out := make([]Answer, 0, len(answerScopes))
	for _, x := range answerScopes {
		switch {
		case x.a == AnswerAllowSession && op.SessionID == "":
			continue
		case outside && x.a.Allows() && x.s != ScopeOnce && x.s != ScopeSession:
			continue
		}
		out = append(out, x.a)
	}
	return out
}

// LayerOffers is what a workflow layer's prompt offers: its approval
// holds for this run of this layer only, so nothing is remembered.
func LayerOffers() []Answer { return []Answer{AnswerAllowOnce, AnswerDeny} }

// PlanOffers is what a workflow plan's prompt offers: once, or always for
// this exact plan (its hash); no session, day or logged answer.
func PlanOffers() []Answer { return []Answer{AnswerAllowOnce, AnswerAlwaysAllow, AnswerDeny} }

// CheckAnswer refuses an answer that is not among offered, naming what
// was: a string that is no answer at all, and a real answer the prompt
// did not offer (a forged "always" to a layer's prompt), are both
// answer_not_offered.
func CheckAnswer(a Answer, offered []Answer) error {
	if slices.Contains(offered, a) {
		return nil
	}
	names := make([]string, len(offered))
	for i, o := range offered {
		names[i] = string(o)
	}
	if a.Scope() == "" {
		return Errorf(CodeAnswerNotOffered, "%q is not an answer; this prompt offered %v", Truncate(string(a), 32), names)
	}
	return Errorf(CodeAnswerNotOffered, "this prompt did not offer %s, only %v", a, names)
}

// Holds reports whether the remembered answer p decides op now: its
// answer is a remembered one, it has not expired, it was given for the
// agent's current code (moduleSHA, the installed module's or Python
// source's hash), and a session answer was given in op's session. A new
// module asks again; an answer that does not hold is as if there were
// none.
func (p Preference) Holds(op Operation, moduleSHA string, now time.Time) bool {
	switch {
	case p.ID == 0 || !p.Answer.Remembered():
		return false
	case p.ModuleSHA256 != moduleSHA:
		return false
	case p.ExpiresAt != 0 && now.UnixMilli() >= p.ExpiresAt:
		return false
	case p.Answer == AnswerAllow24h && p.ExpiresAt == 0:
		return false // a day's answer without its end is damaged
	case p.Answer == AnswerAllowSession && (p.SessionID == "" || p.SessionID != op.SessionID):
		return false
	}
	return true
}

// DecidedBy is the decidedBy of a decision this remembered answer made:
// "pref:SCOPE:ID" ("pref:always:7", "pref:allow-and-log:9").
func (p Preference) DecidedBy() string {
	return "pref:" + string(p.Answer.Scope()) + ":" + strconv.FormatInt(p.ID, 10)
}

// PreferenceUse is one decision a remembered answer made: its last use,
// and for allow-and-log a line of the digest.
type PreferenceUse struct {
	ID       int64  `json:"preferenceId"`
	At       int64  `json:"at"` // ms since the epoch
	Logged   bool   `json:"logged,omitempty"`
	Target   string `json:"target,omitempty"`
	AuditSeq int64  `json:"auditSeq,omitempty"`
}

// PreferenceUses is implemented by records that keep remembered answers'
// last use. NotePreferenceUse must not block on storage: the decision it
// follows is already made and recorded, and the operation should not
// wait for a bookkeeping write.
type PreferenceUses interface {
	NotePreferenceUse(u PreferenceUse)
}

// noteUse tells the records that the remembered answer behind d decided
// op (audit record seq, 0 when queued).
func (p *Policy) noteUse(op Operation, d PolicyDecision, seq int64) {
	if d.pref.ID == 0 {
		return
	}
	if u, ok := p.records.(PreferenceUses); ok {
		rule, _ := RuleFor(op)
		u.NotePreferenceUse(PreferenceUse{ID: d.pref.ID, At: p.now().UnixMilli(), Logged: d.pref.Answer == AnswerAllowAndLog,
			Target: targetKey(rule, op), AuditSeq: seq})
	}
}

func (p *Policy) now() time.Time {
	if p.opts.Now != nil {
		return p.opts.Now()
	}
	return time.Now()
}

// remember stores answer for op as decided with the agent's code at
// moduleSHA; 24 h answers end DayAnswerLifetime from now and session
// answers are bound to op's session.
func (p *Policy) remember(ctx context.Context, op Operation, operation, target string, answer Answer, moduleSHA string) (Preference, error) {
	pref := Preference{AgentID: op.AgentID, Operation: operation, Target: target, Answer: answer, ModuleSHA256: moduleSHA}
	switch answer {
	case AnswerAllow24h:
		pref.ExpiresAt = p.now().Add(DayAnswerLifetime).UnixMilli()
	case AnswerAllowSession:
		pref.SessionID = op.SessionID
	}
	return p.records.SetPreference(ctx, pref)
}
