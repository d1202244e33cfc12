//go:build linux

package wasmhost

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

// growingModule grows its memory step pages at a time up to pages (or
// until memory.grow fails),
// writing to every 4 KiB page as it goes (as a Go or Rust guest's heap
// grows), then returns, or with hold loops until its run ends.
func growingModule(pages, step int32, hold bool) []byte {
	var b []byte
	add := func(code ...[]byte) {
		for _, c := range code {
			b = append(b, c...)
		}
	}
	add([]byte{0x02, 0x40, 0x03, 0x40}, // block loop
		[]byte{0x3f, 0x00}, i32const(pages), []byte{0x4e, 0x0d, 0x01}, // memory.size >= pages: out
		i32const(step), []byte{0x40, 0x00}, i32const(-1), []byte{0x46, 0x0d, 0x01}, // memory.grow step == -1: out
		[]byte{0x02, 0x40, 0x03, 0x40},                                                     // block loop: touch the new pages
		[]byte{0x20, 0x00, 0x3f, 0x00}, i32const(pageSize), []byte{0x6c, 0x4f, 0x0d, 0x01}, // local0 >= size*64K: out
		[]byte{0x20, 0x00}, i32const(1), []byte{0x36, 0x02, 0x00}, // i32.store [local0] 1
		[]byte{0x20, 0x00}, i32const(4096), []byte{0x6a, 0x21, 0x00}, // local0 += 4096
		[]byte{0x0c, 0x00, 0x0b, 0x0b}, // br 0; end end
		[]byte{0x0c, 0x00, 0x0b, 0x0b}, // br 0; end end
	)
	if hold {
		add([]byte{0x03, 0x40, 0x0c, 0x00, 0x0b}) // loop; br 0; end
	}
	return wmodule{memMin: 1, locals: []uint32{1}, start: b}.bytes()
}

// residentKiB reads VmRSS (now) and VmHWM (the peak since resetPeak) of
// this process.
func residentKiB(t *testing.T) (rss, peak int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := bytes.Cut(sc.Bytes(), []byte(":"))
		n, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
		switch string(k) {
		case "VmRSS":
			rss = n
		case "VmHWM":
			peak = n
		}
	}
	if rss == 0 || peak == 0 {
		t.Fatalf("no VmRSS or VmHWM in /proc/self/status")
	}
	return rss, peak
}

// resetPeak makes VmHWM the present resident size (Linux 4.0's
// clear_refs 5).
func resetPeak(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
}

// TestGuestMemoryBudgetHoldsInResidentMemory: three concurrent runs
// asking 1 GiB each under a 2 GiB budget. Two run and grow their memory
// 8 MiB at a time to the whole GiB, writing every page; the third is
// refused with memory_busy at its deadline, in the denial log with its
// decision record; once the two ended, a new run of 1 GiB runs. All the
// while the process's peak resident memory stays within the budget and a
// margin for the host's own heap: what the guests hold is what the budget
// counts, not that and the copies a memory leaves as it grows, nor the
// memory of runs that ended.
func TestGuestMemoryBudgetHoldsInResidentMemory(t *testing.T) {
	const (
		gib    = 1 << 30
		budget = 2 * gib
		margin = 192 << 20 // the host's heap, compiles, the store
	)
	rt, err := New(context.Background(), Config{MaxGuestMemory: budget, CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	f := newFixture(t)
	hold, done := growingModule(gib/pageSize, 127, true), growingModule(gib/pageSize, 127, false) // 1 + 129 steps of 127 pages (8 MiB): 1 GiB
	start := func(ctx context.Context, id string, module []byte, timeoutMs int64) <-chan Result {
		rec := f.install(t, id, probePerms, mediator.Capabilities{MaxMemory: gib, ExecutionTimeout: timeoutMs})
		spec := f.spec(rec, module, "")
		spec.Events = nil
		out := make(chan Result, 1)
		go func() {
			res, err := rt.Run(ctx, spec)
			if err != nil {
				res = fail(mediator.CodeInternal, "%v", err)
			}
			out <- res
		}()
		return out
	}

	runtime.GC()
	debug.FreeOSMemory()
	resetPeak(t)
	base, _ := residentKiB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, second := start(ctx, "first", hold, 120_000), start(ctx, "second", hold, 120_000)
	waitFor(t, "two runs holding 1 GiB each, written", func() bool {
		rss, _ := residentKiB(t)
		return (rss-base)<<10 >= budget-64<<20
	})
	third := <-start(context.Background(), "third", done, 500)
	if third.Code != mediator.CodeMemoryBusy {
		t.Fatalf("the third run: %q (%s); want memory_busy", third.Status, third.Error)
	}
	denials, err := f.st.ListDenialsAfter(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	recorded := false
	for _, d := range denials {
		recorded = recorded || d.AgentID == "third" && d.Code == mediator.CodeMemoryBusy && d.AuditSeq > 0
	}
	if !recorded {
		t.Fatalf("no memory_busy denial of the third run with its decision record: %+v", denials)
	}
	cancel()
	for _, c := range []<-chan Result{first, second} {
		if res := <-c; res.Code != mediator.CodeTimeout {
			t.Fatalf("a holder ended %q (%s); want it cancelled", res.Status, res.Error)
		}
	}
	if rt.budget.inUse() != 0 {
		t.Fatalf("%d bytes of the budget still reserved after the runs ended", rt.budget.inUse())
	}
	if res := <-start(context.Background(), "after", done, 120_000); res.Status != "ok" {
		t.Fatalf("a run after the others ended: %q (%s)", res.Status, res.Error)
	}
	_, peak := residentKiB(t)
	grew := (peak - base) << 10
	t.Logf("resident memory peaked %d MiB above where it started", grew>>20)
	if grew > budget+margin {
		t.Fatalf("resident memory peaked %d MiB above where it started; the budget is %d MiB (and %d MiB of margin)", grew>>20, budget>>20, margin>>20)
	}
}
