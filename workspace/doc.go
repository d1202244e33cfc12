// Package workspace is a session's directory as agents and the shell see
// it: every name resolved inside it through os.Root, within its quotas.
package workspace
