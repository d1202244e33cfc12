package store

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// freshDB is nmhost.db as Open makes it in an empty directory, made once
// per test binary: what internal/storetest gives the other packages'
// tests (this package's tests cannot import it). Open in an empty
// directory runs every migration, 0.2 to 0.3 s of CPU under the race
// detector; the copy opens as a later process opens the file. The
// migrations write no time and nothing random, so the copy holds the same
// bytes a fresh open writes. Tests of a fresh open itself (migrations,
// simultaneous opens, the process tests) use empty directories.
var freshDB = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "nmhost-store-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s, err := Open(dir, Options{})
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, DBFileName))
})

// freshDir returns a new directory (t.TempDir()) holding a copy of
// freshDB.
func freshDir(t testing.TB) string {
	t.Helper()
	db, err := freshDB()
	if err != nil {
		t.Fatalf("making the fresh database: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBFileName), db, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
