package mediator

import "fmt"

// The administrator's rules as decisions: what every door of the host
// applies the same way, whoever asks (an agent's operation, a grant, a
// session's level, a person's own shell).

// denial applies a's rules to op: a blocked permission (the operation's,
// or the workspace grant it needs) or a session above the highest level
// is refused whatever the person granted or answered.
func (a Admin) denial(op Operation, rule OperationRule) (PolicyDecision, bool) {
	if len(a.policies) == 0 {
		return PolicyDecision{}, true // every decision passes here: no work without a policy
	}
	perms := []Permission{rule.Permission}
	switch need := rule.Workspace; {
	case op.Shell != nil && op.Shell.Writes, need == WorkspaceReadWrite:
		perms = append(perms, PermWorkspaceRead, PermWorkspaceWrite)
	case need == WorkspaceRead:
		perms = append(perms, PermWorkspaceRead)
	}
	for _, perm := range perms {
		if ap, blocked := a.Blocked(perm); perm != "" && blocked {
			return denied(rule.Class, CodeAdminPolicy, adminBy("blockedPermissions", ap), MessageOf(ap.BlockedError(perm))), false
		}
	}
	if ap, blocked := a.ToolBlocked(op.Tool); op.Name == OpToolCall && blocked {
		return denied(rule.Class, CodeAdminPolicy, adminBy("blockedMcpTools", ap),
			fmt.Sprintf("%s is blocked by the administrator's policy (blockedMcpTools, %s)", toolLabel(op.Tool), ap.Source)), false
	}
	level := op.SessionLevel
	if level == "" {
		level = LevelMedium
	}
	if ap, above := a.LevelAbove(level); above {
		return denied(rule.Class, CodeAdminPolicy, adminBy("maxSessionLevel", ap), MessageOf(ap.LevelError(level))), false
	}
	return PolicyDecision{}, true
}

// RefuseGrant refuses a grant of any of perms that a blocks: a grant the
// administrator blocks could never take effect, so it is not stored.
func (a Admin) RefuseGrant(perms ...Permission) error {
	for _, perm := range perms {
		if p, blocked := a.Blocked(perm); blocked {
			return p.BlockedError(perm)
		}
	}
	return nil
}

// RefuseLevel refuses a session level above a's maxSessionLevel. An
// empty level sets nothing and is not refused here.
func (a Admin) RefuseLevel(level string) error {
	if p, above := a.LevelAbove(level); level != "" && above {
		return p.LevelError(level)
	}
	return nil
}

// DecidePersonShell decides one command of a person's own session shell
// (nmhost shell): the session matrix at level, as for an agent, under
// a's rules, which bind the person's terminal as they bind every other
// door: a blocked workspace grant or the shell itself, and a session
// above the highest level, are refused with admin_policy. No grant or
// remembered answer applies: the level is the person's own answer.
func (a Admin) DecidePersonShell(level string, step ShellStep) Decision {
	op := ShellOp("", level, step)
	if rule, known := RuleFor(op); known {
		if d, pass := a.denial(op, rule); !pass {
			return Deny(d.Code, d.Reason)
		}
	}
	return DecideShell(level, step)
}
