package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// A session id is any text (mediator.ValidSessionID), so it never names a
// directory itself: the directory's name is WorkspaceDirName(id), a
// readable prefix of the id and a hash of all of it. RATIONALE.md, "Why is
// a session's workspace not named by its id?", says why this scheme.

// workspacePrefixLen bounds the readable part of a workspace's name; with
// the separator and the hash the name is at most 57 bytes, far under
// every file system's NAME_MAX (255).
const workspacePrefixLen = 24

// workspaceSep separates the readable prefix from the hash. The old
// scheme's names (the id itself, letters, digits, '.', '_' and '-') never
// hold it, so an old directory can never be taken for a new one.
const workspaceSep = "~"

// WorkspaceDirName is the name of session id's workspace directory: the
// id's letters, digits, '_' and '-' (anything else '_'), cut to 24
// bytes, then "~" and the first 32 hex digits (128 bits) of the SHA-256 of
// the whole id. It is one safe file name whatever the id: no separator,
// no dot, no NUL, no Windows device name (those are reserved alone or
// before a dot; "CON~..." is neither), no trailing space or dot, one case
// of hex, and two ids share it only if their hashes collide.
func WorkspaceDirName(id string) string {
	var b strings.Builder
	for i := 0; i < len(id) && b.Len() < workspacePrefixLen; i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return b.String() + workspaceSep + hex.EncodeToString(sum[:16])
}

// SessionWorkspaceDir is the workspace root of session id.
func (s *Store) SessionWorkspaceDir(id string) string {
	return filepath.Join(s.dir, "session-workspaces", WorkspaceDirName(id))
}

// oldWorkspaceName reports whether id has the form of the ids the old
// scheme used as the directory's name as they were: a letter, digit, '_'
// or '-', then up to 127 of those or '.'. A loop and not a regular
// expression: compiling `{0,127}` at package init cost every process,
// host mode's cold start included, half a millisecond and 1,700
// allocations for a check that runs once per session.
func oldWorkspaceName(id string) bool {
	if len(id) == 0 || len(id) > 128 || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// prepareWorkspace makes session id's workspace directory exist (0700)
// and returns it. A workspace the old scheme named by the id itself is
// moved to the new name on the way, once: only a real directory is moved,
// never a link planted in its place, and never over a directory the new
// name already has.
func (s *Store) prepareWorkspace(id string) (string, error) {
	if err := mediator.ValidSessionID(id); err != nil {
		return "", err
	}
	root := s.SessionWorkspaceDir(id)
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) && oldWorkspaceName(id) {
		old := filepath.Join(s.dir, "session-workspaces", id)
		if fi, err := os.Lstat(old); err == nil && fi.IsDir() {
			// Another process may have moved it first: then the new name
			// is there, and that is the workspace.
			if err := os.Rename(old, root); err != nil {
				if _, serr := os.Lstat(root); serr != nil {
					return "", mediator.Errorf(mediator.CodeInternal, "move workspace %s to %s: %v", old, root, err)
				}
			}
		}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", mediator.Errorf(mediator.CodeInternal, "create workspace: %v", err)
	}
	return root, nil
}

// Run is where a run happens: its session, the run's level (the
// session's or lower) and the session's workspace, open until Close. The
// zero Run is closed.
type Run struct {
	Session   string
	Level     string
	Workspace *workspace.Workspace
	// Ephemeral says the run named no session: Session is the run's own
	// (RunSession), and Close removes it with its workspace and memory.
	// The run's result still names it.
	Ephemeral bool

	store *Store // the store an ephemeral session is removed from
}

// Close closes the run's workspace and, for an ephemeral session,
// removes the session (DeleteEphemeralSession). The removal is done
// even when the run's context has ended: a cancelled run must not leave
// its session behind.
func (r Run) Close() error {
	var err error
	if r.Workspace != nil {
		err = r.Workspace.Close()
	}
	if r.Ephemeral && r.store != nil {
		err = errors.Join(err, r.store.DeleteEphemeralSession(context.Background(), r.Session))
	}
	return err
}

// OpenRun resolves a run's session (RunSession: the named one at its
// level or lower, or a fresh ephemeral one when id is "") and opens its
// workspace. Every run kind of the host, the viewer and the CLI begins
// here, and closes the Run when it ends.
func (s *Store) OpenRun(ctx context.Context, id, asked string) (Run, error) {
	ephemeral := id == ""
	id, level, err := s.RunSession(ctx, id, asked)
	if err != nil {
		return Run{}, err
	}
	ws, err := s.OpenWorkspace(id)
	if err != nil {
		err = fmt.Errorf("session[%s] workspace: %w", mediator.Truncate(id, 64), err)
		if ephemeral {
			err = errors.Join(err, s.DeleteEphemeralSession(context.WithoutCancel(ctx), id))
		}
		return Run{}, err
	}
	return Run{Session: id, Level: level, Workspace: ws, Ephemeral: ephemeral, store: s}, nil
}

// OpenWorkspace opens session id's workspace, creating its directory
// (owner-only) on first use, with the default quotas. The caller closes
// it when the run ends.
func (s *Store) OpenWorkspace(id string) (*workspace.Workspace, error) {
	root, err := s.prepareWorkspace(id)
	if err != nil {
		return nil, err
	}
	return workspace.Open(root, s.wsLim)
}
