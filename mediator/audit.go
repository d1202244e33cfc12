package mediator

// Audit record kinds: a decision is appended before the operation runs,
// its outcome as a second record after; nothing is ever updated.
const (
	AuditDecision = "decision"
	AuditExecuted = "executed"
	// AuditUninstall records that an agent was removed together with its
	// grants and remembered answers.
	AuditUninstall = "uninstall"
	// AuditAggregated is one run's calls of an aggregated operation
	// (OperationRule.Aggregate) in one record, written when the run ends:
	// Aggregate says how many, how many bytes, a hash of their contents
	// and when (audit_level.go).
	AuditAggregated = "aggregate"
)

// OpAgentUninstall names the operation of an AuditUninstall record.
const OpAgentUninstall = "agent.uninstall"

// AuditRecord is one link of the audit chain. It names targets, never
// contents: page text and clipboard data appear only as a length.
type AuditRecord struct {
	Seq  int64  `json:"seq"`
	TS   int64  `json:"ts"` // ms since the epoch; the time inside the hashed record
	Prev string `json:"prev"`
	Hash string `json:"hash"`
	AuditEntry
}

// AuditEntry is what the caller appends; the chain adds seq, time and hashes.
type AuditEntry struct {
	Kind      string      `json:"kind"`
	Operation Operation   `json:"operation"`
	Class     SafetyClass `json:"class,omitempty"`
	Allowed   bool        `json:"allowed"`
	Code      Code        `json:"code,omitempty"`
	DecidedBy string      `json:"decidedBy,omitempty"`
	Reason    string      `json:"reason,omitempty"`
	Ref       int64       `json:"ref,omitempty"`   // executed: the decision's seq
	Error     string      `json:"error,omitempty"` // executed: why it failed
	// Aggregate is set on an AuditAggregated record only.
	Aggregate *AuditAggregate `json:"aggregate,omitempty"`
}
