package mediator

import (
	"fmt"
	"sort"
)

// Denial is one record of the denial log: every denial, from any layer, is
// one of these, written before the reply that reports it is sent.
type Denial struct {
	ID         int64         `json:"id"`         // assigned by the store; increases with time of writing
	AgentID    string        `json:"agentId"`    // may be an unknown or invalid id, recorded as given (bounded)
	Permission string        `json:"permission"` // the permission the call needed, e.g. "network.fetch"
	Timestamp  int64         `json:"timestamp"`  // ms since the Unix epoch
	Code       Code          `json:"code"`
	Context    DenialContext `json:"context"`
	// AuditSeq is the audit record of the decision behind the denial: every
	// denial is a decision, and every decision is in the audit trail. The
	// store fills it; a caller that already appended the decision (the
	// policy) passes that record's seq.
	AuditSeq int64 `json:"auditSeq,omitempty"`
}

// DenialContext says what was refused and why.
type DenialContext struct {
	URL     string            `json:"url,omitempty"`    // the refused URL, redirect hop included
	Reason  string            `json:"reason"`           // a sentence for people
	Layer   string            `json:"layer,omitempty"`  // who refused: "host" (this process) or "extension"
	Method  string            `json:"method,omitempty"` // HTTP method or API function
	Origin  string            `json:"origin,omitempty"` // the caller origin of the host process
	Details map[string]string `json:"details,omitempty"`
}

// AuditEntry is the decision record of a denial decided outside the policy
// (grant, capability, ACL, request checks, link time, the extension): the
// operation, agent, permission, code, what decided and why. decidedBy is
// Details["decidedBy"] when the deciding layer names its rule
// ("grant:network.fetch", "acl:allowedHosts"); a link-time refusal names its
// import ("link:IMPORT"); otherwise the layer. What the extension reports
// is always marked "extension", so it can never pass for a rule of the host.
func (d Denial) AuditEntry() AuditEntry {
	c := d.Context
	by := c.Details["decidedBy"]
	switch {
	case c.Layer == "extension" && by != "":
		by = "extension:" + by
	case c.Layer == "extension":
		by = "extension"
	case by == "" && c.Layer == "link" && c.Details["import"] != "":
		by = "link:" + c.Details["import"]
	case by == "" && c.Layer != "":
		by = c.Layer
	case by == "":
		by = "host"
	}
	name := c.Details["operation"]
	if name == "" {
		name = d.Permission
	}
	op := Operation{AgentID: d.AgentID, Permission: Permission(d.Permission), Name: Truncate(name, MaxDenialShortBytes),
		Method: c.Method, URL: c.URL, Origin: c.Details["pageOrigin"], Selector: c.Details["selector"]}
	e := AuditEntry{Kind: AuditDecision, Operation: op, Code: codeOrInternal(d.Code),
		DecidedBy: Truncate(by, MaxDenialShortBytes), Reason: c.Reason}
	if rule, ok := RuleFor(op); ok && rule.Permission == op.Permission {
		e.Class = rule.Class
	}
	return e
}

// Bounds applied to denial records. LogDenial truncates to them, never
// rejects: a denial must always be recorded.
const (
	MaxDenialAgentIDBytes    = 128
	MaxDenialPermissionBytes = 64
	MaxDenialCodeBytes       = 64
	MaxDenialURLBytes        = 2048
	MaxDenialReasonBytes     = 1024
	MaxDenialShortBytes      = 256 // layer, method, origin
	MaxDenialDetailKeys      = 16
	MaxDenialDetailKeyBytes  = 64
	MaxDenialDetailValBytes  = 512
)

// Bounded returns d with every field truncated to its bound and makes all text
// valid UTF-8, so that the record is always storable and displayable.
func (d Denial) Bounded() Denial {
	d.ID = 0
	d.AgentID = Truncate(d.AgentID, MaxDenialAgentIDBytes)
	d.Permission = Truncate(d.Permission, MaxDenialPermissionBytes)
	d.Code = Code(Truncate(string(d.Code), MaxDenialCodeBytes))
	if d.Code == "" {
		d.Code = CodeInternal
	}
	c := &d.Context
	c.URL = Truncate(c.URL, MaxDenialURLBytes)
	c.Reason = Truncate(c.Reason, MaxDenialReasonBytes)
	c.Layer = Truncate(c.Layer, MaxDenialShortBytes)
	c.Method = Truncate(c.Method, MaxDenialShortBytes)
	c.Origin = Truncate(c.Origin, MaxDenialShortBytes)
	if len(c.Details) > 0 {
		keys := make([]string, 0, len(c.Details))
		for k := range c.Details {
			keys = append(keys, k)
		}
		sort.Strings(keys) // keep a deterministic subset
		out := make(map[string]string, min(len(keys), MaxDenialDetailKeys))
		dropped := 0
		for _, k := range keys {
			ck := Truncate(k, MaxDenialDetailKeyBytes)
			if _, dup := out[ck]; dup || len(out) >= MaxDenialDetailKeys-1 && len(keys) > MaxDenialDetailKeys {
				dropped++
				continue
			}
			out[ck] = Truncate(c.Details[k], MaxDenialDetailValBytes)
		}
		if dropped > 0 {
			// The last slot says that something was cut, so nobody reads a
			// partial record as the whole story.
			out["_truncated"] = fmt.Sprintf("%d more detail keys dropped", dropped)
		}
		c.Details = out
	}
	return d
}
