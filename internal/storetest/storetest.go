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
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
)

var fresh = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "nmhost-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	// Close checkpoints the WAL into the file and removes it: the file
	// alone is the database.
	return os.ReadFile(filepath.Join(dir, store.DBFileName))
})

// Dir returns a new directory (t.TempDir()) holding a copy of the
// nmhost.db that store.Open makes in an empty directory.
func Dir(t testing.TB) string {
	t.Helper()
	db, err := fresh()
	if err != nil {
		t.Fatalf("making the fresh database: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, store.DBFileName), db, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
