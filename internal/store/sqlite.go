package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// Opening a database of the store: the SQLite file, its WAL mode and its
// schema's migrations, the same for nmhost.db and memory.db.

// openSQLite opens the SQLite file at path the way every database of the
// store is opened: created private, writers taking the lock at BEGIN,
// the busy timeout, synchronous as given, at most conns connections,
// all kept open once made (an idle connection keeps its parsed schema and
// its pragmas). It runs no statement: the first one on each connection
// parses the schema.
func openSQLite(path string, busy time.Duration, syncMode string, conns int) (*sql.DB, error) {
	// SQLite creates files 0644 under the usual umask and gives the -wal and
	// -shm files the database file's mode. Creating the file first makes all
	// three private to the user: grants are nobody else's business.
	if f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600); err != nil {
		return nil, &mediator.Error{Code: mediator.CodeInternal, Msg: "cannot create " + path, Err: err}
	} else {
		f.Close()
	}
	q := url.Values{}
	q.Set("_txlock", "immediate") // writers take the lock at BEGIN: no deadlock on upgrade
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "synchronous("+syncMode+")")
	q.Add("_pragma", "foreign_keys(1)")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, &mediator.Error{Code: mediator.CodeInternal, Msg: "cannot open " + path, Err: err}
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// migrate brings db's schema to len(steps), its PRAGMA user_version,
// each step in turn, in one transaction of write. The fast path is one
// read. The main database and memory.db each have their own steps.
func (s *Store) migrate(ctx context.Context, db *sql.DB, steps []migration, write func(context.Context, func(*sql.Tx) error) error) error {
	want := len(steps)
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return storeErr("read schema version", err)
	}
	if v == want {
		return nil
	}
	if v > want {
		return mediator.Errorf(mediator.CodeInternal, "the database has schema version %d; this host knows up to %d (downgrade?)", v, want)
	}
	// WAL is a property of the file, so setting it once at creation is
	// enough; it cannot be set inside a transaction, hence before it.
	mode, err := setWAL(ctx, db, s.busyTimeout)
	if err != nil {
		return storeErr("set WAL mode", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return mediator.Errorf(mediator.CodeInternal, "the database refused WAL mode (journal_mode is %q)", mode)
	}
	return write(ctx, func(tx *sql.Tx) error {
		// Another process may have migrated while we waited for the lock.
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		from := v
		for ; v < want; v++ {
			m := steps[v]
			if m.sql != "" {
				if _, err := tx.ExecContext(ctx, m.sql); err != nil {
					return fmt.Errorf("migration %d->%d: %w", v, v+1, err)
				}
			}
			var err error
			switch {
			case m.fill != nil:
				err = m.fill(ctx, tx)
			case m.move != nil:
				err = m.move(ctx, s, tx, from)
			}
			if err != nil {
				var e *mediator.Error
				if errors.As(err, &e) {
					return err
				}
				return fmt.Errorf("migration %d->%d: %w", v, v+1, err)
			}
		}
		// PRAGMA takes no parameters; want is an int we control.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", want))
		return err
	})
}

// setWAL switches a new database to WAL. SQLite does not call the busy
// handler for a journal-mode change, so when several hosts start on a fresh
// data directory at once (Chrome starts one per connection) the losers get
// SQLITE_BUSY at once; they retry here for as long as the busy timeout.
func setWAL(ctx context.Context, db *sql.DB, busy time.Duration) (string, error) {
	deadline := time.Now().Add(busy)
	wait := time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return mode, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code), the errors another connection's lock causes.
func isBusy(err error) bool {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return false
	}
	primary := se.Code() & 0xff
	return primary == 5 || primary == 6 // SQLITE_BUSY, SQLITE_LOCKED
}
