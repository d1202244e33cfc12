package mediator

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// factsRecords answers DecisionFacts from a profile and a grant list.
type factsRecords struct {
	nullRecords
	profile string
	grants  []Permission
	revoked []Permission
}

func (f *factsRecords) DecisionFacts(_ context.Context, _ string, perm Permission, _, _ string) (DecisionFacts, error) {
	has := func(p Permission) bool { return slices.Contains(f.grants, p) }
	d := DecisionFacts{ProfileJSON: f.profile, Granted: has(perm), Workspace: GrantedWorkspace(has)}
	d.Revoked = !d.Granted && slices.Contains(f.revoked, perm)
	for _, p := range f.revoked {
		if (p == PermWorkspaceRead || p == PermWorkspaceWrite) && !has(p) {
			d.WorkspaceRevoked = append(d.WorkspaceRevoked, p)
		}
	}
	return d, nil
}

func profileWithSet(t *testing.T, set PermissionSet) string {
	t.Helper()
	b, err := json.Marshal(Profile{AgentID: "a", PermissionSet: set, PermissionSource: SetSourceManual})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSessionMatrix holds the policy to the session matrix of
// docs/permissions.md for memory and the shell, and to the grant and the
// permission set under it: each row names the code and what decided it.
func TestSessionMatrix(t *testing.T) {
	both := []Permission{PermMemory, PermShell, PermWorkspaceRead, PermWorkspaceWrite}
	readOnly := []Permission{PermShell, PermWorkspaceRead}
	wsWrite := Operation{Name: OpWorkspaceWrite, Method: "create", Path: "a.txt", TextLength: 5}
	wsRead := Operation{Name: OpWorkspaceRead, Path: "a.txt"}
	search := Operation{Name: OpMemorySearch, TextLength: 5}
	write := Operation{Name: OpMemoryWrite, TextLength: 5}
	shell := func(s ShellStep) Operation { return ShellOp("a", "", s) }
	for _, tc := range []struct {
		name   string
		set    PermissionSet
		grants []Permission
		level  string
		op     Operation
		code   Code
		by     string
	}{
		{"memory search at low", SetFilesystem, both, LevelLow, search, CodeSessionLevel, "level:low"},
		{"memory search at medium", SetFilesystem, both, LevelMedium, search, CodeAllowed, "class:ALWAYS_SAFE"},
		{"memory search at default level", SetFilesystem, both, "", search, CodeAllowed, "class:ALWAYS_SAFE"},
		{"memory search at high", SetFilesystem, both, LevelHigh, search, CodeAllowed, "class:ALWAYS_SAFE"},
		{"memory write at low", SetFilesystem, both, LevelLow, write, CodeSessionLevel, "level:low"},
		{"memory write at medium", SetFilesystem, both, LevelMedium, write, CodeSessionLevel, "level:medium"},
		{"memory write at high", SetFilesystem, both, LevelHigh, write, CodeAllowed, "level:high"},
		{"memory without the grant", SetFilesystem, []Permission{PermShell}, LevelHigh, write, CodePermissionNotGranted, "grant:memory"},
		{"memory outside the set", SetReadonly, both, LevelHigh, search, CodePermissionOutsideSet, "set:readonly"},
		{"memory under a bad level", SetFilesystem, both, "root", search, CodeInvalidLevel, "level:root"},

		{"ls at low", SetFilesystem, both, LevelLow, shell(ShellStep{Command: "ls"}), CodeAllowed, "class:ALWAYS_SAFE"},
		{"grep at low", SetFilesystem, both, LevelLow, shell(ShellStep{Command: "grep"}), CodeSessionLevel, "level:low"},
		{"grep at medium", SetFilesystem, both, LevelMedium, shell(ShellStep{Command: "grep"}), CodeAllowed, "class:ALWAYS_SAFE"},
		{"cat outside at medium", SetFilesystem, both, LevelMedium, shell(ShellStep{Command: "cat", ReadsOutside: true}), CodeSessionLevel, "level:medium"},
		// An agent reads outside the workspace only when the person says
		// so each time, even at high.
		{"cat outside at high", SetFilesystem, both, LevelHigh, shell(ShellStep{Command: "cat", ReadsOutside: true}), CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"cp in at high", SetFilesystem, both, LevelHigh, shell(ShellStep{Command: "cp", ReadsOutside: true, Writes: true}), CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"ls outside at high never asks", SetFilesystem, both, LevelHigh, shell(ShellStep{Command: "ls", ReadsOutside: true, ListsOutside: true, Paths: []string{"/etc"}}), CodePathNotAllowed, "shell:ls"},
		{"cp out at high", SetFilesystem, both, LevelHigh, shell(ShellStep{Command: "cp", WritesOutside: true, Writes: true}), CodePathNotAllowed, "shell:cp"},
		{"echo redirect under readonly", SetReadonly, both, LevelHigh, shell(ShellStep{Command: "echo", Writes: true}), CodePermissionOutsideSet, "set:readonly"},
		{"echo under readonly", SetReadonly, both, LevelHigh, shell(ShellStep{Command: "echo"}), CodeAllowed, "class:ALWAYS_SAFE"},
		{"mkdir under readonly", SetReadonly, both, LevelHigh, shell(ShellStep{Command: "mkdir", Writes: true}), CodePermissionOutsideSet, "set:readonly"},
		{"shell without the grant", SetFilesystem, []Permission{PermMemory}, LevelHigh, shell(ShellStep{Command: "ls"}), CodePermissionNotGranted, "grant:shell"},
		{"shell under a set with no workspace", SetNetworkAPI, both, LevelHigh, shell(ShellStep{Command: "ls"}), CodePermissionOutsideSet, "set:network-api"},
		{"a command outside the set", SetTrusted, both, LevelHigh, Operation{Name: "shell.curl", Shell: &ShellStep{Command: "curl"}}, CodeShellNotAllowed, "shell:curl"},
		{"a step naming another command", SetTrusted, both, LevelHigh, Operation{Name: "shell.ls", Shell: &ShellStep{Command: "rm", Writes: true}}, CodeBadRequest, "shell:ls"},
		{"a shell operation without its step", SetTrusted, both, LevelHigh, Operation{Name: "shell.rm"}, CodeBadRequest, "shell:rm"},
		{"an outside read of too many paths", SetTrusted, both, LevelHigh, shell(ShellStep{Command: "cat", ReadsOutside: true, Paths: make([]string, MaxShellPaths+1)}), CodePathNotAllowed, "shell:cat"},
		{"an outside read of a cut path", SetTrusted, both, LevelHigh, shell(ShellStep{Command: "cat", ReadsOutside: true, Paths: []string{"/" + strings.Repeat("a", 300)}}), CodePathNotAllowed, "shell:cat"},
		{"an outside path with a newline", SetTrusted, both, LevelHigh, shell(ShellStep{Command: "cat", ReadsOutside: true, Paths: []string{"/tmp/a\n/etc/passwd"}}), CodePathNotAllowed, "shell:cat"},
		{"an unrecorded step with too many paths", SetTrusted, both, LevelHigh, Operation{Name: "shell.cat", Shell: &ShellStep{Command: "cat", ReadsOutside: true, Paths: make([]string, MaxShellPaths+1)}}, CodePathNotAllowed, "shell:cat"},
		{"many inside paths are fine", SetTrusted, both, LevelHigh, shell(ShellStep{Command: "rm", Writes: true, Paths: make([]string, 40)}), CodeAllowed, "class:ALWAYS_SAFE"},
		{"a step on another operation", SetTrusted, both, LevelHigh, Operation{Name: OpMemorySearch, Shell: &ShellStep{Command: "ls"}}, CodeBadRequest, "class:ALWAYS_SAFE"},

		// Programs: at high in the sandbox, without asking (a granted
		// operation that needs confirmation); below high, or without a
		// sandbox, refused before anything else.
		{"a program at high", SetFilesystem, both, LevelHigh, shell(ShellStep{Command: "git", Program: true, Sandboxed: true}), CodeAllowed, "level:high"},
		{"a program at medium", SetFilesystem, both, LevelMedium, shell(ShellStep{Command: "git", Program: true, Sandboxed: true}), CodeShellNotAllowed, "shell:git"},
		{"a program at low", SetFilesystem, both, LevelLow, shell(ShellStep{Command: "git", Program: true, Sandboxed: true}), CodeShellNotAllowed, "shell:git"},
		{"a program without a sandbox", SetFilesystem, both, LevelHigh, shell(ShellStep{Command: "git", Program: true}), CodeSandboxUnavailable, "shell:git"},
		{"a program without workspace.write", SetTrusted, readOnly, LevelHigh, shell(ShellStep{Command: "git", Program: true, Sandboxed: true}), CodePermissionNotGranted, "grant:workspace.write"},
		{"a program under readonly", SetReadonly, both, LevelHigh, shell(ShellStep{Command: "git", Program: true, Sandboxed: true}), CodePermissionOutsideSet, "set:readonly"},
		{"a built-in's step on the program operation", SetTrusted, both, LevelHigh, Operation{Name: OpShellProgram, Shell: &ShellStep{Command: "ls"}}, CodeBadRequest, "shell:program"},
		{"a program's step on a built-in's operation", SetTrusted, both, LevelHigh, Operation{Name: "shell.ls", Shell: &ShellStep{Command: "ls", Program: true, Sandboxed: true}}, CodeBadRequest, "shell:ls"},

		// The workspace is a grant the person saw: the set alone, however
		// large, reaches nothing.
		{"ls without workspace.read", SetTrusted, []Permission{PermShell}, LevelHigh, shell(ShellStep{Command: "ls"}), CodePermissionNotGranted, "grant:workspace.read"},
		{"ls with workspace.read", SetReadonly, readOnly, LevelLow, shell(ShellStep{Command: "ls"}), CodeAllowed, "class:ALWAYS_SAFE"},
		{"mkdir with workspace.read only", SetTrusted, readOnly, LevelHigh, shell(ShellStep{Command: "mkdir", Writes: true}), CodePermissionNotGranted, "grant:workspace.write"},
		{"echo redirect with workspace.read only", SetTrusted, readOnly, LevelHigh, shell(ShellStep{Command: "echo", Writes: true}), CodePermissionNotGranted, "grant:workspace.write"},
		{"workspace.write without workspace.read", SetTrusted, []Permission{PermShell, PermWorkspaceWrite}, LevelHigh, shell(ShellStep{Command: "rm", Writes: true}), CodePermissionNotGranted, "grant:workspace.read"},
		{"a guest write without any grant", SetTrusted, nil, LevelHigh, wsWrite, CodePermissionNotGranted, "grant:workspace.write"},
		{"a guest write with workspace.write alone", SetTrusted, []Permission{PermWorkspaceWrite}, LevelHigh, wsWrite, CodePermissionNotGranted, "grant:workspace.read"},
		{"a guest write with both", SetFilesystem, both, LevelLow, wsWrite, CodeAllowed, "class:ALWAYS_SAFE"},
		{"a guest write under readonly", SetReadonly, both, LevelHigh, wsWrite, CodePermissionOutsideSet, "set:readonly"},
		{"a guest read without the grant", SetTrusted, nil, LevelHigh, wsRead, CodePermissionNotGranted, "grant:workspace.read"},
		{"a guest read with it", SetReadonly, readOnly, LevelLow, wsRead, CodeAllowed, "class:ALWAYS_SAFE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPolicy(&factsRecords{profile: profileWithSet(t, tc.set), grants: tc.grants}, PolicyOptions{})
			op := tc.op
			op.AgentID, op.SessionLevel = "a", tc.level
			d := p.Decide(context.Background(), op)
			if d.Code != tc.code || d.DecidedBy != tc.by || d.Allowed != (tc.code == CodeAllowed) || d.RequiresPrompt != (tc.code == CodeConfirmRequired) {
				t.Fatalf("Decide = %s by %s (allowed %v): %s; want %s by %s", d.Code, d.DecidedBy, d.Allowed, d.Reason, tc.code, tc.by)
			}
		})
	}
}

