package viewer

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
)

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.handleIndex)
	m.Handle("GET /static/", staticHandler())
	m.HandleFunc("GET /ws", s.handleWS)
	m.HandleFunc("GET /api/denials", s.handleDenials)
	m.HandleFunc("GET /api/denials/export", s.handleExport)
	m.HandleFunc("GET /api/agents", s.handleAgents)
	m.HandleFunc("GET /api/agents/{id}", s.handleAgent)
	m.HandleFunc("POST /api/agents/{id}/revoke", s.handleRevoke)
	m.HandleFunc("GET /api/preferences", s.handlePreferences)
	m.HandleFunc("GET /api/preferences/digest", s.handlePreferenceDigest)
	m.HandleFunc("POST /api/preferences/revoke", s.handleRevokePreference)
	m.HandleFunc("GET /api/sessions/{id}/settings", s.handleGetSettings)
	m.HandleFunc("PUT /api/sessions/{id}/settings", s.handlePutSettings)
	m.HandleFunc("GET /api/audit", s.handleAuditRecords)
	m.HandleFunc("GET /api/audit/checkpoint", s.handleAuditCheckpoint)
	m.HandleFunc("POST /api/audit/consistency", s.handleAuditConsistency)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, mediator.Errorf(mediator.CodeBadRequest, "no API %s %s", r.Method, clip(r.URL.Path, 64)))
	})
	s.mux = m
}

