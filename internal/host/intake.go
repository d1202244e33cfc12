package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agentgate/nmhost/internal/frame"
	"github.com/agentgate/nmhost/mediator"
)

// intake reads frames and hands them to the dispatcher, on a goroutine of
// its own, until the input ends or Serve stops taking requests.
//
// Why a goroutine Serve does not wait for: the browser's pipe is read with
// plain blocking reads, which cannot be interrupted when the host is told
// to stop (SIGTERM) with stdin still open. Making the pipe non-blocking so
// that the runtime's poller could end a read costs every frame a failed
// read and a trip through the poller (measured idle, one request at a
// time: 1.12-1.47x the echo host that way, 1.05-1.26x read blocking; 64
// in flight, no difference), and on Windows it meant copying stdin
// through a pipe. So Serve stops on its context without the read: it
// closes the gate, and whatever the blocked read brings afterwards is
// dropped unanswered, as a frame not yet read was before.
type intake struct {
	r        *frame.Reader
	s        *server
	dispatch func(context.Context, []byte) error // the dispatcher's
	done     chan struct{}                       // closed when loop returns

	gate    sync.Mutex // held while a frame is handed over; stop takes it
	stopped bool
}

// loop reads until the input ends, dispatch fails (ctx ended) or stop.
func (in *intake) loop(ctx context.Context) {
	defer close(in.done)
	for {
		msg, err := in.r.Next()
		if !in.hand(ctx, msg, err) {
			return
		}
	}
}

// hand gives one read's result to the dispatcher under the gate, and
// reports whether to read on.
func (in *intake) hand(ctx context.Context, msg []byte, err error) bool {
	in.gate.Lock()
	defer in.gate.Unlock()
	if in.stopped {
		return false
	}
	switch {
	case err == nil:
	case errors.Is(err, frame.ErrTooLarge):
		in.s.log.Warn("frame refused", "err", err)
		in.s.send(reply{ID: nullID, Error: fmt.Sprintf("message refused: %v", err), Code: mediator.CodeTooLarge})
		return true
	case errors.Is(err, io.EOF):
		return false
	default:
		in.s.log.Warn("input ended", "err", err)
		return false
	}
	return in.dispatch(ctx, msg) == nil
}

// stop ends the intake: once it returns, no frame is handed over any more
// (a hand-over in progress finishes first; its context has ended, so it
// does not wait for long).
func (in *intake) stop() {
	in.gate.Lock()
	in.stopped = true
	in.gate.Unlock()
}
