package testkit

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds or d has passed, then fails the
// test saying what was awaited. It waits on an observable state, never
// for a fixed time: the poll interval only bounds how soon it notices.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for interval := time.Millisecond; !cond(); interval = min(2*interval, 50*time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("after %v, still waiting for %s", d, what)
		}
		time.Sleep(interval)
	}
}
