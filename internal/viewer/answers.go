package viewer

import (
	"net/http"
	"net/url"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
)

// The remembered answers, as `nmhost prefs` and the options page show
// them: list (with scope, end, last use and code), revoke, and the
// allow-and-log digest.

// agentParam reads the one optional agentId parameter; anything else in
// the query is refused, so a misspelt filter never widens the list.
func agentParam(q url.Values) (string, error) {
	agent := ""
	for key, vals := range q {
		if key != "agentId" || len(vals) != 1 {
			return "", mediator.Errorf(mediator.CodeBadRequest, "the only parameter is agentId, once (not %q)", clip(key, 32))
		}
		agent = vals[0]
	}
	if agent != "" {
		if err := mediator.ValidAgentID(agent); err != nil {
			return "", err
		}
	}
	return agent, nil
}

func (s *Server) handlePreferences(w http.ResponseWriter, r *http.Request) {
	agent, err := agentParam(r.URL.Query())
	if err != nil {
		writeError(w, 0, err)
		return
	}
	prefs, err := s.app.Answers().ListPreferences(r.Context(), agent)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "preferences": prefs})
}

func (s *Server) handlePreferenceDigest(w http.ResponseWriter, r *http.Request) {
	agent, err := agentParam(r.URL.Query())
	if err != nil {
		writeError(w, 0, err)
		return
	}
	d, err := s.app.Answers().AllowAndLogDigest(r.Context(), agent)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	if d == nil {
		d = []app.LoggedUses{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "digest": d})
}

// handleRevokePreference forgets one answer; the body, read exactly, is
// {"preferenceId": N}.
func (s *Server) handleRevokePreference(w http.ResponseWriter, r *http.Request) {
	var body struct {
		PreferenceID int64 `json:"preferenceId"`
	}
	if err := readJSON(w, r, &body); err != nil {
		writeError(w, 0, err)
		return
	}
	if body.PreferenceID <= 0 {
		writeError(w, 0, mediator.Errorf(mediator.CodeBadRequest, "preferenceId must be an id from /api/preferences"))
		return
	}
	revoked, err := s.app.Answers().RevokePreference(r.Context(), body.PreferenceID)
	if err != nil {
		writeError(w, 0, err)
		return
	}
	s.log.Info("remembered answer revoked from the viewer", "preference", body.PreferenceID, "existed", revoked)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "preferenceId": body.PreferenceID, "revoked": revoked})
}
