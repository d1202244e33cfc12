// Package auditlog verifies the audit trail with nothing but the verifier
// key: the signed checkpoints (tree heads in the note format of Go's
// checksum database), inclusion proofs of one record, and proofs that a
// log extends a checkpoint. It holds no storage: the store persists the
// records and their hashes and hands them here through tlog.HashReader.
package auditlog
