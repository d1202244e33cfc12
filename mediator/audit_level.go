package mediator

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"sync"
	"time"
)

// Durability says when an effect may run after its decision is recorded.
const (
	// DurabilityWritten (the default): once the decision's transaction is
	// committed, handed to the operating system. A crash of the host
	// loses nothing; the store's group syncer puts it on disk within the
	// sync window, which is all a power loss can take.
	DurabilityWritten = "written"
	// DurabilityStrict: once the decision is fsynced. A host's config or
	// an agent's profile may ask for it; a profile can only ask for this
	// one, never for less.
	DurabilityStrict = "strict"
)

// How the calls of an aggregated operation (OperationRule.Aggregate) are
// recorded.
const (
	// AuditCallsAggregate (the default): one record per run and
	// operation, written when the run ends, before it reports.
	AuditCallsAggregate = "aggregate"
	// AuditCallsPerCall: a decision and an executed record for each call.
	AuditCallsPerCall = "per-call"
)

// AuditRequest is what a profile may ask of the audit trail ("audit" in
// the profile). Both fields only ever ask for more: a stricter durability,
// more records. Anything else is refused at install.
type AuditRequest struct {
	// Durability is "" (the host's setting) or DurabilityStrict.
	Durability string `json:"durability,omitempty"`
	// Calls is "" (the host's setting) or AuditCallsPerCall.
	Calls string `json:"calls,omitempty"`
}

func (a *AuditRequest) validate() error {
	if a == nil {
		return nil
	}
	if a.Durability != "" && a.Durability != DurabilityStrict {
		return Errorf(CodeInvalidProfile, "audit.durability %q: a profile may only ask for %q", Truncate(a.Durability, 32), DurabilityStrict)
	}
	if a.Calls != "" && a.Calls != AuditCallsPerCall {
		return Errorf(CodeInvalidProfile, "audit.calls %q: a profile may only ask for %q", Truncate(a.Calls, 32), AuditCallsPerCall)
	}
	return nil
}

// Strict reports that the profile asks for the strict durability.
func (a *AuditRequest) Strict() bool { return a != nil && a.Durability == DurabilityStrict }

// PerCall reports that the profile asks for a record of each call.
func (a *AuditRequest) PerCall() bool { return a != nil && a.Calls == AuditCallsPerCall }

// AuditSyncer is what records that make commits durable in groups offer:
// SyncAudit returns once every record up to seq is on disk. The strict
// durability waits on it before an effect runs. The store implements it.
type AuditSyncer interface {
	SyncAudit(ctx context.Context, seq int64) error
}

