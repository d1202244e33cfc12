package app

import (
	"context"
	"time"

	"github.com/agentgate/nmhost/auditlog"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
	"golang.org/x/mod/sumdb/tlog"
)

// The records a front end reads, and the few it writes that carry no
// rule of their own, each group a narrow view of the store: a front end
// holds the views it needs and can call nothing else. Grants, installs,
// a session's settings and the administrator's rules are the App's own
// operations, never a view's.

// Agents reads the installed agents.
type Agents interface {
	Agent(ctx context.Context, id string) (mediator.AgentRecord, error)
	ListAgents(ctx context.Context) ([]mediator.AgentRecord, error)
	UninstallAgent(ctx context.Context, id string) error
	AgentModule(ctx context.Context, agentID string) (mediator.AgentRecord, []byte, error)
	Revocations(ctx context.Context, agentID string) ([]mediator.Permission, error)
}

// Sessions reads sessions and opens their runs and workspaces.
type Sessions interface {
	SessionSettings(ctx context.Context, id string) (mediator.SessionSettings, error)
	ListSessions(ctx context.Context) ([]SessionInfo, error)
	OpenWorkspace(id string) (*workspace.Workspace, error)
	OpenRun(ctx context.Context, id, asked string) (Run, error)
	RunSession(ctx context.Context, id, asked string) (string, string, error)
	DeleteEphemeralSession(ctx context.Context, id string) error
	SessionWorkspaceDir(id string) string
}

// Answers reads and takes back the person's remembered answers.
type Answers interface {
	ListPreferences(ctx context.Context, agentID string) ([]mediator.Preference, error)
	RevokePreference(ctx context.Context, id int64) (bool, error)
	AllowAndLogDigest(ctx context.Context, agentID string) ([]LoggedUses, error)
}

// Audit reads the audit trail, signs and checks its checkpoints, and
// proves its records.
type Audit interface {
	ListAudit(ctx context.Context, afterSeq int64, limit int, tail bool) (AuditPage, error)
	VerifyAudit(ctx context.Context, checkpoint ...[]byte) (AuditReport, error)
	AuditCheckpoint(ctx context.Context) (signed []byte, size int64, root tlog.Hash, err error)
	CheckAuditCheckpoint(ctx context.Context, cp []byte) (AuditExtension, error)
	AuditVerifierKey() (string, error)
	ProveAuditInclusion(ctx context.Context, seq int64) (auditlog.Proof, error)
}

// Denials reads and writes the denial log (a denial carries its audit
// record).
type Denials interface {
	ListDenials(ctx context.Context, f DenialFilter) (DenialPage, error)
	LogDenial(ctx context.Context, d mediator.Denial) (mediator.Denial, error)
}

// Memory is the sessions' memory.
type Memory interface {
	WriteMemory(ctx context.Context, sessionID, text string, tags []string) (int64, error)
	SearchMemory(ctx context.Context, sessionID, query string, limit int) ([]mediator.MemoryHit, error)
	MemoryEntries(ctx context.Context, sessionID string) (int, error)
}

// The views of this App's store.
func (a *App) Agents() Agents     { return a.st }
func (a *App) Sessions() Sessions { return a.st }
func (a *App) Answers() Answers   { return a.st }
func (a *App) Audit() Audit       { return a.st }
func (a *App) Denials() Denials   { return a.st }
func (a *App) Memory() Memory     { return a.st }

// The record types the views speak.
type (
	DenialFilter   = store.DenialFilter
	DenialPage     = store.DenialPage
	LoggedUses     = store.LoggedUses
	Run            = store.Run
	SessionInfo    = store.SessionInfo
	AuditPage      = store.AuditPage
	AuditReport    = store.AuditReport
	AuditExtension = store.AuditExtension
)

// Bounds and names of the records.
const (
	MaxDenialPage     = store.MaxDenialPage
	DefaultDenialPage = store.DefaultDenialPage
	DBFileName        = store.DBFileName
	MemoryDBFileName  = store.MemoryDBFileName
)

// ParseFilterTime reads a denial filter's time (store.ParseFilterTime).
func ParseFilterTime(s string, now time.Time) (int64, error) { return store.ParseFilterTime(s, now) }

// CheckpointTime is when a signed checkpoint says it was signed.
func CheckpointTime(signed []byte) (time.Time, bool) { return store.CheckpointTime(signed) }

// NewSessionID is a fresh session id.
func NewSessionID() string { return store.NewSessionID() }

// ExportRecords is what nmhost export reads: the trail's records and the
// denial log after a cursor, a fresh checkpoint, and the data dir for the
// cursor file.
type ExportRecords interface {
	Dir() string
	AuditVerifierKey() (string, error)
	AuditCheckpoint(ctx context.Context) (signed []byte, size int64, root tlog.Hash, err error)
	ListAuditBodies(ctx context.Context, afterSeq, throughSeq int64, limit int) ([]AuditExportRecord, error)
	ListDenialsAfter(ctx context.Context, afterID int64, limit int) ([]mediator.Denial, error)
}

// Export is the view nmhost export reads through (internal/app/export).
func (a *App) Export() ExportRecords { return a.st }

// AuditExportRecord is one record as the export sends it.
type AuditExportRecord = store.AuditExportRecord
