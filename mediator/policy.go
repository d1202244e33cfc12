package mediator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// PolicyDecision is the policy's answer for one operation, with a reason
// code and what decided it. The zero value denies.
type PolicyDecision struct {
	Allowed        bool        `json:"allowed"`
	RequiresPrompt bool        `json:"requiresPrompt"`
	Level          SafetyClass `json:"level"`
	Reason         string      `json:"reason"`
	AlwaysAllow    bool        `json:"alwaysAllow"`
	Code           Code        `json:"code"`
	// DecidedBy names the rule or record that decided: "grant:PERM" for a
	// missing grant, "capability:NAME", "level:LEVEL", "pref:SCOPE:ID" (a
	// remembered answer, Preference.DecidedBy), "class:CLASS",
	// "prompt:ANSWER".
	DecidedBy string `json:"decidedBy"`
	// PermissionSet is the agent's set when its profile names one: the
	// prompt shows it beside the permission.
	PermissionSet PermissionSet `json:"permissionSet,omitempty"`

	// pref is the remembered answer that decided (ID 0: none), whose
	// use Authorize notes; moduleSHA the agent's code a new answer is
	// bound to.
	pref      Preference
	moduleSHA string
}

// PromptRequest is what a Prompter shows the user. It carries the
// operation's targets and lengths, never page text or clipboard contents.
type PromptRequest struct {
	Op     Operation
	Class  SafetyClass
	Reason string
	// Target is what an "always" answer would be remembered for
	// (TargetKey: "POST https://api.example.com:443", a page's origin);
	// "" when the operation has no target. The prompt shows it, so the
	// person sees the reach of "always allow" before choosing it.
	Target  string
	Timeout time.Duration
	// PermissionSet is the agent's set, shown beside the permission so
	// the person sees the ceiling as well as the one grant in play.
	PermissionSet PermissionSet
	// Offers is what the prompt offers (PromptOffers); an answer outside
	// it is refused with answer_not_offered.
	Offers []Answer
}

// Prompter asks the user about one operation. An error denies, and so
// does an answer outside req.Offers (answer_not_offered).
type Prompter interface {
	Prompt(ctx context.Context, req PromptRequest) (Answer, error)
}

// PolicyOptions configures a Policy. The zero value never prompts:
// operations that need confirmation are denied with confirmation_required.
type PolicyOptions struct {
	// Prompter asks the user; nil denies what needs confirmation.
	Prompter Prompter
	// Admin is the administrator's rules (AdminPolicy), applied before
	// the person's grants and answers; nil: none.
	Admin func() Admin
	// PromptTimeout is how long a prompt waits before it counts as deny.
	// Default 60 s: long enough to read a prompt, short enough that an
	// agent does not sit on a forgotten one.
	PromptTimeout time.Duration
	// Now is the clock remembered answers' ends are read by; nil:
	// time.Now.
	Now func() time.Time
}

// DefaultPromptTimeout is PolicyOptions.PromptTimeout's default.
const DefaultPromptTimeout = 60 * time.Second

// decisionFacts is what one decision reads from the records.
type decisionFacts struct {
	granted bool
	revoked bool
	// workspace is what the grants give of the workspace; wsRevoked the
	// workspace permissions the user took back.
	workspace WorkspaceAccess
	wsRevoked []Permission
	caps      Capabilities
	set       SetChoice  // Set "": the profile names none (bounded at link time instead)
	pref      Preference // ID 0: none that applies
	audit     AuditRequest
	moduleSHA string // the agent's installed code
}

