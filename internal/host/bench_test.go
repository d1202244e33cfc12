package host

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/frame"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// servePipes runs Serve on OS pipes, as the browser connects it, and
// returns the browser's ends: a writer of requests and a reader of replies.
func servePipes(b *testing.B) (*frame.Writer, *frame.Reader) {
	st, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fetcher := netproxy.New(netproxy.Config{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(context.Background(), inR, outW, Options{
			App: testApp(b, st, fetcher, mediator.AdminPolicy{}), Caller: Caller{Origin: testOrigin, Browser: "chromium"}, OriginAllowed: true,
		})
		outW.Close()
	}()
	b.Cleanup(func() {
		inW.Close()
		<-done
		inR.Close()
		outR.Close()
		st.Close()
	})
	return frame.NewBrowserWriter(inW), frame.NewReader(outR)
}

// BenchmarkServe is Serve in-process on OS pipes, with nothing decoding
// the replies: the host's own share of a round trip, for profiling.
func BenchmarkServe(b *testing.B) {
	hello := []byte(`{"id":"1","type":"hello"}`)
	b.Run("hello-sequential", func(b *testing.B) {
		w, r := servePipes(b)
		b.ReportAllocs()
		for b.Loop() {
			if err := w.Write(hello); err != nil {
				b.Fatal(err)
			}
			if msg, err := r.Next(); err != nil || !bytes.Contains(msg, []byte(`"success":true`)) {
				b.Fatal(err, string(msg))
			}
		}
	})
	b.Run("hello-64-in-flight", func(b *testing.B) {
		w, r := servePipes(b)
		b.ReportAllocs()
		go func() {
			for range b.N {
				if err := w.Write(hello); err != nil {
					return
				}
			}
		}()
		for range b.N {
			if msg, err := r.Next(); err != nil || !bytes.Contains(msg, []byte(`"success":true`)) {
				b.Fatal(err, string(msg))
			}
		}
	})
	for _, size := range []int{2, 1 << 20} {
		b.Run("fetch-"+map[int]string{2: "2B", 1 << 20: "1MiB"}[size], func(b *testing.B) { benchServeFetch(b, size) })
	}
}

// benchServeFetch is network-fetch of a body of size bytes from a
// loopback server, the reply's frames read and not decoded. With TMPDIR
// on a memory file system the store's fsyncs cost nothing, and a CPU
// profile shows the host's own work.
func benchServeFetch(b *testing.B, size int) {
	{
		body := bytes.Repeat([]byte("a"), size)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
		defer srv.Close()
		w, r := servePipes(b)
		install, _ := json.Marshal(map[string]any{"id": "i", "type": "install-agent", "profile": map[string]any{
			"agentId":      "bench",
			"permissions":  map[string]any{"required": []string{"network.fetch"}},
			"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{strings.TrimPrefix(srv.URL, "http://")}},
		}})
		if err := w.Write(install); err != nil {
			b.Fatal(err)
		}
		if msg, err := r.Next(); err != nil || !bytes.Contains(msg, []byte(`"success":true`)) {
			b.Fatal(err, string(msg))
		}
		fetch, _ := json.Marshal(map[string]any{"id": "f", "type": "network-fetch", "agentId": "bench", "url": srv.URL})
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if err := w.Write(fetch); err != nil {
				b.Fatal(err)
			}
			// 1 MiB of text and its envelope: two chunks; 2 B: one frame.
			for range 1 + size/(1<<20) {
				if _, err := r.Next(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
