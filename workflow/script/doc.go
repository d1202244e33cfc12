// Package script turns an agent's script, JavaScript or TypeScript, into
// the workflow it is before anything runs: its tool calls as mcp tasks,
// its pure code as JavaScript steps, or a refusal with a reason code and
// the line and column of what it cannot prove.
package script
