package runs

import (
	"strings"
	"sync"
	"time"

	"github.com/agentgate/nmhost/wasmhost"
)

// Output events are coalesced: a run that logs 9,000 lines would
// otherwise send 9,000 frames, and a frame costs the host several times
// what the log call's decision does. Consecutive output is sent as one
// event at most outputWindow after its first line, or once outputMax
// bytes wait, and always before any other event of the run and before
// the run's reply, so the order a reader sees is the order it happened.
const (
	outputWindow = 10 * time.Millisecond
	outputMax    = 32 << 10
)

// outputBatcher holds the output not yet sent to next.
type outputBatcher struct {
	mu    sync.Mutex
	next  func(wasmhost.Event)
	buf   strings.Builder
	timer *time.Timer
}

func newOutputBatcher(next func(wasmhost.Event)) *outputBatcher {
	return &outputBatcher{next: next}
}

// event is the run's Events function.
func (o *outputBatcher) event(e wasmhost.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e.Kind == "output" {
		o.buf.WriteString(e.Text)
		if o.buf.Len() >= outputMax {
			o.flushLocked()
		} else if o.timer == nil {
			o.timer = time.AfterFunc(outputWindow, o.flush)
		}
		return
	}
	o.flushLocked()
	o.next(e)
}

// flush sends what waits; the run calls it before it reports.
func (o *outputBatcher) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
}

func (o *outputBatcher) flushLocked() {
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
	if o.buf.Len() > 0 {
		o.next(wasmhost.Event{Kind: "output", Text: o.buf.String()})
		o.buf.Reset()
	}
}
