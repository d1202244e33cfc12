package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkOpenWorkspace10k: opening a workspace holding 10,000 entries
// (100 directories of 99 files) costs about what opening its directory
// with os.OpenRoot costs, since Open reads the ledger and does not walk
// the tree. The os.OpenRoot sub-benchmark is the baseline; compare the
// two ns/op.
//
//	go test -run '^$' -bench OpenWorkspace10k -benchtime 2000x ./workspace/
func BenchmarkOpenWorkspace10k(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "ws")
	for i := range 100 {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
		for j := range 99 {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%02d", j)), []byte("x"), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	// The first open counts the old workspace once and writes its ledger.
	w, err := Open(dir, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	if _, n := w.Usage(); n != 10_000 {
		b.Fatalf("%d entries", n)
	}
	w.Close()
	b.Run("workspace.Open", func(b *testing.B) {
		for b.Loop() {
			w, err := Open(dir, Limits{})
			if err != nil {
				b.Fatal(err)
			}
			w.Close()
		}
	})
	b.Run("os.OpenRoot", func(b *testing.B) {
		for b.Loop() {
			r, err := os.OpenRoot(dir)
			if err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
}
