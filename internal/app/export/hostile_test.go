package export

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// misbehaving is a loopback collector that does the scripted wrong thing
// until told to behave, then takes requests as a collector does; what it
// took while behaving is kept apart from what reached it before.
type misbehaving struct {
	srv     *httptest.Server
	stop    chan struct{} // closed when the test ends, before the server closes
	behave  atomic.Bool
	hostile atomic.Int64 // requests that met the misbehaviour
	mu      sync.Mutex
	good    [][]*logspb.LogRecord // requests taken while behaving
}

func newMisbehaving(t *testing.T, wrong http.HandlerFunc) *misbehaving {
	m := &misbehaving{stop: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.behave.Load() {
			m.hostile.Add(1)
			wrong(w, r.WithContext(context.WithValue(r.Context(), stopKey{}, m.stop)))
			return
		}
		b, err := io.ReadAll(r.Body)
		var req logspb.LogsData
		if err != nil || proto.Unmarshal(b, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var recs []*logspb.LogRecord
		for _, rl := range req.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				recs = append(recs, sl.LogRecords...)
			}
		}
		m.mu.Lock()
		m.good = append(m.good, recs)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(m.srv.Close)
	t.Cleanup(func() { close(m.stop) }) // first: a stalled handler returns
	return m
}

type stopKey struct{}

// stopOf is closed when the test of the server answering r ends.
func stopOf(r *http.Request) <-chan struct{} {
	return r.Context().Value(stopKey{}).(chan struct{})
}

// canary is a loopback listener standing for "another address": nothing
// may reach it.
type canary struct {
	srv  *httptest.Server
	hits atomic.Int64
}

