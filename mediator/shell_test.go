package mediator

import "testing"

// TestDecideShell is the session matrix, row by row.
func TestDecideShell(t *testing.T) {
	for _, tc := range []struct {
		level string
		step  ShellStep
		code  Code
	}{
		{"low", ShellStep{Command: "cat"}, CodeAllowed},
		{"low", ShellStep{Command: "mkdir", Writes: true}, CodeAllowed},
		{"low", ShellStep{Command: "grep"}, CodeSessionLevel},
		{"low", ShellStep{Command: "pwd"}, CodeSessionLevel},
		{"medium", ShellStep{Command: "grep"}, CodeAllowed},
		{"", ShellStep{Command: "find"}, CodeAllowed},
		{"medium", ShellStep{Command: "cat", ReadsOutside: true}, CodeSessionLevel},
		{"high", ShellStep{Command: "cat", ReadsOutside: true}, CodeAllowed},
		{"high", ShellStep{Command: "cp", ReadsOutside: true, Writes: true}, CodeAllowed},
		{"high", ShellStep{Command: "cp", WritesOutside: true, Writes: true}, CodePathNotAllowed},
		{"low", ShellStep{Command: "echo", WritesOutside: true, Writes: true}, CodePathNotAllowed},
		{"high", ShellStep{Command: "curl"}, CodeShellNotAllowed},
		{"high", ShellStep{Command: "ls", ReadsOutside: true, ListsOutside: true}, CodePathNotAllowed},
		{"high", ShellStep{Command: "find", ReadsOutside: true, ListsOutside: true}, CodePathNotAllowed},
		{"high", ShellStep{Command: "sh"}, CodeShellNotAllowed},
		{"root", ShellStep{Command: "ls"}, CodeInvalidLevel},
		// A command that is not built in runs as a program in the
		// sandbox at high only, and only where there is a sandbox.
		{"high", ShellStep{Command: "git", Program: true, Sandboxed: true}, CodeAllowed},
		{"high", ShellStep{Command: "git", Program: true}, CodeSandboxUnavailable},
		{"medium", ShellStep{Command: "git", Program: true, Sandboxed: true}, CodeShellNotAllowed},
		{"low", ShellStep{Command: "git", Program: true, Sandboxed: true}, CodeShellNotAllowed},
		{"medium", ShellStep{Command: "git", Program: true}, CodeShellNotAllowed},
	} {
		t.Run(tc.level+"/"+tc.step.Command, func(t *testing.T) {
			if d := DecideShell(tc.level, tc.step); d.Code != tc.code || d.Allowed != (tc.code == CodeAllowed) {
				t.Fatalf("%+v; want %s", d, tc.code)
			}
		})
	}
}
