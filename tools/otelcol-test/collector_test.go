// Package otelcoltest checks nmhost export against the OpenTelemetry
// Collector's own OTLP receiver. It is a module of its own so that the
// collector's dependencies never enter nmhost's go.mod.
package otelcoltest

import (
	"context"
	"net"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// arrived is one log record as the collector's pipeline received it.
type arrived struct {
	event    string
	body     string
	attrs    map[string]any
	resource map[string]any
}

// sink is the pipeline's consumer: it keeps every record and signals
// each request it took.
type sink struct {
	mu       sync.Mutex
	records  []arrived
	requests chan int // the number of records of each request consumed
	// countOnly keeps no records, only their number (benchmarks).
	countOnly bool
	count     int
	// holdAt, when set, holds the holdAt-th request inside the pipeline,
	// telling held, until release is closed: the test stops the collector
	// with an export surely under way.
	holdAt        int
	seen          int
	held, release chan struct{}
}

func newSink() *sink { return &sink{requests: make(chan int, 1<<16)} }

func (s *sink) consume(_ context.Context, ld plog.Logs) error {
	if s.countOnly {
		s.mu.Lock()
		s.count += ld.LogRecordCount()
		s.mu.Unlock()
		return nil
	}
	var got []arrived
	for _, rl := range ld.ResourceLogs().All() {
		res := rl.Resource().Attributes().AsRaw()
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				got = append(got, arrived{event: lr.EventName(), body: lr.Body().Str(), attrs: lr.Attributes().AsRaw(), resource: res})
			}
		}
	}
	s.mu.Lock()
	s.records = append(s.records, got...)
	s.seen++
	hold := s.seen == s.holdAt
	s.mu.Unlock()
	s.requests <- len(got)
	if hold {
		close(s.held)
		<-s.release
	}
	return nil
}

func (s *sink) all() []arrived {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrived(nil), s.records...)
}

// freeAddr is a loopback address nothing listens on now: the collector
// is started, stopped and started again on it.
func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startCollector starts the OTLP receiver, HTTP only, on addr with s as
// its logs pipeline; stop it with Shutdown.
func startCollector(t testing.TB, addr string, s *sink) receiver.Logs {
	t.Helper()
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	next, err := consumer.NewLogs(s.consume)
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	return r
}
