//go:build unix

package shell

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestOutsidePipeIsRefusedAtOnce: a named pipe outside the workspace is
// not a file to read; opening it must not wait for a writer that never
// comes (this test would hang until the test binary's deadline).
func TestOutsidePipeIsRefusedAtOnce(t *testing.T) {
	f := newFixture(t)
	fifo := filepath.Join(f.outside, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"cat " + fifo, "cp " + fifo + " in.txt", "head " + fifo} {
		t.Run(line, func(t *testing.T) {
			if _, err := f.run(t, "high", line); mediator.CodeOf(err) != mediator.CodeBadRequest {
				t.Fatalf("%v", err)
			}
		})
	}
}
