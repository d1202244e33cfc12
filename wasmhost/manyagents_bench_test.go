package wasmhost

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

// manyAgents is how many small agents BenchmarkManyAgents keeps alive at
// once, and smallAgentMemory the memory each may have: one wasm page.
const (
	manyAgents       = 1000
	smallAgentMemory = 64 << 10
)

// manyAgentsRan is set once BenchmarkManyAgents has run in this process.
var manyAgentsRan atomic.Bool

// writeOnce is a module with one page of memory (its maximum too) whose
// _start writes "x" to stdout with WASI's fd_write and returns: the
// smallest agent that does something the host sees while it runs.
func writeOnce() []byte {
	i32 := byte(0x7f)
	types := [][]byte{
		{0x60, 0x04, i32, i32, i32, i32, 0x01, i32}, // fd_write: (fd, iovs, iovs_len, nwritten) -> errno
		{0x60, 0x00, 0x00},                          // _start: () -> ()
	}
	imports := [][]byte{append(append(testwasm.Name("wasi_snapshot_preview1"), testwasm.Name("fd_write")...), 0x00, 0x00)}
	exports := [][]byte{
		append(testwasm.Name("_start"), 0x00, 0x01),
		append(testwasm.Name("memory"), 0x02, 0x00),
	}
	body := []byte{0x00} // no locals
	body = append(body, i32const(1)...)
	body = append(body, i32const(0)...)
	body = append(body, i32const(1)...)
	body = append(body, i32const(8)...)
	body = append(body, call(0)...)
	body = append(body, 0x1a, 0x0b) // drop; end
	// At 0 the one iovec {buf 16, len 1}; nwritten at 8; the byte at 16.
	data := append([]byte{0x00, 0x41, 0x00, 0x0b}, uleb(17)...)
	data = append(data, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x')
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, types)...)
	out = append(out, section(2, imports)...)
	out = append(out, section(3, [][]byte{{0x01}})...)
	out = append(out, section(5, [][]byte{limits(1, 1)})...)
	out = append(out, section(7, exports)...)
	out = append(out, section(10, [][]byte{append(uleb(uint32(len(body))), body...)})...)
	out = append(out, section(11, [][]byte{data})...)
	return out
}

// BenchmarkManyAgents runs manyAgents small agents (64 KiB of memory
// each) at once through Runtime.Run, as the host runs them: each writes
// one byte, and its output event holds it there until every one of them
// has written, so all are instantiated together. It reports the process's
// peak resident memory over the runs (VmHWM, reset before them) in MiB,
// the target (twice the agents' memory plus 100 MB) and the peak's
// multiple of the target (x-target: at most 1 meets it), and, for the
// process's first run, what each agent added to the RSS the process had
// before it (KiB/agent).
func BenchmarkManyAgents(b *testing.B) {
	if !resetPeakRSS() {
		b.Skip("the peak RSS cannot be reset here (needs Linux's /proc/self/clear_refs)")
	}
	f := newFixture(b)
	module := writeOnce()
	rec := f.install(b, "small", nil, mediator.Capabilities{MaxMemory: smallAgentMemory})
	rec.ModuleSHA256 = shaOf(module)
	rt, err := New(context.Background(), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(context.Background())
	// One run first: the module is compiled once, as an installed agent's
	// is at install, and the run is checked.
	if res, err := rt.Run(context.Background(), f.spec(rec, module, "")); err != nil || res.Status != "ok" || res.Output != "x" {
		b.Fatalf("%v %+v", err, res)
	}
	target := 2*float64(manyAgents*smallAgentMemory)/(1<<20) + 100e6/(1<<20)
	var peak, rest, first float64
	for b.Loop() {
		runtime.GC()
		resetPeakRSS()
		if rest == 0 {
			rest = peakRSSMiB(b) // just reset: the RSS now
		}
		var arrived, done sync.WaitGroup
		release := make(chan struct{})
		arrived.Add(manyAgents)
		done.Add(manyAgents)
		errs := make(chan string, manyAgents)
		for range manyAgents {
			spec := f.spec(rec, module, "")
			var once sync.Once
			spec.Events = func(e Event) {
				if e.Kind == "output" {
					once.Do(func() { arrived.Done(); <-release })
				}
			}
			go func() {
				defer done.Done()
				res, err := rt.Run(context.Background(), spec)
				if err != nil || res.Status != "ok" {
					errs <- res.Status + " " + res.Error
					once.Do(arrived.Done) // never arrived: do not hold the others
				}
			}()
		}
		arrived.Wait()
		close(release)
		done.Wait()
		close(errs)
		for e := range errs {
			b.Fatalf("a run failed: %s", e)
		}
		p := peakRSSMiB(b)
		if first == 0 {
			// Later runs find the heap the first one grew: only the
			// first says what the agents added.
			first = p
		}
		peak = max(peak, p)
	}
	b.ReportMetric(peak, "peak-MiB")
	if !manyAgentsRan.Swap(true) {
		// Only the process's first round finds the heap as the agents
		// alone grow it; a later one (-count) reuses what it left.
		b.ReportMetric((first-rest)*1024/manyAgents, "KiB/agent")
	}
	b.ReportMetric(target, "target-MiB")
	b.ReportMetric(peak/target, "x-target")
}

// resetPeakRSS resets the process's VmHWM to its current RSS (Linux:
// writing 5 to clear_refs), and reports whether it could.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSSMiB reads VmHWM from /proc/self/status.
func peakRSSMiB(b *testing.B) float64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