// TestOutsideReadTarget: an "always" answer for an outside read is
// remembered for exactly the outside files named, never for the command.
func TestOutsideReadTarget(t *testing.T) {
	op := ShellOp("a", LevelHigh, ShellStep{Command: "cp", ReadsOutside: true, Writes: true, Paths: []string{"/tmp/sample.txt", "imported.txt"}})
	if got := TargetKey(op); got != `["/tmp/sample.txt"]` {
		t.Fatalf("TargetKey = %q", got)
	}
	one := TargetKey(ShellOp("a", LevelHigh, ShellStep{Command: "cat", ReadsOutside: true, Paths: []string{"/tmp/a /etc/passwd"}}))
	two := TargetKey(ShellOp("a", LevelHigh, ShellStep{Command: "cat", ReadsOutside: true, Paths: []string{"/tmp/a", "/etc/passwd"}}))
	if one == two {
		t.Fatalf("one file and two files key alike: %q", one)
	}
	if got := TargetKey(ShellOp("a", LevelHigh, ShellStep{Command: "cat", Paths: []string{"notes.txt"}})); got != "" {
		t.Fatalf("an inside read keys to %q", got)
	}
}

// TestShellOpBoundsPaths: the audit trail keeps a bounded list of
// bounded names.
func TestShellOpBoundsPaths(t *testing.T) {
	paths := make([]string, 40)
	for i := range paths {
		paths[i] = string(make([]byte, 1000))
	}
	op := ShellOp("a", LevelLow, ShellStep{Command: "rm", Writes: true, Paths: paths})
	if len(op.Shell.Paths) != MaxShellPaths+1 || op.Shell.Paths[MaxShellPaths] != "..." {
		t.Fatalf("paths %d, last %q", len(op.Shell.Paths), op.Shell.Paths[len(op.Shell.Paths)-1])
	}
	for _, p := range op.Shell.Paths {
		if len(p) > 260 {
			t.Fatalf("a path of %d bytes", len(p))
		}
	}
	if op.Name != "shell.rm" || op.Permission != PermShell || op.SessionLevel != LevelLow {
		t.Fatalf("op %+v", op)
	}
}

