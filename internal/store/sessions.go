package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// MaxSessionPatchBytes bounds a settings patch; real ones are under 200 bytes.
const MaxSessionPatchBytes = 16 << 10

// SessionSettings returns the settings of session id; unknown_session when
// it has none. Sessions come into being with their first
// UpdateSessionSettings, so a mistyped id is an error, not a fresh session.
func (s *Store) SessionSettings(ctx context.Context, id string) (mediator.SessionSettings, error) {
	if err := mediator.ValidSessionID(id); err != nil {
		return mediator.SessionSettings{}, err
	}
	var raw string
	err := s.db.QueryRowContext(ctx, `SELECT settings FROM session_settings WHERE session_id = ?`, id).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return mediator.SessionSettings{}, mediator.Errorf(mediator.CodeUnknownSession, "session %q has no settings; PUT them first", id)
	}
	if err != nil {
		return mediator.SessionSettings{}, fmt.Errorf("session[%s]: %w", id, storeErr("read settings", err))
	}
	var set mediator.SessionSettings
	if err := json.Unmarshal([]byte(raw), &set); err != nil {
		return mediator.SessionSettings{}, fmt.Errorf("session[%s]: %w", id, storeErr("decode settings", err))
	}
	// The root is always today's name for the id: a session stored under
	// the old naming scheme reports (and is moved to) the new one.
	if _, err := s.prepareWorkspace(id); err != nil {
		return mediator.SessionSettings{}, fmt.Errorf("session[%s]: %w", id, err)
	}
	set.Workspace = mediator.SessionWorkspace{Mode: mediator.WorkspaceModeSession, RootDir: s.SessionWorkspaceDir(id)}
	return set, nil
}

// sessionPatch is the untrusted settings object of a PUT. Pointers tell
// "absent" (keep) from "present".
// sessionPatch is a settings patch. The session API's published names
// (permission_level, root_dir) are its contract too, beside the
// project's camelCase ones: either spelling of a member, never both.
type sessionPatch struct {
	PermissionLevel       *string         `json:"permissionLevel"`
	PermissionLevelDesign *string         `json:"permission_level"`
	Workspace             json.RawMessage `json:"workspace"`
}

type workspacePatch struct {
	Mode          *string `json:"mode"`
	RootDir       *string `json:"rootDir"`
	RootDirDesign *string `json:"root_dir"`
}

// oneOf is whichever of two spellings of a member is set; both set is
// refused, so no reader can take one while another takes the other.
func oneOf(camel, published *string, name string) (*string, error) {
	if camel != nil && published != nil {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "settings name %s twice (in both spellings)", name)
	}
	if camel != nil {
		return camel, nil
	}
	return published, nil
}

// UpdateSessionSettings merges patch, the JSON object under "settings" in a
// PUT, into session id's settings (creating the session at LevelMedium) and
// returns the result. The patch is refused whole, with the stored settings
// untouched, when it is not an object, has a field this host does not know,
// gives a level other than low, medium or high (invalid_level), or gives a
// workspace that is not an object or names another mode or root
// (bad_request). The workspace directory is created (0700) on the way.
func (s *Store) UpdateSessionSettings(ctx context.Context, id string, patch []byte) (mediator.SessionSettings, error) {
	return s.UpdateSessionSettingsIf(ctx, id, patch, nil)
}

// UpdateSessionSettingsIf is UpdateSessionSettings that stores the
// settings the patch makes only when admit, given them inside the
// transaction, returns nil; its error is returned as it is. The rules
// that bound a session's settings belong to the caller (internal/app):
// the store only persists.
func (s *Store) UpdateSessionSettingsIf(ctx context.Context, id string, patch []byte, admit func(mediator.SessionSettings) error) (mediator.SessionSettings, error) {
	if err := mediator.ValidSessionID(id); err != nil {
		return mediator.SessionSettings{}, err
	}
	p, err := s.parseSessionPatch(id, patch)
	if err != nil {
		return mediator.SessionSettings{}, fmt.Errorf("session[%s]: %w", id, err)
	}
	root, err := s.prepareWorkspace(id)
	if err != nil {
		return mediator.SessionSettings{}, fmt.Errorf("session[%s]: %w", id, err)
	}
	var out mediator.SessionSettings
	err = s.write(ctx, func(tx *sql.Tx) error {
		out = mediator.SessionSettings{PermissionLevel: mediator.LevelMedium}
		var raw string
		err := tx.QueryRowContext(ctx, `SELECT settings FROM session_settings WHERE session_id = ?`, id).Scan(&raw)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal([]byte(raw), &out); err != nil {
				return storeErr("decode settings", err)
			}
		}
		if p.PermissionLevel != nil {
			out.PermissionLevel = *p.PermissionLevel
		}
		out.Workspace = mediator.SessionWorkspace{Mode: mediator.WorkspaceModeSession, RootDir: root}
		if admit != nil {
			if err := admit(out); err != nil {
				return refusal{err}
			}
		}
		b, err := json.Marshal(out)
		if err != nil {
			return err
		}
		now := s.now().UnixMilli()
		_, err = tx.ExecContext(ctx, `INSERT INTO session_settings (session_id, settings, created_at, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (session_id) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`, id, string(b), now, now)
		return err
	})
	if r := (refusal{}); errors.As(err, &r) {
		return mediator.SessionSettings{}, r.error
	}
	if err != nil {
		return mediator.SessionSettings{}, fmt.Errorf("session[%s]: update settings: %w", id, err)
	}
	return out, nil
}

