package cli

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestExitAfterGrace: the process is ended exitGrace after the signal's
// context ends, and not when the host returned first or no signal came.
func TestExitAfterGrace(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		name            string
		signal, returns bool
		wantExit        bool
	}{
		{"signal, host still running", true, false, true},
		{"signal, host returned", true, true, false},
		{"no signal", false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			exited := make(chan int, 1)
			stop := exitAfterGrace(ctx, log, func(code int) { exited <- code })
			start := time.Now()
			if c.signal {
				cancel()
			}
			if c.returns {
				stop()
			}
			select {
			case code := <-exited:
				if !c.wantExit || code != 1 {
					t.Fatalf("exit(%d) after %v", code, time.Since(start))
				}
				if took := time.Since(start); took < exitGrace {
					t.Fatalf("exit after %v, before the grace of %v", took, exitGrace)
				}
			case <-time.After(exitGrace + 2*time.Second):
				if c.wantExit {
					t.Fatal("no exit")
				}
			}
			if !c.returns {
				stop()
			}
		})
	}
}
