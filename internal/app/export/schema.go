package export

import (
	"encoding/base64"
	"strings"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// Attribute names: a contract with whoever queries the collector's side
// (docs/fleet.md has the table). Rename none of them; add new ones.
const (
	AttrKind          = "nmhost.record.kind" // decision, executed, aggregate, uninstall, denial, checkpoint
	AttrSeq           = "nmhost.seq"         // audit records: the record's seq, the dedupe key
	AttrHash          = "nmhost.audit.hash"  // audit records: the chain hash
	AttrRef           = "nmhost.ref"         // executed: the decision's seq
	AttrAgent         = "nmhost.agent"
	AttrSession       = "nmhost.session" // denials that name their session
	AttrSessionLevel  = "nmhost.session.level"
	AttrOperation     = "nmhost.operation"
	AttrPermission    = "nmhost.permission"
	AttrClass         = "nmhost.class"
	AttrMethod        = "nmhost.target.method"
	AttrURL           = "nmhost.target.url"
	AttrHost          = "nmhost.target.host"
	AttrPath          = "nmhost.target.path"
	AttrOrigin        = "nmhost.target.origin"
	AttrSelector      = "nmhost.target.selector"
	AttrDecision      = "nmhost.decision" // allowed or denied
	AttrOutcome       = "nmhost.outcome"  // executed: ok or failed
	AttrCode          = "nmhost.reason_code"
	AttrReason        = "nmhost.reason"
	AttrError         = "nmhost.error"
	AttrDecidedBy     = "nmhost.decided_by"
	AttrDecidedSource = "nmhost.decided_by.source" // the part of decided_by before ':'
	AttrWorkflow      = "nmhost.workflow"
	AttrTask          = "nmhost.workflow.task"
	AttrDenialID      = "nmhost.denial.id"
	AttrDenialSeq     = "nmhost.denial.audit_seq" // the seq of the denial's decision record
	AttrLayer         = "nmhost.denial.layer"
	AttrCPSize        = "nmhost.checkpoint.size"
	AttrCPRoot        = "nmhost.checkpoint.root"
	AttrCPNote        = "nmhost.checkpoint.note"
	AttrVerifierKey   = "nmhost.audit.verifier_key" // resource: whose log this is
	// aggregate records: one run's calls of an operation recorded once
	AttrAggCount  = "nmhost.aggregate.count"
	AttrAggBytes  = "nmhost.aggregate.bytes"
	AttrAggSHA256 = "nmhost.aggregate.sha256" // over the calls' length-prefixed contents
	AttrAggFirst  = "nmhost.aggregate.first"  // ms since the epoch
	AttrAggLast   = "nmhost.aggregate.last"
	AttrAggFailed = "nmhost.aggregate.failed"
)

// Event names (LogRecord.event_name).
const (
	EventPrefix     = "nmhost.audit."
	EventDenial     = "nmhost.denial"
	EventCheckpoint = "nmhost.audit.checkpoint"
)

// ScopeName names the instrumentation scope every record is shipped under.
// It is a contract with the collectors that filter on it (docs/fleet.md),
// so it keeps the package's first path although the package moved under
// the core.
const ScopeName = "github.com/agentgate/nmhost/internal/export"

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}

// attrs collects attributes, leaving out the empty ones: an absent
// attribute means the record does not have it, never "".
type attrs []*commonpb.KeyValue

func (a *attrs) s(k, v string) {
	if v != "" {
		*a = append(*a, str(k, v))
	}
}

func (a *attrs) n(k string, v int64) {
	if v != 0 {
		*a = append(*a, num(k, v))
	}
}

// source is the kind of rule that decided: "grant" of "grant:network.fetch".
func source(decidedBy string) string {
	s, _, _ := strings.Cut(decidedBy, ":")
	return s
}

