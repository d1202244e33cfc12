package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestProgramRecountsTheLedger: what a program writes behind the
// package's back is in the ledger afterwards, and past the byte quota
// the run says so and the workspace refuses to grow.
func TestProgramRecountsTheLedger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	w, err := Open(dir, Limits{MaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Program(func(d string) error { return os.WriteFile(filepath.Join(d, "a"), make([]byte, 600), 0o644) }); err != nil {
		t.Fatal(err)
	}
	if b, f := w.Usage(); b != 600 || f != 1 {
		t.Fatalf("usage %d bytes %d files", b, f)
	}
	err = w.Program(func(d string) error { return os.WriteFile(filepath.Join(d, "b"), make([]byte, 600), 0o644) })
	if mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("err %v", err)
	}
	if err := w.WriteFile("c", []byte("x"), false); mediator.CodeOf(err) != mediator.CodeQuotaExceeded {
		t.Fatalf("a write past the quota: %v", err)
	}
}
