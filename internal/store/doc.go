// Package store keeps the mediator's records durably in one SQLite file
// per data directory, nmhost.db: agents and grants, modules by SHA-256,
// the denial log, remembered answers, the audit log (a hash chain and a
// tlog tree with signed checkpoints) and session settings; the sessions'
// memory (FTS5, memory.go) is in a second one, memory.db, which only a
// memory operation opens (memory_db.go).
//
// It implements mediator.PolicyRecords, mediator.AuditQueue and
// mediator.AgentReader; several host processes may open the same directory
// at once. Audit and denial appends are group-committed (commit.go) and,
// in the default durability, made durable by a group syncer within a
// bounded window (sync.go; mediator.AuditSyncer); what decisions read is
// cached per agent until anything may have changed it (cache.go).
package store