// facts reads the grant, the profile's capabilities and the remembered
// answer in one call to the records; the parsed capabilities are cached per
// agent and reused while the stored profile text is unchanged (another
// process may re-install the agent at any time, so the text is compared
// every call).
func (p *Policy) facts(ctx context.Context, op Operation, rule OperationRule, target string) (decisionFacts, error) {
	agentID := op.AgentID
	if err := ValidAgentID(agentID); err != nil {
		return decisionFacts{}, Errorf(CodeUnknownAgent, "no agent %q is installed", Truncate(agentID, 64))
	}
	raw, err := p.records.DecisionFacts(ctx, agentID, rule.Permission, rule.Name, target)
	if err != nil {
		return decisionFacts{}, err
	}
	f := decisionFacts{granted: raw.Granted, revoked: raw.Revoked, workspace: raw.Workspace, wsRevoked: raw.WorkspaceRevoked,
		moduleSHA: raw.ModuleSHA256}
	if pr := raw.Preference; pr.Holds(op, raw.ModuleSHA256, p.now()) && CheckAnswer(pr.Answer, PromptOffers(op)) == nil {
		// An answer this operation's prompt would not offer (an "always"
		// stored for an outside read before such reads stopped offering
		// it) decides nothing.
		f.pref = pr
	}
	p.mu.Lock()
	c, ok := p.caps[agentID]
	p.mu.Unlock()
	if ok && c.profile == raw.ProfileJSON {
		f.caps, f.set, f.audit = c.caps, c.set, c.audit
		return f, nil
	}
	var prof Profile
	// decode: the store's own normalised profile, written by json.Marshal
	// after ParseProfile read the untrusted one exactly.
	if err := json.Unmarshal([]byte(raw.ProfileJSON), &prof); err != nil {
		return decisionFacts{}, &Error{Code: CodeInternal, Msg: "stored profile of " + agentID + " is unreadable", Err: err}
	}
	f.caps = prof.Capabilities
	if prof.Audit != nil {
		f.audit = *prof.Audit
	}
	if prof.PermissionSet != "" {
		f.set = DeterminePermissionSet(prof, SetInference{})
	}
	p.mu.Lock()
	if len(p.caps) >= maxCachedProfiles {
		clear(p.caps)
	}
	p.caps[agentID] = cachedCaps{profile: raw.ProfileJSON, caps: f.caps, set: f.set, audit: f.audit}
	p.mu.Unlock()
	return f, nil
}

// maxCachedProfiles bounds the capabilities cache; past it the cache starts
// over, which costs one JSON parse per agent.
const maxCachedProfiles = 1024

type cachedCaps struct {
	profile string
	caps    Capabilities
	set     SetChoice
	audit   AuditRequest
}

// Policy decides every operation an agent makes: grants and capabilities
// first, then the session level, remembered answers, and the safety class.
// It implements Authorizer.
type Policy struct {
	records PolicyRecords
	opts    PolicyOptions
	mu      sync.Mutex
	caps    map[string]cachedCaps
}

// NewPolicy returns the policy over the records r (the store).
func NewPolicy(r PolicyRecords, opts PolicyOptions) *Policy {
	if opts.PromptTimeout <= 0 {
		opts.PromptTimeout = DefaultPromptTimeout
	}
	return &Policy{records: r, opts: opts, caps: map[string]cachedCaps{}}
}

func denied(class SafetyClass, code Code, by, reason string) PolicyDecision {
	if code == "" || code == CodeAllowed {
		code = CodeInternal
	}
	return PolicyDecision{Level: class, Code: code, DecidedBy: by, Reason: reason}
}

// Decide returns the decision for op without prompting or writing. The
// same op against the same grants and preferences always gets the same
// decision.
func (p *Policy) Decide(ctx context.Context, op Operation) PolicyDecision {
	return p.decide(ctx, op, nil)
}

