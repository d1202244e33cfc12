// Package shell is the session shell: a small command set written in Go
// over a session's workspace, parsed by a real shell parser, each command
// decided at the session's level; it never starts a process.
package shell
