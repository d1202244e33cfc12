// Package fresh gives each test a copy of a file made once per test
// binary in an empty directory: only tests import it. It imports nothing
// of ours, so that internal/store's own tests can use it as
// internal/storetest does for every other package.
package fresh

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// made holds, per file name, the bytes made the first time (a
// func() ([]byte, error) from sync.OnceValues).
var made sync.Map

// Dir returns a new directory (t.TempDir()) holding a copy of the file
// name as build wrote it into an empty directory, the first time this
// test binary asked for name (later calls reuse those bytes, whatever
// build they pass).
func Dir(t testing.TB, name string, build func(dir string) error) string {
	t.Helper()
	once, _ := made.LoadOrStore(name, sync.OnceValues(func() ([]byte, error) {
		dir, err := os.MkdirTemp("", "nmhost-fresh-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := build(dir); err != nil {
			return nil, err
		}
		return os.ReadFile(filepath.Join(dir, name))
	}))
	b, err := once.(func() ([]byte, error))()
	if err != nil {
		t.Fatalf("making the fresh %s: %v", name, err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