// decide is Decide; when audit is not nil it receives what the agent's
// profile asks of the audit trail, read with the decision's facts.
func (p *Policy) decide(ctx context.Context, op Operation, audit *AuditRequest) PolicyDecision {
	rule, known := RuleFor(op)
	if !known && op.Name == OpNetworkFetch {
		// Refused here, before any prompt, so it can never be remembered
		// as "always allow" either.
		return denied(AlwaysConfirm, CodeMethodNotAllowed, "class:"+string(AlwaysConfirm),
			fmt.Sprintf("method %q is not one an agent's fetch may use (%s)", Truncate(op.Method, 32), strings.Join(FetchMethods(), ", ")))
	}
	if cmd, isShell := strings.CutPrefix(op.Name, OpShellPrefix); !known && isShell {
		return denied(AlwaysConfirm, CodeShellNotAllowed, "shell:"+Truncate(cmd, 32), DecideShell(op.SessionLevel, ShellStep{Command: cmd}).Reason)
	}
	if op.Name == OpShellProgram && op.Shell != nil {
		// A program is refused by the session matrix before anything
		// else, as a command outside the shell is: shell_not_allowed
		// below high, sandbox_unavailable where there is no sandbox.
		if d := DecideShell(op.SessionLevel, *op.Shell); !d.Allowed {
			return denied(AlwaysConfirm, d.Code, "shell:"+Truncate(op.Shell.Command, 32), d.Reason)
		}
	}
	if !known {
		return denied(AlwaysConfirm, CodeUnknownPermission, "class:"+string(AlwaysConfirm),
			fmt.Sprintf("operation %q is not known", Truncate(op.Name, 64)))
	}
	if d, ok := toolDenial(op, rule); !ok {
		return d
	}
	if d, ok := p.adminDenial(op, rule); !ok {
		return d
	}
	if op.Permission != "" && op.Permission != rule.Permission {
		return denied(rule.Class, CodeBadRequest, "grant:"+string(rule.Permission),
			fmt.Sprintf("operation %s needs %s, not %s", op.Name, rule.Permission, Truncate(string(op.Permission), 64)))
	}
	if rule.Name == OpNetworkFetch && rule.ReadOnly && op.TextLength > 0 {
		// A safe method is safe because it sends nothing; with a body it
		// would carry data out without a prompt.
		return denied(rule.Class, CodeBodyNotAllowed, "class:"+string(rule.Class),
			fmt.Sprintf("a %s request carries no body (this one has %d bytes); use POST or PUT", rule.Method, op.TextLength))
	}
	f, err := p.facts(ctx, op, rule, targetKey(rule, op))
	if err != nil {
		return denied(rule.Class, CodeOf(err), "grant:"+string(rule.Permission), MessageOf(err))
	}
	if audit != nil {
		*audit = f.audit
	}
	if d, ok := grantDenial(op, rule, f); !ok {
		return d
	}
	if d, ok := capabilityDenial(op, rule, f.caps); !ok {
		return d
	}
	level, err := ParseLevel(op.SessionLevel)
	if err != nil {
		return denied(rule.Class, CodeInvalidLevel, "level:"+Truncate(op.SessionLevel, 16), MessageOf(err))
	}
	if rule.MinLevel != "" && levelRank[level] < levelRank[rule.MinLevel] {
		return denied(rule.Class, CodeSessionLevel, "level:"+level,
			fmt.Sprintf("permission denied: %s needs a %s or higher session; this one is %s", op.Name, rule.MinLevel, level))
	}
	if level == LevelLow && (rule.Class != AlwaysSafe || !rule.StaysLocal) {
		return denied(rule.Class, CodeSessionLevel, "level:low",
			fmt.Sprintf("a low-level session only runs safe operations that stay on this machine; %s %s", op.Name, rule.Why))
	}
	if d, ok := shellDenial(op, rule, level); !ok {
		return d
	}
	pref := f.pref
	switch {
	case pref.ID != 0 && pref.Answer == AnswerAlwaysBlock:
		d := denied(rule.Class, CodeBlockedByUser, pref.DecidedBy(), "you chose to always block this")
		d.pref = pref
		return d
	case pref.ID != 0 && pref.Answer.Allows():
		return PolicyDecision{Allowed: true, Level: rule.Class, Code: CodeAllowed, DecidedBy: pref.DecidedBy(), AlwaysAllow: pref.Answer == AnswerAlwaysAllow,
			Reason: rememberedReason[pref.Answer], pref: pref}
	}
	switch {
	case rule.Class == AlwaysSafe:
		return PolicyDecision{Allowed: true, Level: rule.Class, Code: CodeAllowed, DecidedBy: decidedBySafeClass,
			Reason: "safe: it " + rule.Why}
	case rule.Class == RequiresConfirmation && level == LevelHigh:
		return PolicyDecision{Allowed: true, Level: rule.Class, Code: CodeAllowed, DecidedBy: "level:high",
			Reason: "a high-level session runs granted operations that need confirmation without asking"}
	}
	return PolicyDecision{RequiresPrompt: true, Level: rule.Class, Code: CodeConfirmRequired,
		DecidedBy: "class:" + string(rule.Class), Reason: "it " + rule.Why, PermissionSet: f.set.Set, moduleSHA: f.moduleSHA}
}

// rememberedReason is what a decision by a remembered allow says.
var rememberedReason = map[Answer]string{
	AnswerAlwaysAllow:  "you chose to always allow this",
	AnswerAllowSession: "you allowed this for this session",
	AnswerAllow24h:     "you allowed this for 24 hours",
	AnswerAllowAndLog:  "you chose to allow this and log every use",
}

// Authorize decides op, asks the user when the decision says so, and
// records the decision in the audit trail before returning. A denial is
// also written to the denial log, naming the decision's record. On success
// the caller runs the operation and calls done with its outcome, which
// appends the "executed" record.
//
// Durability: the decision is on disk when Authorize returns. Through
// WithBarrier, a local-only operation's (OperationRule.LocalOnly)
// decision is queued for the next group commit when the records queue
// (AuditQueue), and the run's barrier waits for it before the run's
// result is reported; under a barrier the "executed" record is queued
// too.
func (p *Policy) Authorize(ctx context.Context, op Operation) (func(error), error) {
	return p.authorize(ctx, op, nil)
}