// TestMemoryAndShellRows: the memory and shell rows never leave the
// machine, never always confirm, and carry the MCP hints they claim.
func TestMemoryAndShellRows(t *testing.T) {
	for _, name := range []string{OpMemorySearch, OpMemoryWrite, "shell.ls", "shell.rm", "shell.grep", "shell.cp"} {
		r, ok := RuleFor(Operation{Name: name})
		if !ok || !r.StaysLocal || r.OpenWorld || r.Class == AlwaysConfirm {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if r, _ := RuleFor(Operation{Name: "shell.rm"}); !r.Destructive || r.ReadOnly || r.Workspace != WorkspaceReadWrite {
		t.Errorf("rm: %+v", r)
	}
	if r, _ := RuleFor(Operation{Name: OpMemorySearch}); !r.ReadOnly || r.MinLevel != LevelMedium {
		t.Errorf("memory.search: %+v", r)
	}
	if r, _ := RuleFor(Operation{Name: OpMemoryWrite}); r.ReadOnly || r.MinLevel != LevelHigh {
		t.Errorf("memory.write: %+v", r)
	}
}

// TestRevokedWorkspaceGrant: a workspace grant the person took back is
// refused as revoked, naming how to give it back, for a shell command as
// for a guest's write.
func TestRevokedWorkspaceGrant(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grants  []Permission
		revoked []Permission
		op      Operation
		by      string
	}{
		{"ls, read revoked", []Permission{PermShell}, []Permission{PermWorkspaceRead}, ShellOp("a", LevelHigh, ShellStep{Command: "ls"}), "grant:workspace.read"},
		{"rm, write revoked", []Permission{PermShell, PermWorkspaceRead}, []Permission{PermWorkspaceWrite}, ShellOp("a", LevelHigh, ShellStep{Command: "rm", Writes: true}), "grant:workspace.write"},
		{"guest write, write revoked", []Permission{PermWorkspaceRead}, []Permission{PermWorkspaceWrite}, Operation{Name: OpWorkspaceWrite, Method: "write"}, "grant:workspace.write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPolicy(&factsRecords{profile: profileWithSet(t, SetTrusted), grants: tc.grants, revoked: tc.revoked}, PolicyOptions{})
			op := tc.op
			op.AgentID, op.SessionLevel = "a", LevelHigh
			d := p.Decide(context.Background(), op)
			if d.Code != CodeRevokedByUser || d.DecidedBy != tc.by || !strings.Contains(d.Reason, "nmhost grant a") {
				t.Fatalf("Decide = %s by %s: %s", d.Code, d.DecidedBy, d.Reason)
			}
		})
	}
}
