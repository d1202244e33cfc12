package wasmhost

import (
	"context"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

// spinModule loops for ever: a run of it holds its memory until its
// context ends.
func spinModule() []byte {
	return wmodule{start: []byte{0x03, 0x40, 0x0c, 0x00, 0x0b}}.bytes() // loop; br 0; end
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGuestMemoryBudget: with a budget for two runs of 16 MiB, a third
// concurrent run waits; it fails with memory_busy at its deadline if
// nothing ends, runs once one of the first two ends, and a run larger than
// the whole budget fails at once.
func TestGuestMemoryBudget(t *testing.T) {
	const mib = 1 << 20
	rt, err := New(context.Background(), Config{MaxGuestMemory: 40 * mib, CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	f := newFixture(t)
	start := func(ctx context.Context, id string, module []byte, caps mediator.Capabilities) <-chan Result {
		rec := f.install(t, id, probePerms, caps)
		spec := f.spec(rec, module, "")
		spec.Events = nil
		out := make(chan Result, 1)
		go func() {
			res, _ := rt.Run(ctx, spec)
			out <- res
		}()
		return out
	}
	holders := func(t *testing.T) (cancels []context.CancelFunc, done []<-chan Result) {
		for _, id := range []string{"holder-1", "holder-2"} {
			ctx, cancel := context.WithCancel(context.Background())
			cancels = append(cancels, cancel)
			done = append(done, start(ctx, id, spinModule(), mediator.Capabilities{MaxMemory: 16 * mib, ExecutionTimeout: 60_000}))
		}
		waitFor(t, "two runs holding 32 MiB", func() bool { return rt.budget.inUse() == 32*mib })
		return cancels, done
	}
	ok := wmodule{start: []byte{0x01}}.bytes()

	t.Run("waits then fails at its deadline", func(t *testing.T) {
		cancels, done := holders(t)
		res := <-start(context.Background(), "third", ok, mediator.Capabilities{MaxMemory: 16 * mib, ExecutionTimeout: 300})
		if res.Code != mediator.CodeMemoryBusy {
			t.Fatalf("the third run: %q (%s), want memory_busy", res.Status, res.Error)
		}
		for i, c := range cancels {
			c()
			<-done[i]
		}
		waitFor(t, "the budget to empty", func() bool { return rt.budget.inUse() == 0 })
	})
	t.Run("runs once a holder ends", func(t *testing.T) {
		cancels, done := holders(t)
		third := start(context.Background(), "third-ok", ok, mediator.Capabilities{MaxMemory: 16 * mib, ExecutionTimeout: 60_000})
		select {
		case res := <-third:
			t.Fatalf("the third run ended while the budget was full: %+v", res)
		default:
		}
		cancels[0]()
		<-done[0]
		if res := <-third; res.Status != "ok" {
			t.Fatalf("the third run, after the first ended: %q (%s)", res.Status, res.Error)
		}
		cancels[1]()
		<-done[1]
		waitFor(t, "the budget to empty", func() bool { return rt.budget.inUse() == 0 })
	})
	t.Run("larger than the whole budget", func(t *testing.T) {
		res := <-start(context.Background(), "huge", ok, mediator.Capabilities{MaxMemory: 64 * mib, ExecutionTimeout: 60_000})
		if res.Code != mediator.CodeMemoryBusy || res.Duration > 5*time.Second {
			t.Fatalf("%q (%s) after %v, want memory_busy at once", res.Status, res.Error, res.Duration)
		}
	})
}
