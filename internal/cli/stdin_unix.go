//go:build unix

package cli

import (
	"context"
	"io"
	"os"
	"syscall"
	"time"
)

// stdinPollable makes the pipe f readable through the runtime's poller, so
// that a deadline set when ctx ends returns a blocked read at once. Only a
// pipe is switched: O_NONBLOCK belongs to the open file, and a terminal's
// would stay changed for the shell after exit; the pipe's is put back.
func stdinPollable(ctx context.Context, f *os.File) (io.Reader, func(), bool) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil, nil, false
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, nil, false
	}
	// NewFile of a non-blocking descriptor registers it with the poller.
	pf := os.NewFile(uintptr(fd), f.Name())
	stop := context.AfterFunc(ctx, func() { pf.SetReadDeadline(time.Now()) })
	return deadlineIsEOF{pf}, func() {
		stop()
		syscall.SetNonblock(fd, false)
	}, true
}
