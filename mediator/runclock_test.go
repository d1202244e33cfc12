package mediator

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRunClock: the clock ends its context once the run has used its
// budget, and stands still while paused (nested pauses included).
func TestRunClock(t *testing.T) {
	const budget = 200 * time.Millisecond
	for _, c := range []struct {
		name  string
		pause time.Duration // how long a prompt waits, from the start
		nest  bool
	}{
		{"no prompt", 0, false},
		{"a prompt longer than the budget", 3 * budget, false},
		{"nested prompts", 3 * budget, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Taken before the clock starts: taken after, a goroutine
			// descheduled in between (a loaded machine) made the run look
			// shorter than its budget.
			start := time.Now()
			ctx, clock := WithRunClock(context.Background(), budget)
			defer clock.Stop()
			if c.pause > 0 {
				resume := PauseRun(ctx)
				inner := func() {}
				if c.nest {
					inner = PauseRun(ctx)
				}
				select {
				case <-ctx.Done():
					t.Fatal("the clock ran while a prompt waited")
				case <-time.After(c.pause):
				}
				inner()
				resume()
				resume() // once only
			}
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				t.Fatalf("cause %v", context.Cause(ctx))
			}
			if ran := time.Since(start) - c.pause; ran < budget {
				t.Fatalf("ended after %v of running; budget %v", ran, budget)
			}
		})
	}
	t.Run("no clock: pausing does nothing", func(t *testing.T) {
		PauseRun(context.Background())()
	})
	t.Run("a spent clock is not started again", func(t *testing.T) {
		ctx, clock := WithRunClock(context.Background(), time.Millisecond)
		defer clock.Stop()
		<-ctx.Done()
		PauseRun(ctx)()
		if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			t.Fatalf("cause %v", context.Cause(ctx))
		}
	})
}