// apiError is the body of every refused API request. "error" carries the
// reason for clients that read only that.
type apiError struct {
	OK    bool          `json:"ok"`
	Code  mediator.Code `json:"code"`
	Error string        `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"ok":false,"code":"internal_error","error":"encoding the reply failed"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeError answers with err's reason code. status 0 derives the HTTP
// status from the code.
func writeError(w http.ResponseWriter, status int, err error) {
	code := mediator.CodeOf(err)
	if status == 0 {
		status = statusOf(code)
	}
	writeJSON(w, status, apiError{Code: code, Error: err.Error()})
}

func statusOf(code mediator.Code) int {
	switch code {
	case mediator.CodeUnknownSession, mediator.CodeUnknownAgent:
		return http.StatusNotFound
	case mediator.CodeUnauthorized:
		return http.StatusUnauthorized
	case mediator.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case mediator.CodeInternal:
		return http.StatusInternalServerError
	case mediator.CodeTimeout:
		return http.StatusServiceUnavailable
	case mediator.CodeAuditBadSignature, mediator.CodeAuditTruncated, mediator.CodeAuditInconsistent:
		return http.StatusConflict // the log and the checkpoint sent disagree
	}
	return http.StatusBadRequest
}

// readJSON reads a bounded JSON request body into v, refusing a wrong
// content type (which also keeps HTML forms out), an oversized body,
// unknown fields and trailing data.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return mediator.Errorf(mediator.CodeBadRequest, "the body must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return mediator.Errorf(mediator.CodeTooLarge, "the body is over %d bytes", MaxBodyBytes)
	}
	if err != nil {
		return mediator.Errorf(mediator.CodeBadRequest, "reading the body: %v", err)
	}
	if err := mediator.DecodeExact(body, v); err != nil {
		return mediator.Errorf(mediator.CodeBadRequest, "malformed JSON body (names match exactly; no unknown, repeated or case-variant members): %v", err)
	}
	return nil
}

// denialQuery is a parsed /api/denials query: the store's filter plus a
// text search the store has no index for.
type denialQuery struct {
	filter app.DenialFilter
	search string
}

// parseDenialQuery parses the list-denials filters from a query string.
// Unknown parameters are refused: a misspelt filter must not silently
// widen the view to everything.
func parseDenialQuery(q url.Values, now time.Time) (denialQuery, error) {
	var dq denialQuery
	f := &dq.filter
	for key, vals := range q {
		v := vals[0]
		if len(vals) > 1 {
			return dq, mediator.Errorf(mediator.CodeBadRequest, "parameter %q is given %d times", clip(key, 32), len(vals))
		}
		var err error
		switch key {
		case "format":
			// The export's; not a filter.
		case "agentId", "agent":
			f.AgentID = v
		case "permission":
			f.Permission = v
		case "code":
			f.Code = mediator.Code(v)
		case "q":
			if len(v) > 256 {
				return dq, mediator.Errorf(mediator.CodeBadRequest, "q is over 256 bytes")
			}
			dq.search = strings.ToLower(v)
		case "since":
			f.Since, err = app.ParseFilterTime(v, now)
		case "until":
			f.Until, err = app.ParseFilterTime(v, now)
		case "beforeId":
			f.BeforeID, err = parseID(v)
		case "afterId":
			f.AfterID, err = parseID(v)
		case "limit":
			var n int64
			n, err = strconv.ParseInt(v, 10, 32)
			if err == nil && (n < 1 || n > app.MaxDenialPage) {
				err = fmt.Errorf("must be 1-%d", app.MaxDenialPage)
			}
			f.Limit = int(n)
		default:
			return dq, mediator.Errorf(mediator.CodeBadRequest, "unknown parameter %q", clip(key, 32))
		}
		if err != nil {
			return dq, mediator.Errorf(mediator.CodeBadRequest, "parameter %s=%q: %v", key, clip(v, 40), err)
		}
	}
	return dq, nil
}

func parseID(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("must be a non-negative integer")
	}
	return n, nil
}

// matches is the text search: a case-insensitive substring of any field a
// person reads in the table. The viewer's live tail applies the same rule.
func (dq denialQuery) matches(d mediator.Denial) bool {
	if dq.search == "" {
		return true
	}
	fields := []string{d.AgentID, d.Permission, string(d.Code), d.Context.URL, d.Context.Reason, d.Context.Method, d.Context.Layer}
	for _, v := range d.Context.Details {
		fields = append(fields, v)
	}
	for _, f := range fields {
		if strings.Contains(strings.ToLower(f), dq.search) {
			return true
		}
	}
	return false
}

// searchScanLimit bounds the records one searched page reads; past it the
// page ends early with a cursor to continue. A search has no index, and one
// request must not scan a million rows.
const searchScanLimit = 20_000

// page returns one page of matching denials. Without a search this is one
// store query; with one it reads store pages until the page is full or the
// scan budget is spent.
func (s *Server) page(r *http.Request, dq denialQuery) (app.DenialPage, error) {
	if dq.search == "" {
		return s.app.Denials().ListDenials(r.Context(), dq.filter)
	}
	want := dq.filter.Limit
	if want <= 0 {
		want = app.DefaultDenialPage
	}
	f := dq.filter
	f.Limit = app.MaxDenialPage
	out := app.DenialPage{Denials: []mediator.Denial{}}
	scanned := 0
	for {
		p, err := s.app.Denials().ListDenials(r.Context(), f)
		if err != nil {
			return app.DenialPage{}, err
		}
		for i, d := range p.Denials {
			if !dq.matches(d) {
				continue
			}
			out.Denials = append(out.Denials, d)
			if len(out.Denials) == want {
				if f.AfterID == 0 && (i < len(p.Denials)-1 || p.NextBeforeID != 0) {
					out.NextBeforeID = d.ID
				}
				return out, nil
			}
		}
		scanned += len(p.Denials)
		if f.AfterID > 0 {
			if len(p.Denials) < app.MaxDenialPage {
				return out, nil
			}
			f.AfterID = p.Denials[len(p.Denials)-1].ID
		} else {
			if p.NextBeforeID == 0 {
				return out, nil
			}
			f.BeforeID = p.NextBeforeID
		}
		if scanned >= searchScanLimit {
			// Out of budget: the cursor continues where the scan stopped.
			if f.AfterID == 0 {
				out.NextBeforeID = f.BeforeID
			}
			return out, nil
		}
	}
}

func (s *Server) handleDenials(w http.ResponseWriter, r *http.Request) {
	dq, err := parseDenialQuery(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, 0, err)
		return
	}
	p, err := s.page(r, dq)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// handleExport streams every denial the filters select, newest first, as
// JSON lines or CSV. It pages through the store, so memory stays flat
// however many records match.
func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	dq, err := parseDenialQuery(r.URL.Query(), time.Now())
	if err != nil {
		writeError(w, 0, err)
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "jsonl"
	}
	if format != "jsonl" && format != "csv" {
		writeError(w, 0, mediator.Errorf(mediator.CodeBadRequest, "format must be jsonl or csv"))
		return
	}
	if dq.filter.AfterID > 0 {
		writeError(w, 0, mediator.Errorf(mediator.CodeBadRequest, "an export pages newest first; use beforeId, not afterId"))
		return
	}
	dq.filter.Limit = app.MaxDenialPage
	// Fetch the first page before committing to a 200.
	p, err := s.app.Denials().ListDenials(r.Context(), dq.filter)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	name := "nmhost-denials-" + time.Now().UTC().Format("20060102-150405") + "." + format
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	var cw *bufio.Writer
	enc := json.NewEncoder(w)
	if format == "csv" {
		cw = bufio.NewWriter(w)
		csvRow(cw, "id", "time", "agent", "permission", "code", "target", "reason", "layer", "method")
	}
	for {
		for _, d := range p.Denials {
			if !dq.matches(d) {
				continue
			}
			if cw != nil {
				csvRow(cw,
					strconv.FormatInt(d.ID, 10), time.UnixMilli(d.Timestamp).UTC().Format(time.RFC3339Nano),
					csvSafe(d.AgentID), csvSafe(d.Permission), csvSafe(string(d.Code)), csvSafe(target(d)),
					csvSafe(d.Context.Reason), csvSafe(d.Context.Layer), csvSafe(d.Context.Method),
				)
			} else if err := enc.Encode(d); err != nil {
				return
			}
		}
		if cw != nil && cw.Flush() != nil {
			return
		}
		if p.NextBeforeID == 0 {
			return
		}
		dq.filter.BeforeID = p.NextBeforeID
		if p, err = s.app.Denials().ListDenials(r.Context(), dq.filter); err != nil {
			s.log.Warn("export cut short", "err", err)
			return
		}
	}
}

// target is what a denial refused: the URL, else the operation.
func target(d mediator.Denial) string {
	if d.Context.URL != "" {
		return d.Context.URL
	}
	if op := d.Context.Details["operation"]; op != "" {
		return op
	}
	return d.Context.Details["import"]
}

func (s *Server) handleAgents(w http.ResponseWriter, r *http.Request) {
	agents, err := s.app.Agents().ListAgents(r.Context())
	if err != nil {
		writeError(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": agents})
}

func (s *Server) handleAgent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := mediator.ValidAgentID(id); err != nil {
		writeError(w, http.StatusNotFound, mediator.Errorf(mediator.CodeUnknownAgent, "no agent %q", clip(id, 64)))
		return
	}
	rec, err := s.app.Agents().Agent(r.Context(), id)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body struct {
		Permission string `json:"permission"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, 0, err)
		return
	}
	perm, err := mediator.ParsePermission(body.Permission)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	revoked, err := s.app.Revoke(r.Context(), id, perm)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	rec, err := s.app.Agents().Agent(r.Context(), id)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	s.log.Info("grant revoked from the viewer", "agent", id, "permission", perm, "existed", revoked)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "revoked": revoked, "agent": rec})
}