func verdict(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

func (a *attrs) operation(op mediator.Operation) {
	a.s(AttrAgent, op.AgentID)
	a.s(AttrSessionLevel, op.SessionLevel)
	a.s(AttrOperation, op.Name)
	a.s(AttrPermission, string(op.Permission))
	a.s(AttrMethod, op.Method)
	a.s(AttrURL, op.URL)
	a.s(AttrHost, op.Host)
	a.s(AttrPath, op.Path)
	a.s(AttrOrigin, op.Origin)
	a.s(AttrSelector, op.Selector)
	a.s(AttrWorkflow, op.Workflow)
	a.s(AttrTask, op.Task)
}

// auditLog is one audit record as an OTLP log record. Its body is the
// exact text that was hashed into the chain and the tree, so a receiver
// holding the bodies and a checkpoint can recompute the tree head.
func auditLog(r store.AuditExportRecord, observed uint64) *logspb.LogRecord {
	a := attrs{str(AttrKind, r.Kind), num(AttrSeq, r.Seq)}
	a.s(AttrHash, r.Hash)
	a.operation(r.Operation)
	a.s(AttrClass, string(r.Class))
	sev := logspb.SeverityNumber_SEVERITY_NUMBER_INFO
	switch r.Kind {
	case mediator.AuditExecuted:
		a.n(AttrRef, r.Ref)
		outcome := "ok"
		if r.Code != "" || r.Error != "" {
			outcome, sev = "failed", logspb.SeverityNumber_SEVERITY_NUMBER_WARN
		}
		a.s(AttrOutcome, outcome)
		a.s(AttrError, r.Error)
	case mediator.AuditAggregated:
		a.s(AttrDecision, verdict(r.Allowed))
		if g := r.Aggregate; g != nil {
			a.n(AttrAggCount, g.Count)
			a.n(AttrAggBytes, g.Bytes)
			a.s(AttrAggSHA256, g.SHA256)
			a.n(AttrAggFirst, g.First)
			a.n(AttrAggLast, g.Last)
			a.n(AttrAggFailed, g.Failed)
		}
	default:
		a.s(AttrDecision, verdict(r.Allowed))
		if !r.Allowed {
			sev = logspb.SeverityNumber_SEVERITY_NUMBER_WARN
		}
	}
	a.s(AttrCode, string(r.Code))
	a.s(AttrReason, r.Reason)
	a.s(AttrDecidedBy, r.DecidedBy)
	a.s(AttrDecidedSource, source(r.DecidedBy))
	return &logspb.LogRecord{
		TimeUnixNano:         uint64(r.TS) * 1e6,
		ObservedTimeUnixNano: observed,
		SeverityNumber:       sev,
		SeverityText:         sev.String()[len("SEVERITY_NUMBER_"):],
		EventName:            EventPrefix + r.Kind,
		Body:                 &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: string(r.Body)}},
		Attributes:           a,
	}
}

// denialLog is one denial as an OTLP log record: the decision's attributes
// as its audit record names them (mediator.Denial.AuditEntry), plus the
// denial's own id and its decision record's seq.
func denialLog(d mediator.Denial, observed uint64) *logspb.LogRecord {
	e := d.AuditEntry()
	a := attrs{str(AttrKind, "denial"), num(AttrDenialID, d.ID)}
	a.n(AttrDenialSeq, d.AuditSeq)
	a.operation(e.Operation)
	a.s(AttrSession, d.Context.Details["session"])
	a.s(AttrClass, string(e.Class))
	a.s(AttrDecision, "denied")
	a.s(AttrCode, string(d.Code))
	a.s(AttrReason, d.Context.Reason)
	a.s(AttrDecidedBy, e.DecidedBy)
	a.s(AttrDecidedSource, source(e.DecidedBy))
	a.s(AttrLayer, d.Context.Layer)
	sev := logspb.SeverityNumber_SEVERITY_NUMBER_WARN
	return &logspb.LogRecord{
		TimeUnixNano:         uint64(d.Timestamp) * 1e6,
		ObservedTimeUnixNano: observed,
		SeverityNumber:       sev,
		SeverityText:         "WARN",
		EventName:            EventDenial,
		Body:                 &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: d.Context.Reason}},
		Attributes:           a,
	}
}

// checkpointLog is a signed tree head as an OTLP log record: the note
// text as signed, its size and root. A receiver that holds records 1..size
// checks them against it (docs/fleet.md).
func checkpointLog(note []byte, size int64, root []byte, observed uint64) *logspb.LogRecord {
	a := attrs{str(AttrKind, "checkpoint"), num(AttrCPSize, size), str(AttrCPNote, string(note))}
	a.s(AttrCPRoot, base64.StdEncoding.EncodeToString(root))
	return &logspb.LogRecord{
		TimeUnixNano:         observed,
		ObservedTimeUnixNano: observed,
		SeverityNumber:       logspb.SeverityNumber_SEVERITY_NUMBER_INFO,
		SeverityText:         "INFO",
		EventName:            EventCheckpoint,
		Body:                 &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: string(note)}},
		Attributes:           a,
	}
}

// resource names the machine and log every record of a request comes
// from: the verifier key tells one host's log from another's.
func resource(version, hostname, vkey string) *resourcepb.Resource {
	a := attrs{str("service.name", "nmhost")}
	a.s("service.version", version)
	a.s("host.name", hostname)
	a.s(AttrVerifierKey, vkey)
	return &resourcepb.Resource{Attributes: a}
}

// request wraps records in the OTLP envelope. LogsData is, by the OTLP
// protocol's definition, wire-compatible with ExportLogsServiceRequest
// (both are field 1, repeated ResourceLogs); marshalling it spares the
// exporter the collector service package, which links gRPC.
func request(res *resourcepb.Resource, recs []*logspb.LogRecord) *logspb.LogsData {
	return &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  res,
		ScopeLogs: []*logspb.ScopeLogs{{Scope: &commonpb.InstrumentationScope{Name: ScopeName}, LogRecords: recs}},
	}}}
}
