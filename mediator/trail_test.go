package mediator

import "testing"

// TestOnlyReadsTrailTheirCall: a decision's record may trail its call
// only when the call reads and stays local; a shell step that writes (a
// redirect of echo or cat, whose rows say they read) never does.
func TestOnlyReadsTrailTheirCall(t *testing.T) {
	for _, c := range []struct {
		name string
		op   Operation
		want bool
	}{
		{"log", Operation{Name: OpLog}, true},
		{"workspace read", Operation{Name: OpWorkspaceRead}, true},
		{"workspace write", Operation{Name: OpWorkspaceWrite}, false},
		{"cat", ShellOp("a", LevelLow, ShellStep{Command: "cat", Paths: []string{"f"}}), true},
		{"echo into a file", ShellOp("a", LevelLow, ShellStep{Command: "echo", Writes: true, Paths: []string{"f"}}), false},
		{"cat into a file", ShellOp("a", LevelLow, ShellStep{Command: "cat", Writes: true, Paths: []string{"f", "g"}}), false},
		{"echo outside", ShellOp("a", LevelHigh, ShellStep{Command: "echo", WritesOutside: true, Paths: []string{"/tmp/f"}}), false},
		{"touch", ShellOp("a", LevelLow, ShellStep{Command: "touch", Writes: true, Paths: []string{"f"}}), false},
		{"fetch", Operation{Name: OpNetworkFetch, Method: "GET"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rule, ok := RuleFor(c.op)
			if !ok {
				t.Fatalf("no rule for %s", c.op.Name)
			}
			if got := trailsItsCall(c.op, rule); got != c.want {
				t.Fatalf("trailsItsCall = %v; want %v", got, c.want)
			}
		})
	}
}
