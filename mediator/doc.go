// Package mediator decides what an agent may do: the vocabulary of the
// permission model (operations, permissions, profiles, decisions with
// stable reason codes, records) and the policy that applies it.
//
// It stores nothing and imports no other package of the project: the
// store, the network and the runtimes depend on it and implement the small
// interfaces it reads through (PolicyRecords, AgentReader, DenialLogger,
// AuditQueue, AuditSyncer, FactsVersioner). How a run's records are kept
// (durability, per-call or aggregate records) is in audit_level.go.
// docs/permissions.md states the rules it enforces.
package mediator
