package host

import (
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// A Python run's deadline stands still while one of its calls waits for a
// person, as a module's clock does (mediator.RunClock): the prompt has
// its own PromptTimeout. The extension's timers that end the run's worker
// stop too: the call that waits tells it, with a "waiting" event on the
// agent-call, and "resumed" when the person has answered.

// Pause stops the run's deadline (pauses nest); false when the run is
// over already (ended, or past its deadline).
func (r *pythonRun) Pause() bool {
	pythonRuns.Lock()
	defer pythonRuns.Unlock()
	if r.paused == 0 {
		if time.Now().After(r.deadline) || r.expiry == nil || !r.expiry.Stop() {
			return false
		}
		r.pausedAt = time.Now()
	}
	r.paused++
	return true
}

// Resume moves the deadline on by the time paused, once every pause has
// ended.
func (r *pythonRun) Resume() {
	pythonRuns.Lock()
	defer pythonRuns.Unlock()
	if r.paused--; r.paused > 0 {
		return
	}
	r.deadline = r.deadline.Add(time.Since(r.pausedAt))
	r.expiry.Reset(time.Until(r.deadline))
}

// expiredAt says whether the run's deadline has passed at now: never
// while a call of it waits for a person. Under pythonRuns' lock.
func (r *pythonRun) expiredAt(now time.Time) bool {
	return r.paused == 0 && now.After(r.deadline)
}

// callPause is one agent-call's hold on its run's clock: it pauses the
// run and tells the extension, on the call, to stop its timers too.
type callPause struct {
	run  *pythonRun
	tell func(event string)
}

func (c callPause) Pause() bool {
	if !c.run.Pause() {
		return false
	}
	c.tell("waiting")
	return true
}

func (c callPause) Resume() {
	c.run.Resume()
	c.tell("resumed")
}

var _ mediator.RunPauser = callPause{}
