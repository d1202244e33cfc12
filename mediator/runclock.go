package mediator

import (
	"context"
	"sync"
	"time"
)

// A run's executionTimeout counts the agent's time, not a person's: while
// a prompt of the run waits for an answer, its clock stands still. With a
// plain deadline, an agent whose executionTimeout was 10 s had its first
// prompt withdrawn after 10 s, recorded as nobody answering, although the
// prompt itself promised a minute.

// RunClock is a run's executionTimeout that stops while the run waits
// for a person (PauseRun). Its context ends, with the cause
// context.DeadlineExceeded, once the run has used its budget.
type RunClock struct {
	mu      sync.Mutex
	left    time.Duration // the budget not used yet, as of since
	since   time.Time     // when the clock last started running
	paused  int           // prompts waiting now
	timer   *time.Timer
	cancel  context.CancelCauseFunc
	stopped bool
}

type runClockKey struct{}

// WithRunClock returns a context that ends when the run has been running,
// prompts' waits not counted, for budget; Stop releases it.
func WithRunClock(parent context.Context, budget time.Duration) (context.Context, *RunClock) {
	ctx, cancel := context.WithCancelCause(parent)
	c := &RunClock{left: budget, since: time.Now(), cancel: cancel}
	c.timer = time.AfterFunc(budget, func() { cancel(context.DeadlineExceeded) })
	return WithRunPauser(ctx, c), c
}

// Stop ends the clock and its context.
func (c *RunClock) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.timer.Stop()
	c.cancel(context.Canceled)
}

// RunPauser is a run whose clock PauseRun stops: a module's (RunClock),
// or a Python run's, whose deadline the host keeps (internal/host).
// Pause reports false when the run is over already; pauses nest.
type RunPauser interface {
	Pause() bool
	Resume()
}

// WithRunPauser makes p the run ctx belongs to, for PauseRun.
func WithRunPauser(ctx context.Context, p RunPauser) context.Context {
	return context.WithValue(ctx, runClockKey{}, p)
}

// Pause stops the clock (nested pauses count); it reports false when the
// budget had run out already.
func (c *RunClock) Pause() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	if c.paused == 0 {
		if !c.timer.Stop() {
			return false // it fired: the run is over
		}
		c.left -= time.Since(c.since)
	}
	c.paused++
	return true
}

// Resume starts the clock again once every pause has ended.
func (c *RunClock) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paused--
	if c.paused > 0 || c.stopped {
		return
	}
	c.since = time.Now()
	if c.left <= 0 {
		c.cancel(context.DeadlineExceeded)
		return
	}
	c.timer.Reset(c.left)
}

// PauseRun stops the clock of the run ctx belongs to, if it has one,
// until the returned function is called: a prompt calls it while it
// waits for the person.
func PauseRun(ctx context.Context) (resume func()) {
	c, _ := ctx.Value(runClockKey{}).(RunPauser)
	if c == nil || !c.Pause() {
		return func() {}
	}
	var once sync.Once
	return func() { once.Do(c.Resume) }
}
