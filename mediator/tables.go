package mediator

import (
	"maps"
	"slices"
)

// The policy's tables are unexported: an importer could otherwise append
// to the classification, add a shell command or widen a permission set
// at run time. They are read through these functions, which return
// copies.

// Operations returns the classification table (a copy), in the
// documentation's order.
func Operations() []OperationRule { return slices.Clone(operationTable) }

// KnownPermissions returns every permission, in a stable order (a copy).
func KnownPermissions() []Permission { return slices.Clone(knownPermissions) }

// ShellCommandFor returns the shell command name, and whether the shell
// has it.
func ShellCommandFor(name string) (ShellCommand, bool) {
	c, ok := shellCommands[name]
	return c, ok
}

// ShellCommandNames returns the shell's commands, sorted.
func ShellCommandNames() []string { return slices.Sorted(maps.Keys(shellCommands)) }