func (p *Policy) authorize(ctx context.Context, op Operation, bar *AuditBarrier) (func(error), error) {
	var version uint64
	versioned := false
	if vr, ok := p.records.(FactsVersioner); ok && bar != nil && !bar.audit.PerCall {
		if version, versioned = vr.FactsVersion(); versioned {
			if rule, ok := bar.memo.get(&op, version); ok {
				if _, pass := p.adminDenial(op, rule); pass {
					return bar.agg.add(&op).done, nil
				}
			}
		}
	}
	// A function of its own: its closures keep op on the heap, and the
	// memo's path above should not pay for that.
	return p.decideAndRecord(ctx, op, bar, version, versioned)
}

// decideAndRecord is authorize past the run's memo: decide, ask, record.
func (p *Policy) decideAndRecord(ctx context.Context, op Operation, bar *AuditBarrier, version uint64, versioned bool) (func(error), error) {
	var asked AuditRequest
	d := p.decide(ctx, op, &asked)
	if d.RequiresPrompt {
		d = p.prompt(ctx, op, d)
	}
	allowed := d.Allowed && d.Code == CodeAllowed
	queue, _ := p.records.(AuditQueue)
	if queue == nil {
		bar = nil
	}
	syncer, _ := p.records.(AuditSyncer)
	// The strict durability: the host's (its store fsyncs every commit),
	// the run's, or the profile's; it only ever adds waiting.
	strict := syncer != nil && (asked.Strict() || bar != nil && bar.audit.Strict)
	rule, _ := RuleFor(op)
	if bar != nil {
		bar.use(queue, syncer)
		if allowed && rule.Aggregate && d.DecidedBy == decidedBySafeClass && !asked.PerCall() && !bar.audit.PerCall {
			// Decided by the class alone, as every such call of the
			// run is: counted into the run's one record (Wait writes it).
			if versioned {
				bar.memo.set(&op, version, rule)
			}
			return bar.agg.add(&op).done, nil
		}
	}
	entry := AuditEntry{Kind: AuditDecision, Operation: op, Class: d.Level, Allowed: d.Allowed,
		Code: d.Code, DecidedBy: d.DecidedBy, Reason: d.Reason}
	executed := func(result error) AuditEntry {
		e := AuditEntry{Kind: AuditExecuted, Operation: op, Class: d.Level, Allowed: true}
		if result != nil {
			e.Code, e.Error = CodeOf(result), Truncate(MessageOf(result), MaxDenialReasonBytes)
		}
		return e
	}
	if allowed && bar != nil && trailsItsCall(op, rule) {
		// Nothing leaves the host before the run reports, and the run
		// reports only after its barrier: the record may trail the call.
		t := queue.EnqueueAudit(ctx, entry, nil)
		bar.add(t)
		p.noteUse(op, d, 0)
		return func(result error) {
			bar.add(queue.EnqueueAudit(context.WithoutCancel(ctx), executed(result), t))
		}, nil
	}
	rec, err := p.records.AppendAudit(ctx, entry)
	if err != nil {
		// No record, no operation: the trail must hold every decision.
		return nil, fmt.Errorf("agent[%s] op[%s]: %w", op.AgentID, op.Name, err)
	}
	p.noteUse(op, d, rec.Seq)
	if !allowed {
		p.logDenial(ctx, op, d, rec.Seq)
		return nil, Recorded(fmt.Errorf("agent[%s] op[%s]: %w", op.AgentID, op.Name, Errorf(codeOrInternal(d.Code), "%s", d.Reason)))
	}
	if strict {
		if err := syncer.SyncAudit(ctx, rec.Seq); err != nil {
			return nil, fmt.Errorf("agent[%s] op[%s]: %w", op.AgentID, op.Name, err)
		}
	}
	return func(result error) {
		e := executed(result)
		e.Ref = rec.Seq
		if bar != nil {
			bar.add(queue.EnqueueAudit(context.WithoutCancel(ctx), e, nil))
			return
		}
		if queue != nil {
			// The operation has run: its outcome is written in turn,
			// before any record queued after it, and nobody waits for
			// it. A reply is not held back by a second commit; a crash
			// in that instant loses the outcome, never the decision.
			queue.EnqueueAudit(context.WithoutCancel(ctx), e, nil)
			return
		}
		_, _ = p.records.AppendAudit(context.WithoutCancel(ctx), e)
	}, nil
}

