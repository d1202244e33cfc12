package mediator

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ShellCommand is one command of the session shell: a Go function over
// the session's workspace, never an operating-system process.
type ShellCommand struct {
	Name string
	// Info: a command that reports on files (wc, grep, find, pwd) rather
	// than working them; a low session runs file operations only.
	Info bool
	// Writes: the command changes files (mkdir, touch, cp's and mv's
	// destination, rm, echo with > or >>).
	Writes bool
}

// shellCommands is the shell's whole command set. Anything else is
// shell_not_allowed, at every level.
var shellCommands = map[string]ShellCommand{
	"ls": {Name: "ls"}, "cat": {Name: "cat"}, "head": {Name: "head"}, "tail": {Name: "tail"},
	"mkdir": {Name: "mkdir", Writes: true}, "touch": {Name: "touch", Writes: true},
	"cp": {Name: "cp", Writes: true}, "mv": {Name: "mv", Writes: true}, "rm": {Name: "rm", Writes: true},
	"echo": {Name: "echo"},
	"wc":   {Name: "wc", Info: true}, "grep": {Name: "grep", Info: true}, "find": {Name: "find", Info: true}, "pwd": {Name: "pwd", Info: true},
}

// ShellStep is one command as the shell is about to run it: its name and
// where it reaches.
type ShellStep struct {
	Command string `json:"command"`
	// ReadsOutside: a path it reads is outside the workspace (absolute).
	ReadsOutside bool `json:"readsOutside,omitempty"`
	// WritesOutside: a path it writes is outside the workspace.
	WritesOutside bool `json:"writesOutside,omitempty"`
	// Writes: it writes inside the workspace (a redirect counts).
	Writes bool `json:"writes,omitempty"`
	// ListsOutside: it would list or search a directory outside the
	// workspace (ls, find, grep -r): only files are ever read outside,
	// by name, so a walk of the disk is refused at every level.
	ListsOutside bool `json:"listsOutside,omitempty"`
	// Paths are the names it reads and writes, as the command gave them
	// after pattern expansion (each truncated; at most MaxShellPaths): the
	// audit trail's targets. Never the text echo writes.
	Paths []string `json:"paths,omitempty"`
	// Program: the command is not built in; at a high session it runs
	// as a program of the system in the sandbox (package sandbox), below
	// it is shell_not_allowed. Its operation is OpShellProgram.
	Program bool `json:"program,omitempty"`
	// Argv is a program's command line as it runs (each word truncated;
	// at most MaxShellPaths words), and Dir its working directory in the
	// workspace: the audit trail's record of what ran.
	Argv []string `json:"argv,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// Sandboxed: this host can run a program in the sandbox
	// (sandbox.Available); without it a program is
	// sandbox_unavailable, at every level that could run one.
	Sandboxed bool `json:"sandboxed,omitempty"`
	// trimmed: ShellOp cut Paths to fit the audit trail.
	trimmed bool
}

// OpShellProgram is the operation of a program run from the shell: one
// rule for every program, whose step names it (ShellStep.Argv).
const OpShellProgram = OpShellPrefix + "program"

// MaxShellPaths bounds the paths a shell step records; a longer list
// ends with "...".
const MaxShellPaths = 16

// ShellOp is the operation an agent's shell command is decided as.
// paths are trimmed to what the audit trail keeps; a step that had to be
// trimmed cannot read outside the workspace (see outsidePathsWhole).
func ShellOp(agentID, level string, s ShellStep) Operation {
	if len(s.Paths) > MaxShellPaths {
		s.Paths = append(s.Paths[:MaxShellPaths:MaxShellPaths], "...")
		s.trimmed = true
	}
	paths := make([]string, len(s.Paths))
	for i, p := range s.Paths {
		paths[i] = Truncate(p, MaxShellPathBytes)
		s.trimmed = s.trimmed || paths[i] != p
	}
	s.Paths = paths
	if len(s.Argv) > MaxShellPaths {
		s.Argv = append(s.Argv[:MaxShellPaths:MaxShellPaths], "...")
	}
	argv := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		argv[i] = Truncate(a, MaxShellPathBytes)
	}
	s.Argv = argv
	name := OpShellPrefix + s.Command
	if s.Program {
		name = OpShellProgram
	}
	return Operation{AgentID: agentID, Permission: PermShell, Name: name, SessionLevel: level, Shell: &s}
}

// MaxShellPathBytes bounds one recorded path.
const MaxShellPathBytes = 256

// outsidePathsWhole reports whether a step that reads outside the
// workspace names every outside path whole: the prompt shows them and an
// "always" answer is keyed by them, so a path that was cut, or a list
// that was, would let a read through that nobody saw.
func outsidePathsWhole(s ShellStep) bool {
	if s.trimmed || len(s.Paths) > MaxShellPaths {
		return false
	}
	for _, p := range s.Paths {
		if len(p) > MaxShellPathBytes || !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl) {
			return false
		}
	}
	return true
}

// shellRules are the classification rows of the shell's commands, one
// per command: no prompt (the session level is the person's answer),
// nothing leaves the machine, and the workspace access the set must give.
// A command that writes needs read-write; echo needs it only with a
// redirect, which the policy checks on the step.
func shellRules() []OperationRule {
	names := make([]string, 0, len(shellCommands))
	for n := range shellCommands {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]OperationRule, 0, len(names))
	for _, n := range names {
		c := shellCommands[n]
		r := OperationRule{Name: OpShellPrefix + n, Permission: PermShell, Class: AlwaysSafe, StaysLocal: true,
			Workspace: WorkspaceRead, ReadOnly: !c.Writes, Idempotent: !c.Writes,
			Destructive: n == "rm" || n == "mv", Why: "runs " + n + " in the session shell"}
		if c.Writes {
			r.Workspace = WorkspaceReadWrite
		}
		if c.Info {
			r.MinLevel = LevelMedium
		}
		out = append(out, r)
	}
	// A program may change any file of the workspace and reach allowed
	// hosts through the run's proxy, whose every connection is decided
	// on its own; it runs at a high session only (DecideShell), where
	// a granted operation that needs confirmation runs without asking.
	out = append(out, OperationRule{Name: OpShellProgram, Permission: PermShell, Class: RequiresConfirmation,
		Workspace: WorkspaceReadWrite, Destructive: true, Why: "runs a program of the system in the sandbox"})
	return out
}

// DecideShell applies the session matrix to one step:
//
//	low:    file operations inside the workspace
//	medium: low + information commands (wc, grep, find, pwd)
//	high:   medium + reading outside the workspace, and copying an outside
//	        file in (cp /outside/file name), and programs of the system
//	        in the sandbox (sandbox_unavailable where there is none)
//
// Writing outside the workspace is denied at every level
// (path_not_allowed); a command outside the set is shell_not_allowed; a
// level below what the step needs is session_level.
func DecideShell(level string, s ShellStep) Decision {
	lvl, err := ParseLevel(level)
	if err != nil {
		return Deny(CodeInvalidLevel, MessageOf(err))
	}
	cmd, ok := shellCommands[s.Command]
	if !ok && s.Program && lvl == LevelHigh {
		if !s.Sandboxed {
			return Deny(CodeSandboxUnavailable, fmt.Sprintf("%q is a program, and programs run only in the sandbox, which this host does not have (bubblewrap on Linux)", Truncate(s.Command, 32)))
		}
		return Allow(fmt.Sprintf("%s runs as a program in the sandbox at level high", Truncate(s.Command, 32)))
	}
	if !ok {
		return Deny(CodeShellNotAllowed, fmt.Sprintf("%q is not a command of the session shell (ls, cat, head, tail, wc, grep, find, mkdir, touch, cp, mv, rm, echo, pwd)", Truncate(s.Command, 32)))
	}
	switch {
	case s.WritesOutside:
		return Deny(CodePathNotAllowed, fmt.Sprintf("%s would write outside the workspace, which no level allows", cmd.Name))
	case s.ListsOutside:
		return Deny(CodePathNotAllowed, fmt.Sprintf("%s lists or searches inside the workspace only; outside it, a high session reads a file by its name", cmd.Name))
	case s.ReadsOutside && lvl != LevelHigh:
		return Deny(CodeSessionLevel, fmt.Sprintf("%s reads outside the workspace, which only a high session may (this one is %s)", cmd.Name, lvl))
	case cmd.Info && lvl == LevelLow:
		return Deny(CodeSessionLevel, fmt.Sprintf("%s is an information command; a low session runs file operations only", cmd.Name))
	}
	return Allow(fmt.Sprintf("%s is allowed at level %s", cmd.Name, lvl))
}
