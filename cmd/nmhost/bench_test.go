package main

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/nmclient"
)

// BenchmarkRoundTripSequential sends one small request at a time to the
// built binary over pipes and waits for each reply.
func BenchmarkRoundTripSequential(b *testing.B) {
	p := start(b, newDataDir(b))
	ctx := context.Background()
	for b.Loop() {
		r, err := p.Call(ctx, "hello", nil)
		if err != nil || !r.Success {
			b.Fatalf("%v %+v", err, r)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkRoundTrip64InFlight keeps 64 small requests in flight, as an
// extension does when several tabs run agents at once.
func BenchmarkRoundTrip64InFlight(b *testing.B) {
	p := start(b, newDataDir(b))
	ctx := context.Background()
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				r, err := p.Call(ctx, "getAgentInfo", map[string]any{"agentId": "none"})
				if err != nil || r.Code != "unknown_agent" {
					b.Errorf("%v %+v", err, r)
				}
			}
		}()
	}
	b.ResetTimer()
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkColdStart is what sendNativeMessage costs: a new process, the
// store opened, one request answered, and exit.
func BenchmarkColdStart(b *testing.B) {
	dir := newDataDir(b)
	// One start beforehand creates the database, as an installed host has.
	warm := start(b, dir)
	if r, err := warm.Call(context.Background(), "list-agents", nil); err != nil || !r.Success {
		b.Fatalf("%v %+v", err, r)
	}
	warm.Wait()
	for b.Loop() {
		p, err := startProcess(dir)
		if err != nil {
			b.Fatal(err)
		}
		r, err := p.Call(context.Background(), "list-agents", nil)
		if err != nil || !r.Success {
			b.Fatalf("%v %+v", err, r)
		}
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func startProcess(dir string) (*nmclient.Process, error) {
	return nmclient.Start(nmhostBin, []string{origin}, hostEnv(dir), io.Discard)
}
