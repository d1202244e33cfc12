package wasmhost

import (
	"context"
	"sync"

	"github.com/agentgate/nmhost/mediator"
)

// DefaultMaxGuestMemory bounds the sum of the maxMemory of the runs in one
// host process (Config.MaxGuestMemory). A guest's memory is allocated as
// it grows, up to its maxMemory, so the budget counts each run's ceiling:
// what it may take, not what it has taken so far. It is mapped outside the
// Go heap and unmapped as its run ends (guestmem.go), so what the budget
// counts is what the process holds. 2 GiB leaves room for the host's own
// heap (host.MemoryLimit) on a machine that runs a browser.
const DefaultMaxGuestMemory = 2 << 30

// memBudget is the host-wide account of guest memory. Its zero value is an
// empty account; the limit is passed to each reserve, so a Runtime with a
// zero Config gets the default.
type memBudget struct {
	mu   sync.Mutex
	used int64
	// freed is closed (and replaced) whenever memory is released: the
	// runs waiting for room look again.
	freed chan struct{}
}

// reserve takes n bytes of the budget, waiting for room until ctx is done.
// It returns the release to call when the run's instance is closed, or
// memory_busy: at once when n is more than the whole budget, else at ctx's
// end. Waiters are not queued: whichever finds room first takes it, which
// may keep a large run waiting while small ones come and go, until its
// deadline.
func (b *memBudget) reserve(ctx context.Context, limit, n int64) (release func(), err error) {
	if n > limit {
		return nil, mediator.Errorf(mediator.CodeMemoryBusy, "the run's maxMemory (%d bytes) is more than the host's whole budget for guest memory (%d bytes)", n, limit)
	}
	for {
		b.mu.Lock()
		if b.used+n <= limit {
			b.used += n
			b.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { b.free(n) }) }, nil
		}
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, mediator.Errorf(mediator.CodeMemoryBusy, "the host's budget for guest memory (%d bytes) had no room for the run's maxMemory (%d bytes) before its deadline: other runs hold it", limit, n)
		}
	}
}

func (b *memBudget) free(n int64) {
	b.mu.Lock()
	b.used -= n
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
}

// inUse is the memory reserved now (tests watch it).
func (b *memBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// reserveMemory takes the run's maxMemory from the Runtime's budget, or
// returns the Result that ends the run.
func (ru *run) reserveMemory(ctx context.Context, maxMem int64) (release func(), res Result, ok bool) {
	limit := ru.rt.cfg.MaxGuestMemory
	if limit <= 0 {
		limit = DefaultMaxGuestMemory
	}
	release, err := ru.rt.budget.reserve(ctx, limit, maxMem)
	if err != nil {
		return nil, fail(mediator.CodeOf(err), "%s", mediator.MessageOf(err)), false
	}
	return release, Result{}, true
}
