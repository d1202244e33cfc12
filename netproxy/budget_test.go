package netproxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/mediator"
)

// TestBufferedBytesBudget: bodies held at once never exceed
// MaxBufferedBytes. A fetch that would exceed it waits, and fails with
// timeout when its time runs out first; Release makes room; small bodies
// never wait for large ones.
func TestBufferedBytesBudget(t *testing.T) {
	const max = 1 << 20
	srv := newCanary(t, func(w http.ResponseWriter, r *http.Request) {
		n := max
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		body := strings.Repeat("a", n)
		if r.URL.Query().Has("chunked") {
			for i := 0; i < n; i += 64 << 10 {
				w.Write([]byte(body[i:min(n, i+64<<10)]))
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(n))
		w.Write([]byte(body))
	})
	for _, q := range []string{"", "&chunked=1"} {
		t.Run("query"+q, func(t *testing.T) {
			f, _ := newTestFetcher(t, Config{MaxResponseBytes: max, MaxBufferedBytes: max})
			acl := mustACL(t, hostPortOf(srv))
			first, err := f.Fetch(context.Background(), acl, get(srv.URL+"/?n=1048576"+q))
			if err != nil || len(first.Body) != max {
				t.Fatalf("first: %v", err)
			}
			// The budget is held: a second large body cannot be read.
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			_, err = f.Fetch(ctx, acl, get(srv.URL+"/?n=1048576"+q))
			cancel()
			wantErr(t, err, mediator.CodeTimeout)
			// A small body does not wait.
			if small, err := f.Fetch(context.Background(), acl, get(srv.URL+"/?n=100"+q)); err != nil || len(small.Body) != 100 {
				t.Fatalf("small body while the budget is held: %v", err)
			}
			first.Release()
			first.Release() // twice is harmless
			second, err := f.Fetch(context.Background(), acl, get(srv.URL+"/?n=1048576"+q))
			if err != nil || len(second.Body) != max {
				t.Fatalf("after Release: %v", err)
			}
			second.Release()
			// A body of unknown length gives back what it did not use.
			if q != "" {
				mid, err := f.Fetch(context.Background(), acl, get(srv.URL+"/?n=400000"+q))
				if err != nil {
					t.Fatal(err)
				}
				if !f.buffered.TryAcquire(max - 400000) {
					t.Fatal("the unused part of the reservation was not given back")
				}
				f.buffered.Release(max - 400000)
				mid.Release()
			}
			if !f.buffered.TryAcquire(max) {
				t.Fatal("budget not whole after every Release")
			}
		})
	}
}
