package mediator

import (
	"fmt"
	"slices"
	"strings"
)

// AdminPolicy is a baseline an administrator sets for a machine (a
// policy file in the operating system's admin location) or for a browser
// profile (the extension's managed storage, set by enterprise policy). A
// person can tighten what it allows, never loosen it: a grant, profile,
// answer or session beyond it is refused with admin_policy, naming the
// rule and where it came from. The zero value sets no rule.
type AdminPolicy struct {
	// BlockedPermissions are never granted, linked or decided allowed.
	BlockedPermissions []Permission `json:"blockedPermissions,omitempty"`
	// DeniedHosts are allowedHosts patterns (docs/permissions.md) no
	// agent may reach, whatever its profile lists: deny entries ahead of
	// every profile's own.
	DeniedHosts []string `json:"deniedHosts,omitempty"`
	// MaxSessionLevel is the highest session level ("low", "medium",
	// "high"); "" is no limit.
	MaxSessionLevel string `json:"maxSessionLevel,omitempty"`
	// ExportEndpoint is where the machine's decisions must be exported
	// (nmhost export --otlp-endpoint, run by a service manager the
	// administrator deploys: docs/fleet.md); `nmhost policy list` shows it.
	ExportEndpoint string `json:"exportEndpoint,omitempty"`
	// BlockedMCPTools are MCP tools no one may call through any door:
	// "server" (every tool of a server configured under that name) or
	// "server/tool".
	BlockedMCPTools []string `json:"blockedMcpTools,omitempty"`
	// Source says where the rules came from ("admin file PATH", "managed
	// storage"), for the refusal and `nmhost policy list`. Never read
	// from the policy itself.
	Source string `json:"-"`
}

// Empty reports whether p sets no rule.
func (p AdminPolicy) Empty() bool {
	return len(p.BlockedPermissions) == 0 && len(p.DeniedHosts) == 0 && p.MaxSessionLevel == "" && p.ExportEndpoint == "" &&
		len(p.BlockedMCPTools) == 0
}

// Check validates p's rules: known permissions, a known level, bounded
// lists. Host patterns are netproxy's to check.
func (p AdminPolicy) Check() error {
	if len(p.BlockedPermissions) > 64 || len(p.DeniedHosts) > MaxAllowedHosts || len(p.BlockedMCPTools) > MaxMCPToolsRules {
		return Errorf(CodeBadRequest, "the admin policy has more rules than a policy may")
	}
	for _, t := range p.BlockedMCPTools {
		if err := ParseMCPToolRule(t); err != nil {
			return fmt.Errorf("blockedMcpTools: %w", err)
		}
	}
	for _, perm := range p.BlockedPermissions {
		if _, err := ParsePermission(string(perm)); err != nil {
			return fmt.Errorf("blockedPermissions: %w", err)
		}
	}
	if p.MaxSessionLevel != "" {
		if _, err := ParseLevel(p.MaxSessionLevel); err != nil || p.MaxSessionLevel == "" {
			return fmt.Errorf("maxSessionLevel: %w", err)
		}
	}
	return nil
}

// Admin is the admin rules in force: one policy per source, each applying
// in full, so the strictest wins rule by rule. The zero value has none.
type Admin struct {
	policies []AdminPolicy
}

// NewAdmin returns the rules of every policy given that sets any.
func NewAdmin(ps ...AdminPolicy) Admin {
	var a Admin
	for _, p := range ps {
		if !p.Empty() {
			a.policies = append(a.policies, p)
		}
	}
	return a
}

// With returns a and p's rules too: a source can only add rules.
func (a Admin) With(p AdminPolicy) Admin {
	return NewAdmin(append(slices.Clone(a.policies), p)...)
}

// Policies returns the policies in force (copies).
func (a Admin) Policies() []AdminPolicy {
	out := make([]AdminPolicy, len(a.policies))
	for i, p := range a.policies {
		p.BlockedPermissions, p.DeniedHosts = slices.Clone(p.BlockedPermissions), slices.Clone(p.DeniedHosts)
		p.BlockedMCPTools = slices.Clone(p.BlockedMCPTools)
		out[i] = p
	}
	return out
}

// Blocked reports the first policy that blocks perm.
func (a Admin) Blocked(perm Permission) (AdminPolicy, bool) {
	for _, p := range a.policies {
		if slices.Contains(p.BlockedPermissions, perm) {
			return p, true
		}
	}
	return AdminPolicy{}, false
}

// ToolBlocked reports the first policy that blocks the MCP tool t.
func (a Admin) ToolBlocked(t *ToolCall) (AdminPolicy, bool) {
	for _, p := range a.policies {
		if toolListed(p.BlockedMCPTools, t) {
			return p, true
		}
	}
	return AdminPolicy{}, false
}

// LevelAbove reports the first policy whose maxSessionLevel level passes.
func (a Admin) LevelAbove(level string) (AdminPolicy, bool) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return AdminPolicy{}, false
	}
	for _, p := range a.policies {
		if p.MaxSessionLevel != "" && levelRank[lvl] > levelRank[p.MaxSessionLevel] {
			return p, true
		}
	}
	return AdminPolicy{}, false
}

// DeniedHosts returns every policy's denied host patterns, each with the
// source that set it.
func (a Admin) DeniedHosts() (patterns, sources []string) {
	for _, p := range a.policies {
		for _, h := range p.DeniedHosts {
			patterns, sources = append(patterns, h), append(sources, p.Source)
		}
	}
	return patterns, sources
}

// BlockedError is the refusal of perm by p.
func (p AdminPolicy) BlockedError(perm Permission) error {
	return Errorf(CodeAdminPolicy, "%s is blocked by the administrator's policy (blockedPermissions, %s)", perm, p.Source)
}

// LevelError is the refusal of a session at level by p.
func (p AdminPolicy) LevelError(level string) error {
	return Errorf(CodeAdminPolicy, "a %s session is above the administrator's maxSessionLevel %s (%s)", Truncate(level, 16), p.MaxSessionLevel, p.Source)
}

// adminBy is a decision's decidedBy for a rule of p.
func adminBy(rule string, p AdminPolicy) string {
	return "admin:" + rule + "@" + strings.ReplaceAll(p.Source, " ", "_")
}