// refusal carries an admit function's error out of a transaction
// unwrapped, so the caller gets it as the rule returned it.
type refusal struct{ error }

func (s *Store) parseSessionPatch(id string, patch []byte) (sessionPatch, error) {
	var p sessionPatch
	if len(patch) > MaxSessionPatchBytes {
		return p, mediator.Errorf(mediator.CodeTooLarge, "settings are over %d bytes", MaxSessionPatchBytes)
	}
	if err := decodeStrict(patch, &p); err != nil {
		return p, mediator.Errorf(mediator.CodeBadRequest, "settings must be a JSON object with permissionLevel and workspace: %v", err)
	}
	var err error
	if p.PermissionLevel, err = oneOf(p.PermissionLevel, p.PermissionLevelDesign, "permissionLevel"); err != nil {
		return p, err
	}
	if p.PermissionLevel != nil {
		if *p.PermissionLevel == "" {
			return p, mediator.Errorf(mediator.CodeInvalidLevel, "permissionLevel must be low, medium or high, not empty")
		}
		if _, err := mediator.ParseLevel(*p.PermissionLevel); err != nil {
			return p, err
		}
	}
	if len(p.Workspace) > 0 && !bytes.Equal(p.Workspace, []byte("null")) {
		if p.Workspace[0] != '{' {
			return p, mediator.Errorf(mediator.CodeBadRequest, "workspace must be an object")
		}
		var w workspacePatch
		if err := decodeStrict(p.Workspace, &w); err != nil {
			return p, mediator.Errorf(mediator.CodeBadRequest, "workspace: %v", err)
		}
		if w.RootDir, err = oneOf(w.RootDir, w.RootDirDesign, "workspace.rootDir"); err != nil {
			return p, err
		}
		if w.Mode != nil && *w.Mode != mediator.WorkspaceModeSession {
			return p, mediator.Errorf(mediator.CodeBadRequest, "workspace mode %q is not supported; the only mode is %q", mediator.Truncate(*w.Mode, 32), mediator.WorkspaceModeSession)
		}
		if w.RootDir != nil && *w.RootDir != s.SessionWorkspaceDir(id) {
			return p, mediator.Errorf(mediator.CodeBadRequest, "workspace rootDir is chosen by the host (%s), not by the client", s.SessionWorkspaceDir(id))
		}
	}
	return p, nil
}

// decodeStrict decodes one JSON object into v exactly (mediator.DecodeExact).
func decodeStrict(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return errors.New("not a JSON object")
	}
	return mediator.DecodeExact(data, v)
}

// SessionInfo is one session as a listing shows it.
type SessionInfo struct {
	ID        string                   `json:"sessionId"`
	Settings  mediator.SessionSettings `json:"settings"`
	CreatedAt int64                    `json:"createdAt"` // ms since the epoch
	UpdatedAt int64                    `json:"updatedAt"` // ms since the epoch
}

// MaxSessionList bounds a listing; a person has far fewer sessions.
const MaxSessionList = 1000

// ListSessions lists the sessions, the most recently changed first, at
// most MaxSessionList of them.
func (s *Store) ListSessions(ctx context.Context) ([]SessionInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id, settings, created_at, updated_at FROM session_settings
		ORDER BY updated_at DESC, session_id LIMIT ?`, MaxSessionList)
	if err != nil {
		return nil, storeErr("list sessions", err)
	}
	defer rows.Close()
	out := []SessionInfo{}
	for rows.Next() {
		var si SessionInfo
		var raw string
		if err := rows.Scan(&si.ID, &raw, &si.CreatedAt, &si.UpdatedAt); err != nil {
			return nil, storeErr("list sessions", err)
		}
		if err := json.Unmarshal([]byte(raw), &si.Settings); err != nil {
			return nil, fmt.Errorf("session[%s]: %w", si.ID, storeErr("decode settings", err))
		}
		si.Settings.Workspace = mediator.SessionWorkspace{Mode: mediator.WorkspaceModeSession, RootDir: s.SessionWorkspaceDir(si.ID)}
		out = append(out, si)
	}
	if err := rows.Err(); err != nil {
		return nil, storeErr("list sessions", err)
	}
	return out, nil
}

// NewSessionID is a fresh session's id: "run-" and 16 hex digits.
func NewSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// RunSession resolves a run's session: the named one (unknown_session
// when it was never set up) with the run's level, which the request may
// lower but never raise (mediator.RunLevel), or, when id is "", a fresh
// ephemeral one at the level the request asks for (medium by default):
// the run's alone, removed with its workspace and memory when the run
// ends (ephemeral.go; OpenRun's Run.Close, or DeleteEphemeralSession).
// It returns the session's id and the run's level.
func (s *Store) RunSession(ctx context.Context, id, asked string) (string, string, error) {
	if id == "" {
		level, err := mediator.ParseLevel(asked)
		if err != nil {
			return "", "", err
		}
		if id, err = s.newEphemeralSession(ctx, level); err != nil {
			return "", "", err
		}
		return id, level, nil
	}
	set, err := s.SessionSettings(ctx, id)
	if err != nil {
		return "", "", err
	}
	level, err := mediator.RunLevel(id, set.PermissionLevel, asked)
	return id, level, err
}
