// Package storetest gives tests a data directory whose database is
// already made: only tests import it.
//
// store.Open in an empty directory runs every schema migration, each a
// change of schema that SQLite parses again whole; under the race
// detector that cost 0.2 to 0.3 s of CPU per store, and the harnesses of
// internal/host, internal/viewer and others open one per test. Dir copies
// instead the nmhost.db that store.Open made once, in this process, in an
// empty directory: the same bytes a fresh open writes (the migrations
// write no time and nothing random), opened as a later host process
// opens it. What a fresh open does (migrating, creating the file, racing
// other processes to do so) is tested in internal/store on empty
// directories, and runs here once per test binary, making the copy.
package storetest

import (
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest/fresh"
)

// Dir returns a new directory (t.TempDir()) holding a copy of the
// nmhost.db that store.Open makes in an empty directory.
func Dir(t testing.TB) string {
	t.Helper()
	return fresh.Dir(t, store.DBFileName, func(dir string) error {
		s, err := store.Open(dir, store.Options{})
		if err != nil {
			return err
		}
		// Close checkpoints the WAL into the file and removes it: the
		// file alone is the database.
		return s.Close()
	})
}
