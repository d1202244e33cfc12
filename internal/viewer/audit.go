package viewer

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
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

// The audit page: the records themselves, newest first by default, a
// page at a time, so a person can open the "audit trail consistent" line
// and read what it covers.

// auditQuery is GET /api/audit's parameters: afterSeq (records after it,
// oldest first), limit (1..app.MaxDenialPage, default 100), tail ("1":
// the newest limit records). Each at most once; any other is refused.
type auditQuery struct {
	afterSeq int64
	limit    int
	tail     bool
}

func parseAuditQuery(q url.Values) (auditQuery, error) {
	aq := auditQuery{limit: 100}
	for key, vals := range q {
		if len(vals) > 1 {
			return aq, mediator.Errorf(mediator.CodeBadRequest, "parameter %q is given %d times", clip(key, 32), len(vals))
		}
		v := vals[0]
		switch key {
		case "afterSeq":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return aq, mediator.Errorf(mediator.CodeBadRequest, "afterSeq must be a whole number >= 0")
			}
			aq.afterSeq = n
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > app.MaxDenialPage {
				return aq, mediator.Errorf(mediator.CodeBadRequest, "limit must be in 1..%d", app.MaxDenialPage)
			}
			aq.limit = n
		case "tail":
			if v != "1" && v != "0" {
				return aq, mediator.Errorf(mediator.CodeBadRequest, "tail must be 1 or 0")
			}
			aq.tail = v == "1"
		default:
			return aq, mediator.Errorf(mediator.CodeBadRequest, "unknown parameter %q", clip(key, 32))
		}
	}
	if aq.tail && aq.afterSeq != 0 {
		return aq, mediator.Errorf(mediator.CodeBadRequest, "tail and afterSeq do not go together")
	}
	return aq, nil
}

func (s *Server) handleAuditRecords(w http.ResponseWriter, r *http.Request) {
	aq, err := parseAuditQuery(r.URL.Query())
	if err != nil {
		writeError(w, 0, err)
		return
	}
	page, err := s.app.Audit().ListAudit(r.Context(), aq.afterSeq, aq.limit, aq.tail)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
