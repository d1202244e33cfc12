// Package pyagent holds what the host knows about Python agents: the
// restricted_api functions a Python agent may find (each one operation of
// the mediator, the same as a WebAssembly agent's import), and the reading
// of an agent's source that infers the permission set it needs. Python
// agents run in the extension's sandbox; this package never runs them.
// It imports nothing of the project but mediator.
package pyagent
