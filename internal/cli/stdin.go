package cli

import (
	"context"
	"errors"
	"io"
	"os"
)

// untilDone reads r until it ends or ctx is done (SIGTERM, SIGINT), when
// it reports the end of input: the host then stops taking requests,
// cancels those in flight (their context is ctx), answers each with its
// error and exits, instead of waiting for the browser to close stdin. The
// returned func puts r back as it was.
//
// A blocking read cannot be interrupted. Where stdin is a pipe (as a
// browser starts the host) and the system allows it, the pipe is switched
// to non-blocking so that the runtime's poller can end a read at ctx's end
// (stdinPollable); anything else is read on a goroutine through a pipe,
// which costs a copy of every byte.
func untilDone(ctx context.Context, r io.Reader) (io.Reader, func()) {
	if f, ok := r.(*os.File); ok {
		if pr, restore, ok := stdinPollable(ctx, f); ok {
			return pr, restore
		}
	}
	pr, pw := io.Pipe()
	go func() {
		// A large buffer keeps the hand-over cheap for big frames.
		_, err := io.CopyBuffer(pw, r, make([]byte, 1<<20))
		pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(ctx, func() { pw.Close() })
	return pr, func() { stop() }
}

// deadlineIsEOF reports a read ended by a deadline as the end of input.
type deadlineIsEOF struct{ f *os.File }

func (d deadlineIsEOF) Read(p []byte) (int, error) {
	n, err := d.f.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = io.EOF
	}
	return n, err
}
