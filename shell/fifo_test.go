//go:build unix

package shell

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// TestWorkspacePipeIsRefusedAtOnce (issue 22, finding 12): a named pipe
// inside the workspace is refused (path_not_allowed: it is not a file an
// agent may use) by every command that reads a name, and no command waits
// for a writer: each returns before the deadline.
func TestWorkspacePipeIsRefusedAtOnce(t *testing.T) {
	f := newFixture(t)
	fifo := filepath.Join(f.dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"cat pipe", "head pipe", "tail pipe", "wc -l pipe", "grep x pipe", "cp pipe copy.txt", "cat < pipe"} {
		t.Run(line, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := f.run(t, "high", line); done <- err }()
			select {
			case err := <-done:
				if mediator.CodeOf(err) != mediator.CodePathNotAllowed {
					t.Fatalf("%v; want path_not_allowed", err)
				}
			case <-time.After(5 * time.Second):
				if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close() // lets the stuck read end
				}
				t.Fatalf("%s still waits after 5s", line)
			}
		})
	}
}
