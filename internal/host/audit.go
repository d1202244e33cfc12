package host

import (
	"context"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
)

// The audit trail's checkpoints for whoever keeps one outside the data dir:
// the extension keeps the newest it has seen in its own storage and, on
// each start, asks the host to prove that the log still extends it. A log
// truncated or rewritten behind the host's back (anyone who can write
// nmhost.db can) then shows as a break with its reason code, which the
// log alone could not show: a rewrite recomputes every hash.

// auditCheckpointReply is audit-checkpoint's data.
type auditCheckpointReply struct {
	// Checkpoint is the signed tree head (a note, as `nmhost audit
	// checkpoint` prints it): keep it and hand it to audit-consistency.
	Checkpoint string `json:"checkpoint"`
	Size       int64  `json:"size"` // records the checkpoint signs
	Time       int64  `json:"time"` // when it was signed, Unix ms
	// Key is the verifier key the checkpoint checks with (`nmhost audit
	// key`), for checking it without the host.
	Key string `json:"key"`
}

func handleAuditCheckpoint(ctx context.Context, s *server, req *request) (any, error) {
	var p struct{}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	signed, size, _, err := s.app.Audit().AuditCheckpoint(ctx)
	if err != nil {
		return nil, err
	}
	key, err := s.app.Audit().AuditVerifierKey()
	if err != nil {
		return nil, err
	}
	at, _ := app.CheckpointTime(signed)
	return auditCheckpointReply{Checkpoint: string(signed), Size: size, Time: unixMilli(at), Key: key}, nil
}

// auditConsistencyReply is audit-consistency's data: the log extends the
// checkpoint given. Any break is an error with its reason code instead.
type auditConsistencyReply struct {
	Consistent bool  `json:"consistent"` // always true: a break is an error
	OldSize    int64 `json:"oldSize"`    // records the given checkpoint signed
	// Since is when the given checkpoint was signed (Unix ms): the log has
	// only grown since then. 0 when the checkpoint does not say.
	Since int64 `json:"since"`
	// Size, Time and Checkpoint are the present head, signed, proved to
	// extend the given one: the checkpoint to keep from now on.
	Size       int64  `json:"size"`
	Time       int64  `json:"time"`
	Checkpoint string `json:"checkpoint"`
}

func handleAuditConsistency(ctx context.Context, s *server, req *request) (any, error) {
	var p struct {
		Checkpoint string `json:"checkpoint"`
	}
	if err := req.decode(&p); err != nil {
		return nil, err
	}
	ext, err := s.app.Audit().CheckAuditCheckpoint(ctx, []byte(p.Checkpoint))
	if err != nil {
		switch code := mediator.CodeOf(err); code {
		case mediator.CodeAuditBadSignature, mediator.CodeAuditTruncated, mediator.CodeAuditInconsistent:
			s.log.Warn("audit trail broken", "code", code, "err", err, "origin", s.opts.Caller.Origin)
		}
		return nil, err
	}
	return auditConsistencyReply{
		Consistent: true, OldSize: ext.OldSize, Since: unixMilli(ext.OldTime),
		Size: ext.Size, Time: unixMilli(ext.Time), Checkpoint: string(ext.Checkpoint),
	}, nil
}

// unixMilli is t in Unix ms, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
