package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// A run that names no session gets a fresh one (RunSession), which is
// the run's alone: nobody else knows its id, so nothing could continue
// it. Kept, it would be a session row, a workspace directory and a memory
// index left behind by every such run, for good. So it is ephemeral: it
// is listed in ephemeral_sessions from before it exists, and removed,
// with its workspace and its memory, when the run ends (Run.Close, or
// DeleteEphemeralSession for a run that is not a Run). A host killed
// mid-run leaves it listed; the next Open past its age removes it
// (sweepEphemeralSessions). A session a client named or set up is never
// listed, so nothing here can remove it.

// DefaultEphemeralSessionAge is how old an ephemeral session must be
// before a store's Open removes it as left behind by a host that died
// mid-run: a day, far past the longest run (a run's executionTimeout,
// and the Python run's slack, are minutes), so no live run loses its
// session.
const DefaultEphemeralSessionAge = 24 * time.Hour

// schemaEphemeral lists the ephemeral sessions and when each began.
const schemaEphemeral = `
CREATE TABLE IF NOT EXISTS ephemeral_sessions (
	session_id TEXT PRIMARY KEY,
	created_at INTEGER NOT NULL             -- ms since the epoch
) WITHOUT ROWID;
`

// newEphemeralSession starts a fresh session at level for one run. It is
// listed as ephemeral before it is made, so a crash in between leaves a
// listing the sweep removes, never a session nobody removes.
func (s *Store) newEphemeralSession(ctx context.Context, level string) (string, error) {
	id := NewSessionID()
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO ephemeral_sessions (session_id, created_at) VALUES (?, ?)`, id, s.now().UnixMilli())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("session[%s]: %w", id, storeErr("list as ephemeral", err))
	}
	patch, _ := json.Marshal(map[string]string{"permissionLevel": level})
	if _, err := s.UpdateSessionSettings(ctx, id, patch); err != nil {
		return "", errors.Join(err, s.DeleteEphemeralSession(context.WithoutCancel(ctx), id))
	}
	return id, nil
}

// DeleteEphemeralSession removes ephemeral session id: its workspace
// directory, its memory (entries and index), its settings and the answers
// given for it. A session
// that is not ephemeral is left as it is (and nil returned): only a
// session RunSession started for a run that named none can be removed
// this way. The directory goes first, then the memory, then the rows: if
// a removal fails the session stays listed, and a later sweep tries
// again.
func (s *Store) DeleteEphemeralSession(ctx context.Context, id string) error {
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT created_at FROM ephemeral_sessions WHERE session_id = ?`, id).Scan(&created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session[%s]: %w", mediator.Truncate(id, 64), storeErr("read ephemeral", err))
	}
	// The name is derived from the id (WorkspaceDirName) under the data
	// dir's own session-workspaces; RemoveAll removes a link an agent
	// planted inside, never what it points to.
	if err := os.RemoveAll(s.SessionWorkspaceDir(id)); err != nil {
		return mediator.Errorf(mediator.CodeInternal, "remove the workspace of ephemeral session %s: %v", mediator.Truncate(id, 64), err)
	}
	// The memory, in memory.db, before the rows here: the two files share
	// no transaction, and a failure or a crash between the two leaves the
	// session listed, so its removal is done again (memory_db.go).
	if err := s.deleteMemory(ctx, id); err != nil {
		return fmt.Errorf("session[%s] memory: %w", mediator.Truncate(id, 64), err)
	}
	if h := s.memHooks.deleted; h != nil {
		if err := h(id); err != nil {
			return err
		}
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM session_settings WHERE session_id = ?`, id); err != nil {
			return err
		}
		// Answers given "for this session" end with it.
		if _, err := tx.ExecContext(ctx, `DELETE FROM preferences WHERE session_id = ?`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM ephemeral_sessions WHERE session_id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("session[%s]: %w", mediator.Truncate(id, 64), storeErr("remove ephemeral", err))
	}
	return nil
}

// sweepEphemeralSessions removes the ephemeral sessions older than age:
// those a host killed mid-run left behind. It is best effort: Open does
// not fail for it, and a session it could not remove is tried again at
// the next Open.
func (s *Store) sweepEphemeralSessions(ctx context.Context, age time.Duration) error {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id FROM ephemeral_sessions WHERE created_at <= ?`, s.now().Add(-age).UnixMilli())
	if err != nil {
		return storeErr("list ephemeral sessions", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return storeErr("list ephemeral sessions", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return storeErr("list ephemeral sessions", err)
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, s.DeleteEphemeralSession(ctx, id))
	}
	return errors.Join(errs...)
}
