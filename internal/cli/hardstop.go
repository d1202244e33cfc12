package cli

import (
	"context"
	"log/slog"
	"time"
)

// exitGrace is how long the host waits, after a stop signal, for its runs
// to end before it ends the process anyway: the host must be gone within
// 2 s of SIGTERM, and the rest (0.8 s) is the margin of a loaded machine
// for the process to be scheduled, exit and be reaped.
const exitGrace = 1200 * time.Millisecond

// exitAfterGrace calls exit(1) exitGrace after ctx (the signal's context)
// ends, unless the returned stop is called first, when the host returned
// on its own.
//
// Why a hard exit and not only cancellation: everything a run does watches
// its context, except what cannot: wazero's compiler inside one function,
// the interpreter's compile of a whole module, Runtime.Close waiting for
// those compiles, a host call blocked in the kernel. Their CPU after a
// deadline is bounded (wasmhost/engines.go), but a browser that sends
// SIGTERM and waits has no use for a host that is still finishing a
// compile. Ending the process loses nothing acknowledged: every audit
// record is durable before the reply that depends on it is sent, the same
// guarantee that survives kill -9 (cmd/nmhost's durability tests); a
// request still in flight gets no reply, as when the browser kills the
// host itself.
func exitAfterGrace(ctx context.Context, log *slog.Logger, exit func(int)) (stop func()) {
	done := make(chan struct{})
	stopAfter := context.AfterFunc(ctx, func() {
		select {
		case <-done:
			return
		default:
		}
		time.AfterFunc(exitGrace, func() {
			select {
			case <-done:
				return
			default:
			}
			log.Error("host exiting: requests still running after the stop signal's grace; ending the process", "grace", exitGrace)
			exit(1)
		})
	})
	return func() {
		close(done)
		stopAfter()
	}
}
