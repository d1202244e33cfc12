package workflow

// Settings are the data dir's workflow settings (config.json, "workflow").
// The zero value is the strictest reading; DefaultSettings is what a data
// dir without them gets.
type Settings struct {
	// AutoclassifyPureOperations: a run task whose module imports nothing
	// with a side effect is pure (allowed without asking) even when the
	// task does not say so. Off, only tasks marked pure, and code steps,
	// are.
	AutoclassifyPureOperations bool `json:"autoclassifyPureOperations"`
	// ValidatePureCode: every code step's operation name and expression
	// are checked before the workflow starts (invalid_workflow). Off, a
	// bad expression fails its task when its layer runs.
	ValidatePureCode bool `json:"validatePureCode"`
	// StrictMode: a run task marked pure whose module imports a function
	// with a side effect refuses the whole workflow before anything runs
	// (not_pure). Off, the task is decided as a side-effecting one.
	StrictMode bool `json:"strictMode"`
	// Approval is how a person approves the plan's side effects: ApprovePlan
	// (one question before anything runs) or ApproveLayer (one question
	// before each layer that needs one). In both, the whole plan is
	// decided, and a refusal refuses the workflow, before anything runs.
	Approval string `json:"approval"`
	// Tools holds an approval mode by operation (network.fetch, agent.run,
	// clipboard.write, ...): ModeAuto, the policy's decision as it is, or
	// ModeAsk, a person is asked even when the policy would allow without
	// asking. Read only; a mode never loosens a refusal.
	Tools map[string]string `json:"tools,omitempty"`
}

// Approval settings and approval modes.
const (
	ApprovePlan  = "plan"
	ApproveLayer = "layer"
	ModeAuto     = "auto"
	ModeAsk      = "ask"
)

// DefaultSettings has the three switches on and approves plans whole.
func DefaultSettings() Settings {
	return Settings{AutoclassifyPureOperations: true, ValidatePureCode: true, StrictMode: true, Approval: ApprovePlan}
}

// asks reports whether op's approval mode asks a person. An unknown mode
// asks: a misspelt setting errs on the side of a question.
func (s Settings) asks(op string) bool {
	m, ok := s.Tools[op]
	return ok && m != ModeAuto
}
