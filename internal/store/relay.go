package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// A prompt relayed between processes: a process that has nobody to ask
// (the MCP gateway, started by an MCP client with no terminal) leaves its
// question here, and a process that has the person (a native host the
// extension is connected to) claims it, asks through its own prompt
// window, and leaves the answer. The asker applies the answer itself, as
// it would its own prompt's: remembering it, recording it. Only the
// question and the answer travel; the decision stays where it was made.

// schemaRelay holds relayed prompts until their asker takes the answer or
// gives up.
const schemaRelay = `
CREATE TABLE IF NOT EXISTS prompt_relay (
	id          TEXT PRIMARY KEY,
	created_at  INTEGER NOT NULL,  -- ms since the epoch
	expires_at  INTEGER NOT NULL,  -- ms; past it nobody may claim it
	request     TEXT NOT NULL,     -- the question, as the asker wrote it
	claimed_by  TEXT,              -- the process asking the person
	answer      TEXT,              -- the person's answer, once given
	error_code  TEXT,              -- or why there is none
	error_msg   TEXT
) WITHOUT ROWID;
`

// RelayedPrompt is a question a process left for another to ask.
type RelayedPrompt struct {
	ID      string
	Request []byte
	Expires time.Time
}

// RelayPrompt leaves a question, to be claimed before expires.
func (s *Store) RelayPrompt(ctx context.Context, id string, request []byte, expires time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO prompt_relay (id, created_at, expires_at, request) VALUES (?, ?, ?, ?)`,
			id, s.now().UnixMilli(), expires.UnixMilli(), string(request))
		return err
	})
	if err != nil {
		return storeErr("relay a prompt", err)
	}
	return nil
}

// ClaimRelayedPrompt takes the oldest question nobody claimed that has
// not expired, for claimer to ask; ok is false when there is none. Rows
// past their end are removed on the way.
func (s *Store) ClaimRelayedPrompt(ctx context.Context, claimer string) (p RelayedPrompt, ok bool, err error) {
	now := s.now().UnixMilli()
	// Looked for first without a write: every host process looks a few
	// times a second, and almost always finds nothing.
	var any int
	err = s.db.QueryRowContext(ctx, `SELECT 1 FROM prompt_relay WHERE claimed_by IS NULL AND expires_at > ? LIMIT 1`, now).Scan(&any)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, storeErr("look for a relayed prompt", err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		// A row an asker abandoned (killed before it could remove it)
		// goes a minute after its end.
		if _, err := tx.ExecContext(ctx, `DELETE FROM prompt_relay WHERE expires_at < ?`, now-60_000); err != nil {
			return err
		}
		var req string
		var exp int64
		err := tx.QueryRowContext(ctx, `SELECT id, request, expires_at FROM prompt_relay
			WHERE claimed_by IS NULL AND expires_at > ? ORDER BY created_at, id LIMIT 1`, now).Scan(&p.ID, &req, &exp)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE prompt_relay SET claimed_by = ? WHERE id = ?`, claimer, p.ID); err != nil {
			return err
		}
		p.Request, p.Expires, ok = []byte(req), time.UnixMilli(exp), true
		return nil
	})
	if err != nil {
		return RelayedPrompt{}, false, storeErr("claim a relayed prompt", err)
	}
	return p, ok, nil
}

// AnswerRelayedPrompt leaves the answer to question id (or, with code
// set, why there is none). Only the claimer's answer counts.
func (s *Store) AnswerRelayedPrompt(ctx context.Context, id, claimer, answer, code, msg string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE prompt_relay SET answer = ?, error_code = ?, error_msg = ?
			WHERE id = ? AND claimed_by = ? AND answer IS NULL AND error_code IS NULL`, answer, nullable(code), nullable(msg), id, claimer)
		return err
	})
	if err != nil {
		return storeErr("answer a relayed prompt", err)
	}
	return nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// RelayedAnswer reads question id: whether someone claimed it, and the
// answer (or error code and message) once there is one.
func (s *Store) RelayedAnswer(ctx context.Context, id string) (claimed, answered bool, answer, code, msg string, err error) {
	var by, ans, c, m sql.NullString
	err = s.db.QueryRowContext(ctx, `SELECT claimed_by, answer, error_code, error_msg FROM prompt_relay WHERE id = ?`, id).Scan(&by, &ans, &c, &m)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, "", "", "", nil
	}
	if err != nil {
		return false, false, "", "", "", storeErr("read a relayed prompt", err)
	}
	return by.Valid, ans.Valid || c.Valid, ans.String, c.String, m.String, nil
}

// ForgetRelayedPrompt removes question id: its asker has its answer or
// gave up.
func (s *Store) ForgetRelayedPrompt(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM prompt_relay WHERE id = ?`, id)
		return err
	})
	if err != nil {
		return storeErr("forget a relayed prompt", err)
	}
	return nil
}
