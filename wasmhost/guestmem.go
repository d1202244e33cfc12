package wasmhost

import (
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

// Guest memory lives outside the Go heap. wazero's own linear memory is
// a Go slice that grows by append: each memory.grow past its capacity
// copies the whole memory into a new slice and leaves the old one to the
// garbage collector, and a run's memory, once closed, stays resident
// until a collection finds it. The budget (budget.go) counts each run's
// maxMemory, but the process then held more than that: two runs of 1 GiB
// growing step by step under a 2 GiB budget peaked at 2.5 GiB, and a run
// admitted when another ended found that one's memory still there.
//
// runMemory instead reserves each linear memory's maximum as address
// space that holds nothing (reserveGuest), makes pages usable as the
// guest grows into them (commitGuest: no copy, the address never moves,
// new pages read as zero as wasm requires) and gives them back to the
// operating system when the instance is closed (releaseGuest). What a
// run holds is then at most its maxMemory, and it is gone the moment the
// run ends, before the run's share of the budget is returned.
//
// The hook is wazero's experimental.MemoryAllocator.

// runMemory allocates the linear memories of one run and frees any left
// when the run ends: wazero frees a memory when its instance closes, but
// not one whose instantiation failed after the memory was made (a data
// segment out of bounds, a trapping start function).
type runMemory struct {
	mu   sync.Mutex
	mems []*linearMemory
}

var _ experimental.MemoryAllocator = (*runMemory)(nil)

// Allocate implements experimental.MemoryAllocator: max is the most the
// memory may grow to (the module's declared maximum, never more than the
// engine's limit, the run's maxMemory), capBytes what wazero would make
// usable at once.
func (r *runMemory) Allocate(capBytes, max uint64) experimental.LinearMemory {
	m := &linearMemory{max: max}
	if max > 0 {
		if mem, err := reserveGuest(max); err == nil {
			m.mem = mem
			if commitGuest(mem, 0, capBytes) != nil {
				releaseGuest(mem)
				m.mem = nil
			} else {
				m.committed = capBytes
			}
		}
	}
	if m.mem == nil {
		// No memory to grow, or no address space or no memory to commit
		// the first pages: wazero's own kind of memory, on the Go heap.
		m.heap = make([]byte, 0, capBytes)
	}
	r.mu.Lock()
	r.mems = append(r.mems, m)
	r.mu.Unlock()
	return m
}

// freeAll frees every memory of the run. Only once no guest code of the
// run can run any more: after its instance was closed, or its
// instantiation returned.
func (r *runMemory) freeAll() {
	r.mu.Lock()
	mems := r.mems
	r.mems = nil
	r.mu.Unlock()
	for _, m := range mems {
		m.Free()
	}
}

// linearMemory is one guest memory: mem the reserved range, of which
// the first committed bytes are usable; or, when nothing could be
// reserved, heap.
type linearMemory struct {
	mu        sync.Mutex
	max       uint64
	mem       []byte
	committed uint64
	heap      []byte
	freed     bool
}

// Reallocate implements experimental.LinearMemory: the memory made size
// bytes long, or nil (memory.grow answers -1 to the guest) past max or
// when the operating system has no memory to commit.
func (m *linearMemory) Reallocate(size uint64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed || size > m.max {
		return nil
	}
	if m.mem == nil {
		if size > uint64(len(m.heap)) {
			m.heap = append(m.heap, make([]byte, size-uint64(len(m.heap)))...)
		}
		return m.heap[:size:size]
	}
	if size > m.committed {
		if commitGuest(m.mem, m.committed, size) != nil {
			return nil
		}
		m.committed = size
	}
	return m.mem[:size:size]
}

// Free implements experimental.LinearMemory; a second call does nothing.
func (m *linearMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return
	}
	m.freed = true
	if m.mem != nil {
		releaseGuest(m.mem)
	}
	m.mem, m.heap = nil, nil
}
