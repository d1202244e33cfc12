package viewer

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	_ "modernc.org/sqlite"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

const benchRows = 1_000_000

// fillDenials writes n denials straight into the store's database in one
// transaction: the benchmark is about the table's size, not about a
// million fsyncs. Times grow with ids, 100 ms apart, as LogDenial keeps them.
func fillDenials(b *testing.B, dir string, n int) {
	b.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "nmhost.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	stmt, err := tx.Prepare(`INSERT INTO denials (agent_id, permission, ts, code, context) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	defer stmt.Close()
	codes := []string{"host_not_allowed", "permission_not_granted", "private_address", "confirmation_required", "session_level"}
	for i := range n {
		h := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(i)>>7
		ctxJSON := `{"url":"https://h` + strconv.Itoa(i%997) + `.example.com/p","reason":"host is not in allowedHosts","layer":"host"}`
		if _, err := stmt.Exec("agent-"+strconv.Itoa(int(h%50)), string(mediator.KnownPermissions()[(h>>20)%7]),
			int64(1_700_000_000_000+i*100), codes[(h>>40)%5], ctxJSON); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

// benchViewer is newTestViewer for benchmarks, with fill records
// already in the store.
func benchViewer(b *testing.B, fill int, tweak func(*Config)) (base string, tok string, st *store.Store, srv *Server) {
	b.Helper()
	dir := b.TempDir()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if fill > 0 {
		fillDenials(b, dir, fill)
	}
	token, err := LoadOrCreateToken(dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{App: testApp(b, st), Token: token}
	if tweak != nil {
		tweak(&cfg)
	}
	srv, err = New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	b.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String(), token.String(), st, srv
}

// BenchmarkDenialsPageHTTP: one filtered page of 100 from 1,000,000
// records, through the real HTTP server, token check and JSON included.
func BenchmarkDenialsPageHTTP(b *testing.B) {
	base, tok, _, _ := benchViewer(b, benchRows, nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	t0 := int64(1_700_000_000_000)
	for _, c := range []struct{ name, query string }{
		{"newest", ""},
		{"agent", "agentId=agent-7"},
		{"permission", "permission=network.fetch"},
		{"code", "code=private_address"},
		{"agent+permission", "agentId=agent-3&permission=page.read"},
		{"agent+permission+code", "agentId=agent-3&permission=page.read&code=host_not_allowed"},
		{"time range", fmt.Sprintf("since=%d&until=%d", t0+10_000_000, t0+40_000_000)},
		{"agent+time range", fmt.Sprintf("agentId=agent-7&since=%d&until=%d", t0+10_000_000, t0+20_000_000)},
		{"agent deep page", fmt.Sprintf("agentId=agent-7&beforeId=%d", benchRows/2)},
		{"search", "q=h500.example"},
	} {
		b.Run(c.name, func(b *testing.B) {
			url := base + "/api/denials?limit=100&" + c.query
			var n int
			for b.Loop() {
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var p store.DenialPage
				err = json.NewDecoder(resp.Body).Decode(&p)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%d %v", resp.StatusCode, err)
				}
				n = len(p.Denials)
			}
			if n == 0 {
				b.Fatalf("empty page for %s", c.query)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
		})
	}
}

// BenchmarkLiveFanOut: 1,000 denials a second, written to the store as a
// host process writes them, fanned out to 50 websocket clients that read.
// It fails if any client misses a denial, and reports the worst and the
// 99th-percentile delay from write to receipt.
func BenchmarkLiveFanOut(b *testing.B) {
	const clients, perSecond = 50, 1000
	base, tok, st, srv := benchViewer(b, 0, nil)
	var wg sync.WaitGroup
	var received atomic.Int64
	var mu sync.Mutex
	var delays []time.Duration
	written := sync.Map{} // id -> time written
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+tok)
		c, _, err := websocket.DefaultDialer.Dial("ws"+base[len("http"):]+"/ws", h)
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = c
		defer c.Close()
	}
	for srv.hub.count() != clients {
		time.Sleep(5 * time.Millisecond)
	}
	total := b.N * perSecond
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := 0
			c.SetReadDeadline(time.Now().Add(time.Duration(b.N)*time.Second + 30*time.Second))
			for got < total {
				var m struct {
					Type   string
					Denial mediator.Denial
				}
				if err := c.ReadJSON(&m); err != nil {
					return
				}
				if m.Type != "denial" {
					continue
				}
				got++
				received.Add(1)
				if w, ok := written.Load(m.Denial.ID); ok {
					mu.Lock()
					delays = append(delays, time.Since(w.(time.Time)))
					mu.Unlock()
				}
			}
		}()
	}
	b.ResetTimer()
	tick := time.NewTicker(time.Second / perSecond)
	for range total {
		<-tick.C
		d, err := st.LogDenial(context.Background(), mediator.Denial{AgentID: "fan", Permission: "network.fetch",
			Code: mediator.CodeHostNotAllowed, Context: mediator.DenialContext{URL: "https://x.test/", Reason: "bench"}})
		if err != nil {
			b.Fatal(err)
		}
		written.Store(d.ID, time.Now())
	}
	tick.Stop()
	wg.Wait()
	b.StopTimer()
	if got, want := received.Load(), int64(total*clients); got != want {
		b.Fatalf("clients received %d denials; want %d (none dropped)", got, want)
	}
	if srv.hub.count() != clients {
		b.Fatalf("%d clients were dropped", clients-srv.hub.count())
	}
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(0, "dropped")
}
