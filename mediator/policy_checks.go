package mediator

import (
	"fmt"
	"slices"
	"strings"
)

// The checks Decide runs before the safety class: the administrator's
// rules, the grant and the permission set, the profile's capabilities and
// the session shell's matrix. Each returns a denial and false, or true.

// capabilityDenial applies the profile's capabilities to the operation.
func capabilityDenial(op Operation, rule OperationRule, c Capabilities) (PolicyDecision, bool) {
	switch {
	case rule.Permission == PermMCPCall && !toolListed(c.MCPTools, op.Tool):
		return denied(rule.Class, CodeToolNotAllowed, "capability:mcpTools",
			fmt.Sprintf("the agent's profile does not list %s in capabilities.mcpTools", toolLabel(op.Tool))), false
	case rule.Permission == PermPageWrite && c.DOMAccess != DOMFull:
		return denied(rule.Class, CodePermissionNotGranted, "capability:domAccess",
			fmt.Sprintf("domAccess is %s; page writes need full", c.DOMAccess)), false
	case rule.Permission == PermPageRead && c.DOMAccess != DOMFull && c.DOMAccess != DOMReadOnly:
		return denied(rule.Class, CodePermissionNotGranted, "capability:domAccess", "domAccess is none; page reads need read-only or full"), false
	case rule.Permission == PermNetworkFetch && !c.NetworkAccess:
		return denied(rule.Class, CodeNetworkDisabled, "capability:networkAccess", "the agent's profile does not enable networkAccess"), false
	}
	return PolicyDecision{}, true
}

// grantDenial checks the grant, the permission set, and the workspace
// access the set gives. An operation that needs no grant (a workspace
// write) must need workspace access instead, which a set must name: a row
// with neither is refused, never allowed by default.
func grantDenial(op Operation, rule OperationRule, f decisionFacts) (PolicyDecision, bool) {
	if rule.Permission != "" {
		if !f.granted && f.revoked {
			return denied(rule.Class, CodeRevokedByUser, "grant:"+string(rule.Permission), RevokedMessage(op.AgentID, rule.Permission)), false
		}
		if !f.granted {
			return denied(rule.Class, CodePermissionNotGranted, "grant:"+string(rule.Permission),
				fmt.Sprintf("agent %q has not been granted %q", op.AgentID, rule.Permission)), false
		}
		if r, named := SetRule(f.set.Set); f.set.Set != "" && (!named || !r.Allows(rule.Permission)) {
			return denied(rule.Class, CodePermissionOutsideSet, "set:"+string(f.set.Set), OutsideSetMessage(f.set.Set, rule.Permission)), false
		}
	}
	need := rule.Workspace
	if op.Shell != nil && op.Shell.Writes {
		need = WorkspaceReadWrite
	}
	if need == "" || need == WorkspaceNone {
		if rule.Permission == "" {
			return denied(rule.Class, CodeInternal, "class:"+string(rule.Class), fmt.Sprintf("%s names neither a grant nor workspace access", op.Name)), false
		}
		return PolicyDecision{}, true
	}
	// A profile that names no set (one stored before sets existed) is
	// bounded by the set its run inferred, at link time, as its other
	// permissions are; the grants below still decide.
	r, named := SetRule(f.set.Set)
	if f.set.Set != "" && (!named || !WorkspaceCovers(r.Workspace, need)) {
		return denied(rule.Class, CodePermissionOutsideSet, "set:"+string(f.set.Set),
			fmt.Sprintf("%s needs %s access to the workspace; the agent's permission set %s gives %s", op.Name, need, orNone(string(f.set.Set)), orNone(string(r.Workspace)))), false
	}
	// The set is only a ceiling: the workspace is reached through grants
	// the person saw, like every other resource.
	if lack, ok := WorkspaceGrantFor(need, func(p Permission) bool { return grantsCover(f.workspace, p) }); ok {
		if slices.Contains(f.wsRevoked, lack) {
			return denied(rule.Class, CodeRevokedByUser, "grant:"+string(lack), RevokedMessage(op.AgentID, lack)), false
		}
		return denied(rule.Class, CodePermissionNotGranted, "grant:"+string(lack),
			fmt.Sprintf("%s needs %s access to the workspace, and agent %q has not been granted %q", op.Name, need, Truncate(op.AgentID, 64), lack)), false
	}
	return PolicyDecision{}, true
}

// grantsCover reports whether workspace access ws, as the grants give
// it, includes the grant p.
func grantsCover(ws WorkspaceAccess, p Permission) bool {
	switch p {
	case PermWorkspaceRead:
		return WorkspaceCovers(ws, WorkspaceRead)
	case PermWorkspaceWrite:
		return ws == WorkspaceReadWrite
	}
	return false
}

// shellDenial applies the session matrix to a shell command. The step
// must be there and name the operation's own command: a "shell.ls" whose
// step says "cp" is a malformed request, not an ls.
func shellDenial(op Operation, rule OperationRule, level string) (PolicyDecision, bool) {
	cmd, isShell := strings.CutPrefix(rule.Name, OpShellPrefix)
	if !isShell {
		if op.Shell != nil {
			return denied(rule.Class, CodeBadRequest, "class:"+string(rule.Class), fmt.Sprintf("%s is not a shell command", op.Name)), false
		}
		return PolicyDecision{}, true
	}
	if op.Shell != nil && op.Shell.Program != (rule.Name == OpShellProgram) {
		return denied(rule.Class, CodeBadRequest, "shell:"+cmd, fmt.Sprintf("%s must carry a program's step, and only it may", op.Name)), false
	}
	if op.Shell == nil || op.Shell.Command != cmd && !op.Shell.Program {
		return denied(rule.Class, CodeBadRequest, "shell:"+cmd, fmt.Sprintf("%s must carry its own command's step", op.Name)), false
	}
	if op.Shell.ReadsOutside && !outsidePathsWhole(*op.Shell) {
		return denied(rule.Class, CodePathNotAllowed, "shell:"+cmd,
			fmt.Sprintf("a read outside the workspace names at most %d paths of at most %d bytes each, without control characters, so each is shown whole", MaxShellPaths, MaxShellPathBytes)), false
	}
	d := DecideShell(level, *op.Shell)
	if d.Allowed {
		return PolicyDecision{}, true
	}
	by := "shell:" + cmd
	if d.Code == CodeSessionLevel {
		by = "level:" + level
	}
	return denied(rule.Class, d.Code, by, d.Reason), false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// adminDenial applies the administrator's rules in force (Admin.denial).
func (p *Policy) adminDenial(op Operation, rule OperationRule) (PolicyDecision, bool) {
	if p.opts.Admin == nil {
		return PolicyDecision{}, true
	}
	return p.opts.Admin().denial(op, rule)
}