// prompt asks the user and turns the answer into a decision; "always"
// answers are stored first, so they hold even if the operation then fails.
func (p *Policy) prompt(ctx context.Context, op Operation, d PolicyDecision) PolicyDecision {
	if p.opts.Prompter == nil {
		d.Code, d.Reason = CodeConfirmRequired, "it needs your confirmation and nobody can be asked: "+d.Reason
		d.RequiresPrompt = false
		return d
	}
	rule, _ := RuleFor(op)
	// The run's executionTimeout stands still while the person decides
	// (RunClock): the prompt has its own PromptTimeout.
	defer PauseRun(ctx)()
	pctx, cancel := context.WithTimeout(ctx, p.opts.PromptTimeout)
	defer cancel()
	offers := PromptOffers(op)
	answer, err := p.opts.Prompter.Prompt(pctx, PromptRequest{Op: op, Class: d.Level, Reason: d.Reason, Target: targetKey(rule, op),
		Timeout: p.opts.PromptTimeout, PermissionSet: d.PermissionSet, Offers: offers})
	d.RequiresPrompt = false
	if err == nil {
		// The prompter checks too; this holds for every prompter.
		err = CheckAnswer(answer, offers)
	}
	if err != nil {
		d.Code, d.DecidedBy = CodePromptTimeout, "prompt:timeout"
		d.Reason = fmt.Sprintf("the prompt went unanswered for %v, so it counts as deny; run the agent again to be asked again", p.opts.PromptTimeout)
		if c := CodeOf(err); c == CodePromptCancelled {
			// Withdrawn: the run it was for ended first.
			d.Code, d.DecidedBy, d.Reason = c, "prompt:cancelled", MessageOf(err)
		} else if c != CodeTimeout && !errors.Is(err, context.DeadlineExceeded) {
			d.Code, d.DecidedBy, d.Reason = codeOrInternal(c), "prompt:error", "the prompt failed: "+MessageOf(err)
		}
		return d
	}
	d.DecidedBy = "prompt:" + string(answer)
	if answer.Remembered() {
		pref, err := p.remember(ctx, op, rule.Name, targetKey(rule, op), answer, d.moduleSHA)
		if err != nil {
			d.Code, d.Reason = CodeOf(err), "your answer could not be stored: "+MessageOf(err)
			return d
		}
		d.DecidedBy = pref.DecidedBy()
		if answer == AnswerAllowAndLog {
			// Its first use is this one: the digest counts it.
			d.pref = pref
		}
	}
	switch {
	case answer.Allows():
		d.Allowed, d.Code, d.AlwaysAllow = true, CodeAllowed, answer == AnswerAlwaysAllow
		d.Reason = "you allowed it"
	case answer == AnswerAlwaysBlock:
		d.Code, d.Reason = CodeBlockedByUser, "you chose to always block this"
	default:
		d.Code, d.Reason = CodeUserDenied, "you denied it"
	}
	return d
}

func (p *Policy) logDenial(ctx context.Context, op Operation, d PolicyDecision, auditSeq int64) {
	perm := op.Permission
	if rule, ok := RuleFor(op); ok {
		perm = rule.Permission
	}
	details := map[string]string{"operation": op.Name, "decidedBy": d.DecidedBy}
	if op.Origin != "" {
		details["pageOrigin"] = op.Origin
	}
	if op.Selector != "" {
		details["selector"] = op.Selector
	}
	_, _ = p.records.LogDenial(context.WithoutCancel(ctx), Denial{
		AgentID: op.AgentID, Permission: string(perm), Code: codeOrInternal(d.Code), AuditSeq: auditSeq,
		Context: DenialContext{URL: op.URL, Reason: d.Reason, Method: op.Method, Layer: "policy", Details: details},
	})
}

func codeOrInternal(c Code) Code {
	if c == "" || c == CodeAllowed {
		return CodeInternal
	}
	return c
}

// trailsItsCall reports whether op's decision record may become durable
// after op runs (under a run's barrier): only an operation that reads and
// stays on the machine. A shell step is judged by what it does, not by
// its command's row: "echo x > f" writes a file, which outlives a crash
// of the host, so its record must be written (on disk, under strict)
// before the file is.
func trailsItsCall(op Operation, rule OperationRule) bool {
	return rule.LocalOnly() && (op.Shell == nil || !op.Shell.Writes && !op.Shell.WritesOutside)
}
