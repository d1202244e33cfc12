package viewer

import (
	"net/http"
	"time"

	"github.com/agentgate/nmhost/internal/app"
)

// The audit trail's checkpoint for the viewer page: the page keeps the
// newest checkpoint it has seen in its browser's localStorage and, when it
// loads, asks the server to prove that the log still extends it, the same
// check the extension makes through audit-consistency (docs/viewer.md,
// "Audit trail consistent since").

// auditCheckpointReply is GET /api/audit/checkpoint's body.
type auditCheckpointReply struct {
	OK         bool   `json:"ok"`
	Checkpoint string `json:"checkpoint"` // the signed tree head, a note
	Size       int64  `json:"size"`       // records it signs
	Time       int64  `json:"time"`       // when it was signed, Unix ms
	Key        string `json:"key"`        // the verifier key it checks with
}

func (s *Server) handleAuditCheckpoint(w http.ResponseWriter, r *http.Request) {
	signed, size, _, err := s.app.Audit().AuditCheckpoint(r.Context())
	if err != nil {
		writeError(w, 0, err)
		return
	}
	key, err := s.app.Audit().AuditVerifierKey()
	if err != nil {
		writeError(w, 0, err)
		return
	}
	at, _ := app.CheckpointTime(signed)
	writeJSON(w, http.StatusOK, auditCheckpointReply{OK: true, Checkpoint: string(signed), Size: size, Time: unixMilli(at), Key: key})
}

// auditConsistencyReply is POST /api/audit/consistency's body when the log
// extends the checkpoint sent; a break is a 409 with its reason code.
type auditConsistencyReply struct {
	OK         bool   `json:"ok"`
	Consistent bool   `json:"consistent"`
	OldSize    int64  `json:"oldSize"`    // records the checkpoint sent signed
	Since      int64  `json:"since"`      // when it was signed, Unix ms; 0 when it does not say
	Size       int64  `json:"size"`       // records the log holds now
	Time       int64  `json:"time"`       // when Checkpoint was signed
	Checkpoint string `json:"checkpoint"` // the present head, proved to extend the one sent: keep it
}

// handleAuditConsistency takes {"checkpoint": "<note>"}. It changes
// nothing, but it is a POST (a checkpoint does not belong in a URL), so it
// passes the same-origin check of state changes as well as the token's.
func (s *Server) handleAuditConsistency(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Checkpoint string `json:"checkpoint"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, 0, err)
		return
	}
	ext, err := s.app.Audit().CheckAuditCheckpoint(r.Context(), []byte(body.Checkpoint))
	if err != nil {
		s.log.Warn("audit checkpoint refused", "err", err)
		writeError(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, auditConsistencyReply{
		OK: true, Consistent: true, OldSize: ext.OldSize, Since: unixMilli(ext.OldTime),
		Size: ext.Size, Time: unixMilli(ext.Time), Checkpoint: string(ext.Checkpoint),
	})
}

// unixMilli is t in Unix ms, 0 for the zero time.
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
