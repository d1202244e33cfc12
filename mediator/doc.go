// Package mediator decides what an agent may do and remembers the answer:
// profiles, grants, decisions with stable reason codes, and the durable
// store (SQLite) that holds them together with the denial log.
//
// It imports no other part of the project; every other part asks it.
package mediator
