package otelcoltest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// capture keeps a copy of every request body it passes on: the baseline
// posts exactly what the exporter sent.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *capture) RoundTrip(r *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(b))
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkExport100k ships 100,000 audit records from a store to the
// collector's OTLP receiver (default batches: 1000 records, at most
// 1 MiB), beside its baseline: the same request bodies, already encoded,
// POSTed one after another to the same receiver with net/http.
//
//	cd tools/otelcol-test && go test -run XXX -bench Export100k -benchtime 3x
func BenchmarkExport100k(b *testing.B) {
	const n = 100_000
	st := openStore(b)
	fillDenying(b, st, n, 0)
	addr := freeAddr(b)
	s := &sink{countOnly: true}
	r := startCollector(b, addr, s)
	defer r.Shutdown(context.Background())
	o := endpoint(b, addr)
	cursor := filepath.Join(b.TempDir(), "cursor.json")
	o.CursorFile = cursor

	// The bodies the exporter sends, captured once, untimed.
	c := &capture{}
	co := o
	co.Client = &http.Client{Transport: c}
	co.CursorFile = filepath.Join(b.TempDir(), "capture-cursor.json")
	if _, err := exportRun(co, st); err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, body := range c.bodies {
		size += len(body)
	}
	b.Logf("%d requests, %d bytes each on average", len(c.bodies), size/len(c.bodies))

	b.Run("raw-POST", func(b *testing.B) {
		client := &http.Client{}
		for i := 0; i < b.N; i++ {
			for _, body := range c.bodies {
				resp, err := client.Post(o.Endpoint.String(), "application/x-protobuf", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("HTTP %d", resp.StatusCode)
				}
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("export", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			os.Remove(cursor) // from the start again
			b.StartTimer()
			res, err := exportRun(o, st)
			if err != nil {
				b.Fatal(err)
			}
			if res.Records != n {
				b.Fatalf("%d records shipped", res.Records)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
