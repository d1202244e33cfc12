package mediator

import (
	"context"
	"strings"
	"testing"
)

// TestAdminPolicyCannotBeLoosened: the administrator's rules refuse what
// the person granted and answered: a blocked permission, the workspace
// grant a shell command needs, a session above the highest level; each
// with admin_policy and the rule and source that decided.
func TestAdminPolicyCannotBeLoosened(t *testing.T) {
	file := AdminPolicy{BlockedPermissions: []Permission{PermClipboardWrite, PermWorkspaceWrite}, MaxSessionLevel: LevelMedium, Source: "admin file /etc/nmhost/policy.json"}
	managed := AdminPolicy{BlockedPermissions: []Permission{PermNotifications}, Source: "managed storage"}
	admin := NewAdmin(file).With(managed)
	all := []Permission{PermClipboardWrite, PermNotifications, PermShell, PermWorkspaceRead, PermWorkspaceWrite, PermConsoleLog}
	for _, tc := range []struct {
		name string
		op   Operation
		code Code
		by   string
	}{
		{"a blocked permission", Operation{Name: OpClipboardWrite, SessionLevel: LevelMedium, TextLength: 1}, CodeAdminPolicy, "admin:blockedPermissions@admin_file_/etc/nmhost/policy.json"},
		{"blocked by managed storage", Operation{Name: OpNotificationsShow, SessionLevel: LevelMedium}, CodeAdminPolicy, "admin:blockedPermissions@managed_storage"},
		{"a shell write needs a blocked grant", ShellOp("a", LevelMedium, ShellStep{Command: "rm", Writes: true}), CodeAdminPolicy, "admin:blockedPermissions@admin_file_/etc/nmhost/policy.json"},
		{"a shell read does not", ShellOp("a", LevelMedium, ShellStep{Command: "ls"}), CodeAllowed, "class:ALWAYS_SAFE"},
		{"a session above the level", Operation{Name: OpLog, SessionLevel: LevelHigh}, CodeAdminPolicy, "admin:maxSessionLevel@admin_file_/etc/nmhost/policy.json"},
		{"a session at it", Operation{Name: OpLog, SessionLevel: LevelMedium}, CodeAllowed, "class:ALWAYS_SAFE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPolicy(&factsRecords{profile: profileWithSet(t, SetTrusted), grants: all}, PolicyOptions{Admin: func() Admin { return admin }})
			op := tc.op
			op.AgentID = "a"
			d := p.Decide(context.Background(), op)
			if d.Code != tc.code || d.DecidedBy != tc.by {
				t.Fatalf("Decide = %s by %s: %s; want %s by %s", d.Code, d.DecidedBy, d.Reason, tc.code, tc.by)
			}
			if tc.code == CodeAdminPolicy && !strings.Contains(d.Reason, "administrator") {
				t.Fatalf("the reason does not say who refused: %s", d.Reason)
			}
		})
	}
	if err := (AdminPolicy{BlockedPermissions: []Permission{"run"}}).Check(); CodeOf(err) != CodeUnknownPermission {
		t.Fatalf("an unknown blocked permission: %v", err)
	}
	if err := (AdminPolicy{MaxSessionLevel: "root"}).Check(); CodeOf(err) != CodeInvalidLevel {
		t.Fatalf("an unknown level: %v", err)
	}
}