func newCanary(t *testing.T) *canary {
	c := &canary{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK) // what a thief would answer: "taken"
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// TestExportToAMisbehavingCollector: a collector that redirects, stalls,
// answers 200 with a body that is not an OTLP answer, or drops the
// connection in the middle of a batch acknowledges nothing: the export
// fails (bounded in time), the cursor stays where it was, and the body
// never leaves for another address (the redirect's target, a canary on
// another loopback port, receives nothing, not even a GET). When the same
// endpoint then behaves, it gets every record exactly once.
func TestExportToAMisbehavingCollector(t *testing.T) {
	// Each misbehaviour, given where "another address" is.
	type misbehaviour func(elsewhere string) http.HandlerFunc
	redirect := func(status int) misbehaviour {
		return func(elsewhere string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				http.Redirect(w, r, elsewhere+LogsPath, status)
			}
		}
	}
	stall := func(string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			// Take the whole batch, then no answer until the exporter
			// hangs up (the server sees that only once the body was
			// read) or the test ends.
			io.Copy(io.Discard, r.Body)
			select {
			case <-r.Context().Done():
			case <-stopOf(r):
			}
		}
	}
	malformed := func(body string) misbehaviour {
		return func(string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, body)
			}
		}
	}
	dropMidBatch := func(string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			// Read the start of the batch, then cut the connection.
			io.ReadFull(r.Body, make([]byte, 64))
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}
	}
	for _, tc := range []struct {
		name  string
		wrong misbehaviour
		want  string // in the export's error
	}{
		{"307 to another address", redirect(http.StatusTemporaryRedirect), "redirect"},
		{"308 to another address", redirect(http.StatusPermanentRedirect), "redirect"},
		{"302 to another address", redirect(http.StatusFound), "redirect"},
		{"303 to another address", redirect(http.StatusSeeOther), "redirect"},
		{"301 to another address", redirect(http.StatusMovedPermanently), "redirect"},
		{"stall", stall, "gave up"},
		{"200 with an HTML page", malformed("<html><body>Welcome to the portal</body></html>"), "not an OTLP answer"},
		{"200 with JSON", malformed(`{"partialSuccess":{}}`), "not an OTLP answer"},
		{"200 with a cut protobuf", malformed("\x0a\x07\x08\x02"), "not an OTLP answer"},
		{"200 with a partial success of the wrong type", malformed("\x08\x02"), "not an OTLP answer"},
		{"drop mid-batch", dropMidBatch, "gave up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			fill(t, st, 30)
			thief := newCanary(t)
			m := newMisbehaving(t, tc.wrong(thief.srv.URL))
			u, err := ParseEndpoint(m.srv.URL, false)
			if err != nil {
				t.Fatal(err)
			}
			cursorFile := CursorPath(st.Dir(), u.String())
			// A cursor from an earlier export: it must stay as it is.
			before := Cursor{Endpoint: u.String(), AuditSeq: 3, DenialID: 0}
			if err := writeCursor(cursorFile, before); err != nil {
				t.Fatal(err)
			}
			// The client's timeout ends the stalling collector's case; at
			// 100 ms a loaded machine under the race detector timed out
			// the collectors that answer at once too (seen twice).
			o := fast(Options{Endpoint: u, BatchRecords: 10, RetryFor: 300 * time.Millisecond,
				Client: &http.Client{Timeout: 2 * time.Second}})
			start := time.Now()
			res, err := Run(context.Background(), st, o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("export = %+v, %v; want an error saying %q", res, err, tc.want)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("the export took %s against a misbehaving collector", took)
			}
			if res.Batches != 0 || res.Records != 0 || res.Cursor != before {
				t.Fatalf("result %+v: something counted as acknowledged", res)
			}
			if cur, err := ReadCursor(cursorFile); err != nil || cur != before {
				t.Fatalf("cursor %+v, %v; want it unchanged at %+v", cur, err, before)
			}
			if n := thief.hits.Load(); n != 0 {
				t.Fatalf("the redirect's target received %d requests", n)
			}
			if m.hostile.Load() == 0 {
				t.Fatal("the misbehaving collector was never asked")
			}

			// The same endpoint, now a collector: every record after the
			// cursor arrives, each once, and the cursor reaches the end.
			m.behave.Store(true)
			o.Client = nil
			res, err = Run(context.Background(), st, o)
			if err != nil {
				t.Fatalf("export to the collector behaving: %v", err)
			}
			seen := map[int64]int{}
			denials := 0
			m.mu.Lock()
			for _, req := range m.good {
				for _, r := range req {
					if s := iattr(r, AttrSeq); s != 0 {
						seen[s]++
					}
					if sattr(r, AttrKind) == "denial" {
						denials++
					}
				}
			}
			m.mu.Unlock()
			for seq := int64(4); seq <= 31; seq++ {
				if seen[seq] != 1 {
					t.Errorf("record %d arrived %d times", seq, seen[seq])
				}
			}
			if len(seen) != 28 || denials != 1 {
				t.Errorf("%d distinct records (want 28: 4..31), %d denials (want 1)", len(seen), denials)
			}
			if res.Records != 28 || res.Cursor.AuditSeq != 31 || res.Cursor.DenialID != 1 {
				t.Errorf("result %+v", res)
			}
			if cur, err := ReadCursor(cursorFile); err != nil || cur.AuditSeq != 31 {
				t.Errorf("cursor %+v, %v", cur, err)
			}
			if n := thief.hits.Load(); n != 0 {
				t.Fatalf("the redirect's target received %d requests", n)
			}
		})
	}
}

// TestExportRefusesRedirectsWithTheCallersClient: a client the caller
// passes that would follow redirects does not: the endpoint rule is the
// export's, not the client's.
func TestExportRefusesRedirectsWithTheCallersClient(t *testing.T) {
	thief := newCanary(t)
	m := newMisbehaving(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.srv.URL+LogsPath, http.StatusTemporaryRedirect)
	})
	st := openStore(t)
	fill(t, st, 1)
	u, err := ParseEndpoint(m.srv.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	follows := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return nil }}
	_, err = Run(context.Background(), st, fast(Options{Endpoint: u, Client: follows}))
	var re *RedirectError
	if !errors.As(err, &re) || re.Status != http.StatusTemporaryRedirect || !strings.Contains(re.Location, thief.srv.URL) {
		t.Fatalf("err = %v; want a refused 307 naming where it pointed", err)
	}
	if thief.hits.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
	if _, err := os.Stat(CursorPath(st.Dir(), u.String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cursor written: %v", err)
	}
	if follows.CheckRedirect == nil {
		t.Fatal("the caller's client was changed")
	}
}
