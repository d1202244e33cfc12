package mediator

import (
	"context"
	"fmt"
)

// Grant sources.
const (
	SourceInstall = "install" // granted because permissions.required asked for it at installation
	SourceUser    = "user"    // granted by the user afterwards
)

// AgentRecord is an installed agent as the store holds it.
type AgentRecord struct {
	Profile      Profile `json:"profile"`
	ModuleSHA256 string  `json:"moduleSha256,omitempty"`
	InstalledAt  int64   `json:"installedAt"` // ms since the epoch; kept across re-installs
	UpdatedAt    int64   `json:"updatedAt"`   // ms since the epoch; the last (re-)install
	Grants       []Grant `json:"grants"`
	// Revoked lists the permissions the user revoked and has not granted
	// again: the runtime refuses their imports with revoked_by_user, and
	// the options page shows them.
	Revoked []Permission `json:"revoked,omitempty"`
}

// Grant is one permission granted to one agent.
type Grant struct {
	AgentID    string     `json:"agentId"`
	Permission Permission `json:"permission"`
	GrantedAt  int64      `json:"grantedAt"` // ms since the epoch
	Source     string     `json:"source"`    // SourceInstall or SourceUser
}

// Answer is the user's answer to a prompt.
type Answer string

const (
	AnswerAllowOnce   Answer = "allow-once"
	AnswerAlwaysAllow Answer = "always-allow"
	AnswerDeny        Answer = "deny"
	AnswerAlwaysBlock Answer = "always-block"
)

// Preference is a remembered answer (answers.go): an "always" one, one for
// a session, for 24 hours, or allow-and-log. It decides only while it
// Holds: unexpired, for the agent's current code, in its session.
type Preference struct {
	ID        int64  `json:"id"`
	AgentID   string `json:"agentId"`
	Operation string `json:"operation"`
	Target    string `json:"target,omitempty"` // TargetKey: method and canonical origin for fetches, the page's origin for writes
	Answer    Answer `json:"answer"`
	// Scope is Answer.Scope(), written out for readers of the list.
	Scope     Scope `json:"scope"`
	CreatedAt int64 `json:"createdAt"` // ms since the epoch
	// ExpiresAt ends an allow-24h answer (ms since the epoch); 0: no end
	// in time.
	ExpiresAt int64 `json:"expiresAt,omitempty"`
	// SessionID binds an allow-session answer to the session it was
	// given in; it goes when that session is removed.
	SessionID string `json:"sessionId,omitempty"`
	// ModuleSHA256 is the agent's code (module or Python source hash) the
	// answer was given for; another module asks again.
	ModuleSHA256 string `json:"moduleSha256"`
	// LastUsed is when the answer last decided something (ms since the
	// epoch, 0: never); Uses counts those decisions.
	LastUsed int64 `json:"lastUsed,omitempty"`
	Uses     int64 `json:"uses,omitempty"`
}

// RevokedMessage is what a denial of a revoked permission says: who
// revoked it and how to give it back.
func RevokedMessage(agentID string, perm Permission) string {
	return fmt.Sprintf("you revoked %s for agent %q; grant it again with `nmhost grant %s %s` or on the extension's options page",
		perm, Truncate(agentID, 64), Truncate(agentID, 64), perm)
}

// DecisionFacts is what one decision needs from the records, read together
// so that a decision sees one consistent state.
type DecisionFacts struct {
	// ProfileJSON is the stored, normalised profile; the policy parses it
	// and caches the result while the text is unchanged.
	ProfileJSON string
	// Granted reports whether the agent holds a grant of the permission.
	Granted bool
	// Revoked reports that the user revoked the permission and has not
	// granted it again: the denial then says so, and how to undo it.
	Revoked bool
	// Workspace is the access to the session's workspace the agent's
	// grants give (GrantedWorkspace), whatever permission the operation
	// needs: a shell command needs the shell grant and workspace grants.
	Workspace WorkspaceAccess
	// WorkspaceRevoked lists the workspace permissions the user revoked
	// and has not granted again.
	WorkspaceRevoked []Permission
	// Preference is the remembered answer for the operation and target;
	// ID 0 when there is none. The policy uses it only while it Holds.
	Preference Preference
	// ModuleSHA256 is the hash of the agent's installed code (module or
	// Python source), "" when it has none: a remembered answer holds only
	// for the code it was given for.
	ModuleSHA256 string
}

// PolicyRecords is what the policy reads and writes: the store implements
// it. DecisionFacts answers unknown_agent for an agent that is not
// installed; the writes are durable when they return without error.
type PolicyRecords interface {
	DecisionFacts(ctx context.Context, agentID string, perm Permission, operation, target string) (DecisionFacts, error)
	SetPreference(ctx context.Context, p Preference) (Preference, error)
	AppendAudit(ctx context.Context, e AuditEntry) (AuditRecord, error)
	DenialLogger
}

// DenialLogger appends to the denial log. LogDenial bounds the record
// (Denial.Bounded) and returns it with its id once it is on disk.
type DenialLogger interface {
	LogDenial(ctx context.Context, d Denial) (Denial, error)
}

// AgentReader reads installed agents. Agent answers unknown_agent for an
// agent that is not installed; Check is the one grant check and denies on
// any doubt (see its reason codes in docs/permissions.md).
type AgentReader interface {
	Agent(ctx context.Context, id string) (AgentRecord, error)
	Check(ctx context.Context, agentID string, perm Permission) Decision
}
