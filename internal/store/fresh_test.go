package store

import (
	"testing"

	"github.com/agentgate/nmhost/internal/storetest/fresh"
)

// freshDir returns a new directory (t.TempDir()) holding a copy of
// nmhost.db as Open makes it in an empty directory, made once per test
// binary: what internal/storetest gives the other packages' tests (this
// package's tests cannot import it). Open in an empty directory runs
// every migration, 0.2 to 0.3 s of CPU under the race detector; the copy
// opens as a later process opens the file. The migrations write no time
// and nothing random, so the copy holds the same bytes a fresh open
// writes. Tests of a fresh open itself (migrations, simultaneous opens,
// the process tests) use empty directories.
func freshDir(t testing.TB) string {
	t.Helper()
	return fresh.Dir(t, DBFileName, func(dir string) error {
		s, err := Open(dir, Options{})
		if err != nil {
			return err
		}
		return s.Close()
	})
}
