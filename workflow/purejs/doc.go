// Package purejs runs one pure step of an agent's script, its own
// JavaScript, in a fresh engine with no host objects, under a deadline,
// a call-stack bound, a heap watchdog and a bound on what it returns.
package purejs
