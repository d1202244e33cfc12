package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/frame"
	"github.com/agentgate/nmhost/internal/norace"
)

// hostPeakLimit is the documented bound on the host's peak memory under
// any mix of in-flight requests at the documented limits (docs/protocol.md,
// "Limits").
const hostPeakLimit = 256 << 20

// TestHostPeakMemoryUnderHostileInput runs the real host with 64 requests
// in flight at once: fetches of 32 MiB bodies built to cost the most to
// encode (control characters, which JSON escapes six-fold, with a
// Content-Length; and '<' without one) and frames of just under the
// inbound limit that are nothing but tiny headers. (Frames over the limit
// are skipped unread; internal/host tests them.) The host's peak resident
// memory (VmHWM) must stay under hostPeakLimit, and every request must get
// its reply.
//
// Under the race detector the test runs again in a copy of this test
// binary built without it (norace.Moved): the host is a plain build
// either way, and the race-built client spent 40 s of CPU decoding the
// 32 MiB replies, which the host's peak does not depend on.
func TestHostPeakMemoryUnderHostileInput(t *testing.T) {
	if norace.Moved(t, nmhostBin) {
		return
	}
	peak := hostileMix(t)
	t.Logf("host peak RSS %d MiB under 4 x 32 MiB fetches, 20 small ones and 40 header bombs", peak>>20)
	if peak > hostPeakLimit {
		t.Fatalf("host peak RSS %d MiB; the documented bound is %d MiB", peak>>20, hostPeakLimit>>20)
	}
}

// BenchmarkHostPeakRSS reports the same scenario's peak as a metric, for the
// docs/performance.md: go test -run XXX -bench HostPeakRSS -benchtime 1x ./cmd/nmhost
func BenchmarkHostPeakRSS(b *testing.B) {
	var peak int64
	for range b.N {
		peak = max(peak, hostileMix(b))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(hostPeakLimit)/(1<<20), "bound-MiB")
}

// hostileMix runs the scenario and returns the host's peak RSS.
func hostileMix(t testing.TB) int64 {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Fatal("this test reads the host's peak memory from /proc: it runs on Linux")
	}
	const bodySize = 32 << 20
	controls := bytes.Repeat([]byte{1}, bodySize)
	angles := bytes.Repeat([]byte{'<'}, 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/controls":
			w.Header().Set("Content-Length", strconv.Itoa(bodySize))
			w.Write(controls)
		case "/small":
			w.Write([]byte("small"))
		case "/angles": // no Content-Length: the host cannot size it in advance
			for range bodySize / len(angles) {
				w.Write(angles)
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := newDataDir(t)
	p := start(t, dir)
	prof := profile("big", host)
	// Big fetches take turns for the host's buffer budget; the wait counts
	// against the agent's time, so this agent gets two minutes.
	prof["profile"].(map[string]any)["capabilities"].(map[string]any)["executionTimeout"] = 120000
	if r := call(t, p.Client, "install-agent", prof); !r.Success {
		t.Fatalf("install: %+v", r)
	}

	// 64 requests at once: 4 fetches of 32 MiB (they take turns for the
	// buffer budget, about 1.5 s each here), 20 small ones, 40 header bombs.
	var wg sync.WaitGroup
	var bigDone atomic.Int32
	errs := make(chan error, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := range 24 {
		path := "/small"
		if i < 4 {
			path = []string{"/controls", "/angles"}[i%2]
		}
		wg.Go(func() {
			r, err := p.Client.Call(ctx, "network-fetch", map[string]any{"agentId": "big", "url": srv.URL + path})
			switch {
			case err != nil:
				errs <- fmt.Errorf("fetch %s: %v", path, err)
			case r.Success && path != "/small":
				bigDone.Add(1)
			case r.Code == "timeout" && path != "/small":
				// Big bodies take turns for the buffer budget; on a busy
				// machine one may run out of time waiting: that is the
				// budget doing its job, and it is answered.
			case !r.Success:
				errs <- fmt.Errorf("fetch %s: %s %s", path, r.Code, r.Error)
			}
		})
	}
	bomb := headerBomb(srv.URL, frame.MaxInbound-64)
	for range 40 {
		if err := p.Client.Send(bomb); err != nil {
			t.Fatal(err)
		}
	}
	// The bombs are answered with errors (their replies carry no id a call
	// waits for).
	refused := map[string]int{}
	for range 40 {
		select {
		case r := <-p.Client.Unmatched:
			refused[r.Code]++
		case <-ctx.Done():
			t.Fatalf("refusals so far: %v", refused)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if bigDone.Load() == 0 {
		t.Error("no 32 MiB body got through")
	}
	if refused["bad_request"] != 40 {
		t.Errorf("refusals %v; want 40 bad_request (too many headers)", refused)
	}
	return peakRSS(t, p.Cmd.Process.Pid)
}

// headerBomb is a network-fetch message of about size bytes that is
// nothing but tiny request headers.
func headerBomb(url string, size int) []byte {
	var b bytes.Buffer
	b.Grow(size)
	fmt.Fprintf(&b, `{"id":"bomb","type":"network-fetch","agentId":"big","url":%q,"options":{"headers":{`, url)
	for i := 0; b.Len() < size-32; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"h%d":""`, i)
	}
	b.WriteString(`}}}`)
	return b.Bytes()
}

// peakRSS reads a process's peak resident set size.
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