// settingsReply is the body of both settings endpoints.
type settingsReply struct {
	OK        bool                     `json:"ok"`
	SessionID string                   `json:"sessionId"`
	Settings  mediator.SessionSettings `json:"settings"`
}

// MarshalJSON answers in both spellings: the project's camelCase names and
// the session API's published ones (session_id, permission_level,
// root_dir), so a client written to either contract reads its own.
func (r settingsReply) MarshalJSON() ([]byte, error) {
	type workspace struct {
		Mode             string `json:"mode"`
		RootDir          string `json:"rootDir"`
		RootDirPublished string `json:"root_dir"`
	}
	type settings struct {
		PermissionLevel          string    `json:"permissionLevel"`
		PermissionLevelPublished string    `json:"permission_level"`
		Workspace                workspace `json:"workspace"`
	}
	set := r.Settings
	return json.Marshal(struct {
		OK                 bool     `json:"ok"`
		SessionID          string   `json:"sessionId"`
		SessionIDPublished string   `json:"session_id"`
		Settings           settings `json:"settings"`
	}{r.OK, r.SessionID, r.SessionID, settings{set.PermissionLevel, set.PermissionLevel,
		workspace{set.Workspace.Mode, set.Workspace.RootDir, set.Workspace.RootDir}}})
}

func (s *Server) handleGetSettings(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	set, err := s.app.Sessions().SessionSettings(r.Context(), id)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsReply{OK: true, SessionID: id, Settings: set})
}

func (s *Server) handlePutSettings(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := mediator.ValidSessionID(id); err != nil {
		writeError(w, 0, err)
		return
	}
	var body struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, 0, err)
		return
	}
	if len(body.Settings) == 0 {
		writeError(w, 0, mediator.Errorf(mediator.CodeBadRequest, `the body must be {"settings":{...}}`))
		return
	}
	set, err := s.app.UpdateSessionSettings(r.Context(), id, body.Settings)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	s.log.Info("session settings changed", "session", id, "level", set.PermissionLevel)
	writeJSON(w, http.StatusOK, settingsReply{OK: true, SessionID: id, Settings: set})
}