// AuditAggregate is the one record a run leaves for all the calls of an
// aggregated operation (kind AuditAggregated). SHA256 covers the calls'
// contents in order, each as its length (8 bytes, big-endian) and its
// bytes, so the same calls always give the same hash and no two
// sequences of contents give the same input to it.
type AuditAggregate struct {
	Count  int64  `json:"count"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	First  int64  `json:"first"` // ms since the epoch, the first call
	Last   int64  `json:"last"`  // and the last
	// Failed counts the calls that were allowed and then failed.
	Failed int64 `json:"failed,omitempty"`
}

// AggregateHash is the SHA-256 an AuditAggregate names for contents.
func AggregateHash(contents ...string) string {
	h := sha256.New()
	for _, c := range contents {
		writeLengthPrefixed(h, c)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeLengthPrefixed(h hash.Hash, c string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(c)))
	h.Write(n[:])
	io.WriteString(h, c)
}

// RunAudit is how one run's records are kept: its durability and how its
// aggregated calls are recorded, resolved once by the run constructor
// from the host's config and the agent's profile.
type RunAudit struct {
	Strict  bool // every record of the run is fsynced before its effect, and before the run reports
	PerCall bool // aggregated operations get a record per call
}

// decidedBySafeClass is DecidedBy of a decision the safety class alone
// made: the only decisions an aggregate record stands for.
const decidedBySafeClass = "class:" + string(AlwaysSafe)

// aggregator sums one run's aggregated calls, per operation.
type aggregator struct {
	mu   sync.Mutex
	ops  map[string]*aggregate
	keys []string // operations in order of their first call
	now  func() time.Time
}

type aggregate struct {
	op  Operation
	sum AuditAggregate
	h   hash.Hash
	// done is what Authorize returns for each call: made once, so a
	// call allocates no closure.
	done func(error)
	// buf gathers length-prefixed contents for h, written in blocks: a
	// hash write per call costs more than the call's decision.
	buf []byte
}

// hashBlock is how much buf gathers before it is hashed.
const hashBlock = 4096

func (a *aggregate) write(c string) {
	a.buf = binary.BigEndian.AppendUint64(a.buf, uint64(len(c)))
	a.buf = append(a.buf, c...)
	if len(a.buf) >= hashBlock {
		a.h.Write(a.buf)
		a.buf = a.buf[:0]
	}
}

// add counts one allowed call of op carrying content.
func (g *aggregator) add(op *Operation) *aggregate {
	content := op.Content
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.ops[op.Name]
	ts := g.now().UnixMilli()
	if a == nil {
		if g.ops == nil {
			g.ops = map[string]*aggregate{}
		}
		a = &aggregate{buf: make([]byte, 0, hashBlock+64), op: Operation{AgentID: op.AgentID, Permission: op.Permission, Name: op.Name, SessionLevel: op.SessionLevel,
			Origin: op.Origin, Workflow: op.Workflow, Layer: op.Layer, Task: op.Task}, h: sha256.New()}
		a.sum.First = ts
		a.done = func(err error) {
			if err != nil {
				g.failed(a)
			}
		}
		g.ops[op.Name] = a
		g.keys = append(g.keys, op.Name)
	}
	a.sum.Count++
	a.sum.Bytes += int64(len(content))
	a.sum.Last = ts
	a.write(content)
	return a
}

func (g *aggregator) failed(a *aggregate) {
	g.mu.Lock()
	a.sum.Failed++
	g.mu.Unlock()
}

// entries returns the aggregate records and starts over.
func (g *aggregator) entries() []AuditEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]AuditEntry, 0, len(g.keys))
	for _, k := range g.keys {
		a := g.ops[k]
		sum := a.sum
		a.h.Write(a.buf)
		sum.SHA256 = hex.EncodeToString(a.h.Sum(nil))
		out = append(out, AuditEntry{Kind: AuditAggregated, Operation: a.op, Class: AlwaysSafe, Allowed: true, Code: CodeAllowed,
			DecidedBy: decidedBySafeClass, Reason: "safe: each call was decided alike; recorded once for the run", Aggregate: &sum})
	}
	g.ops, g.keys = nil, nil
	return out
}

// FactsVersioner is what records offer that can tell, without a query,
// whether anything may have been committed since a moment: the version
// changes with every commit of any process. ok is false when they cannot
// tell that cheaply. The store implements it.
type FactsVersioner interface {
	FactsVersion() (v uint64, ok bool)
}

// safeMemo remembers, for one run, the last aggregated call the safety
// class allowed and the records' version it was decided under. The next
// call of the same operation, same agent and level, under the same
// version, would read the same facts and get the same decision, so it
// is counted without deciding again. Any commit anywhere (a revocation, a
// remembered answer, a re-install, or only another run's audit record)
// moves the version and the next call is decided in full. The
// administrator's rules are still applied to every call.
type safeMemo struct {
	mu      sync.Mutex
	key     Operation // Content and TextLength cleared: they do not decide a log call
	version uint64
	rule    OperationRule
	valid   bool
}

// sameCall reports whether op is key but for what a call carries.
func sameCall(key, op *Operation) bool {
	content, n := op.Content, op.TextLength
	op.Content, op.TextLength = "", 0
	same := *key == *op
	op.Content, op.TextLength = content, n
	return same
}

func (m *safeMemo) get(op *Operation, v uint64) (OperationRule, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.valid || m.version != v || !sameCall(&m.key, op) {
		return OperationRule{}, false
	}
	return m.rule, true
}

func (m *safeMemo) set(op *Operation, v uint64, rule OperationRule) {
	m.mu.Lock()
	m.key, m.version, m.rule, m.valid = *op, v, rule, true
	m.key.Content, m.key.TextLength = "", 0
	m.mu.Unlock()
}
