// Package testkit holds the test helpers every package shares: a canary
// server that proves nothing reached it, a poll until a deadline, and a
// benchmark's time per operation for ratios to a baseline.
package testkit
