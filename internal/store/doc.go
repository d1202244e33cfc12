// Package store keeps the mediator's records durably in one SQLite file
// per data directory: agents and grants, modules by SHA-256, the denial
// log, remembered answers, the audit log (a hash chain and a tlog tree
// with signed checkpoints) and session settings.
//
// It implements mediator.PolicyRecords and mediator.AgentReader; several
// host processes may open the same directory at once.
package store
