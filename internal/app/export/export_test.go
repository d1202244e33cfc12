package export

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/storetest"
	"github.com/agentgate/nmhost/mediator"
)

// lostAnswer, as a scripted answer, takes the request and closes the
// connection without answering.
const lostAnswer = -1

// collector is a loopback OTLP/HTTP stand-in: it decodes each request as
// LogsData (the wire form of ExportLogsServiceRequest) and answers what
// the test scripts, 200 when nothing is scripted.
type collector struct {
	srv      *httptest.Server
	mu       sync.Mutex
	answers  []int // status codes to answer next, in order
	requests [][]*logspb.LogRecord
	arrived  chan struct{} // one send per accepted request
}

func newCollector(t *testing.T, answers ...int) *collector {
	c := &collector{answers: answers, arrived: make(chan struct{}, 1000)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		status := http.StatusOK
		if len(c.answers) > 0 {
			status, c.answers = c.answers[0], c.answers[1:]
		}
		if status == http.StatusOK || status == lostAnswer {
			var req logspb.LogsData
			if err := proto.Unmarshal(b, &req); err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
				status = http.StatusBadRequest
			} else {
				var recs []*logspb.LogRecord
				for _, rl := range req.ResourceLogs {
					for _, sl := range rl.ScopeLogs {
						recs = append(recs, sl.LogRecords...)
					}
				}
				c.requests = append(c.requests, recs)
			}
		}
		c.mu.Unlock()
		if status == lostAnswer {
			// Taken, but the answer never reaches the exporter.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "0")
		}
		w.WriteHeader(status)
		if status == http.StatusOK {
			c.arrived <- struct{}{}
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) endpoint(t *testing.T) *url.URL {
	u, err := ParseEndpoint(c.srv.URL, false)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (c *collector) records() []*logspb.LogRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*logspb.LogRecord
	for _, r := range c.requests {
		out = append(out, r...)
	}
	return out
}

func (c *collector) reqs() [][]*logspb.LogRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]*logspb.LogRecord(nil), c.requests...)
}

// count is how many audit records (by distinct nmhost.seq) and denials
// have arrived.
func (c *collector) count() (records, denials int) {
	seqs := map[int64]bool{}
	for _, r := range c.records() {
		if s := iattr(r, AttrSeq); s != 0 {
			seqs[s] = true
		}
		if sattr(r, AttrKind) == "denial" {
			denials++
		}
	}
	return len(seqs), denials
}

func attr(r *logspb.LogRecord, k string) (*commonpb.AnyValue, bool) {
	for _, a := range r.Attributes {
		if a.Key == k {
			return a.Value, true
		}
	}
	return nil, false
}

func sattr(r *logspb.LogRecord, k string) string {
	v, _ := attr(r, k)
	return v.GetStringValue()
}

func iattr(r *logspb.LogRecord, k string) int64 {
	v, _ := attr(r, k)
	return v.GetIntValue()
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(storetest.Dir(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fill appends n allowed decisions and one denial decided outside the
// policy (its decision record is appended with it).
func fill(t *testing.T, st *store.Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		_, err := st.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Allowed: true, Code: mediator.CodeAllowed,
			DecidedBy: "class:ALWAYS_SAFE", Reason: "it only reads",
			Operation: mediator.Operation{AgentID: "fetcher", Permission: "network.fetch", Name: "network.fetch",
				Method: "GET", URL: "https://example.com/", Host: "example.com", SessionLevel: "medium"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := st.LogDenial(ctx, mediator.Denial{AgentID: "fetcher", Permission: "network.fetch", Code: mediator.CodeHostNotAllowed,
		Context: mediator.DenialContext{URL: "http://blocked.test/", Reason: "host not in allowedHosts", Layer: "host",
			Details: map[string]string{"decidedBy": "acl:allowedHosts", "session": "s1"}}})
	if err != nil {
		t.Fatal(err)
	}
}

func fast(o Options) Options {
	o.Backoff = Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	return o
}

// TestExportShipsEveryRecordOnceWithItsAttributes: the first export sends
// every record, denial and a checkpoint with the documented attributes;
// a second one sends nothing.
func TestExportShipsEveryRecordOnceWithItsAttributes(t *testing.T) {
	st := openStore(t)
	fill(t, st, 3)
	c := newCollector(t)
	ctx := context.Background()
	res, err := Run(ctx, st, fast(Options{Endpoint: c.endpoint(t)}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 4 || res.Denials != 1 || res.Checkpoints != 1 || res.Cursor.AuditSeq != 4 || res.Cursor.DenialID != 1 {
		t.Fatalf("result %+v", res)
	}
	recs := c.records()
	if len(recs) != 6 {
		t.Fatalf("%d records arrived; want 4 audit, 1 denial, 1 checkpoint", len(recs))
	}
	t.Run("decision", func(t *testing.T) {
		r := recs[0]
		for k, want := range map[string]string{AttrKind: "decision", AttrAgent: "fetcher", AttrOperation: "network.fetch",
			AttrURL: "https://example.com/", AttrHost: "example.com", AttrDecision: "allowed", AttrCode: "allowed",
			AttrDecidedBy: "class:ALWAYS_SAFE", AttrDecidedSource: "class", AttrSessionLevel: "medium", AttrMethod: "GET"} {
			if got := sattr(r, k); got != want {
				t.Errorf("%s = %q; want %q", k, got, want)
			}
		}
		if iattr(r, AttrSeq) != 1 || r.EventName != "nmhost.audit.decision" || !strings.HasPrefix(r.Body.GetStringValue(), `{"ts":`) {
			t.Errorf("seq %d, event %q, body %q", iattr(r, AttrSeq), r.EventName, r.Body.GetStringValue())
		}
	})
	t.Run("denial after its decision", func(t *testing.T) {
		dec, den := recs[3], recs[4]
		if sattr(dec, AttrDecision) != "denied" || iattr(dec, AttrSeq) != 4 || sattr(dec, AttrDecidedBy) != "acl:allowedHosts" {
			t.Errorf("decision record %v", dec.Attributes)
		}
		if sattr(den, AttrKind) != "denial" || iattr(den, AttrDenialID) != 1 || iattr(den, AttrDenialSeq) != 4 ||
			sattr(den, AttrSession) != "s1" || sattr(den, AttrCode) != "host_not_allowed" || sattr(den, AttrDecidedSource) != "acl" {
			t.Errorf("denial record %v", den.Attributes)
		}
		if _, ok := attr(den, AttrSeq); ok {
			t.Error("a denial carries nmhost.seq: it is the audit records' dedupe key")
		}
	})
	t.Run("checkpoint last", func(t *testing.T) {
		cp := recs[5]
		if sattr(cp, AttrKind) != "checkpoint" || iattr(cp, AttrCPSize) != 4 || !strings.HasPrefix(sattr(cp, AttrCPNote), "go.sum database tree\n4\n") {
			t.Errorf("checkpoint record %v", cp.Attributes)
		}
	})
	t.Run("second export sends nothing", func(t *testing.T) {
		before := len(c.reqs())
		res, err := Run(ctx, st, fast(Options{Endpoint: c.endpoint(t)}))
		if err != nil || res.Batches != 0 || len(c.reqs()) != before {
			t.Fatalf("second run: %+v, %v; %d requests, want %d", res, err, len(c.reqs()), before)
		}
	})
}

// TestExportRetriesUntilAcknowledged: 503, 429 and 502 are retried with
// backoff and nothing is lost or sent twice.
func TestExportRetriesUntilAcknowledged(t *testing.T) {
	st := openStore(t)
	fill(t, st, 5)
	c := newCollector(t, 503, 429, 502)
	var retries []string
	res, err := Run(context.Background(), st, fast(Options{Endpoint: c.endpoint(t), Notify: func(m string) { retries = append(retries, m) }}))
	if err != nil {
		t.Fatal(err)
	}
	if len(retries) != 3 || !strings.Contains(retries[0], "HTTP 503") {
		t.Errorf("retries %q", retries)
	}
	if got := len(c.records()); got != 8 || res.Records != 6 {
		t.Fatalf("%d records arrived (%+v); want 6 audit, 1 denial, 1 checkpoint", got, res)
	}
}

// TestExportLostAnswerIsSentAgain: a request the collector took but whose
// answer was lost is sent again (at-least-once); by nmhost.seq, the
// receiver's dedupe key, every record is there exactly once.
func TestExportLostAnswerIsSentAgain(t *testing.T) {
	st := openStore(t)
	fill(t, st, 3)
	c := newCollector(t, lostAnswer)
	res, err := Run(context.Background(), st, fast(Options{Endpoint: c.endpoint(t)}))
	if err != nil || res.Batches != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := len(c.reqs()); got != 2 {
		t.Fatalf("%d requests arrived; want the same one twice", got)
	}
	if recs, dens := c.count(); recs != 4 || dens != 2 {
		t.Fatalf("%d distinct audit records, %d denials (with the repeat); want 4 and 2", recs, dens)
	}
}

// TestExportUnreachableGivesUpWithoutAdvancing: connection refused is
// retried until RetryFor, then reported; the cursor is not written.
func TestExportUnreachableGivesUpWithoutAdvancing(t *testing.T) {
	st := openStore(t)
	fill(t, st, 1)
	c := newCollector(t)
	u := c.endpoint(t)
	c.srv.Close() // nothing listens on the port now
	o := fast(Options{Endpoint: u, RetryFor: 50 * time.Millisecond})
	_, err := Run(context.Background(), st, o)
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), "gave up") {
		t.Fatalf("err = %v; want unreachable, gave up", err)
	}
	if _, err := os.Stat(CursorPath(st.Dir(), u.String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cursor written after a failed export: %v", err)
	}
}

// TestExportPermanentRefusal: a 4xx other than 429 is not retried, is
// reported with its status, and leaves the cursor where it was.
func TestExportPermanentRefusal(t *testing.T) {
	for _, status := range []int{400, 401, 404, 413} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			st := openStore(t)
			fill(t, st, 1)
			c := newCollector(t, status, 200)
			_, err := Run(context.Background(), st, fast(Options{Endpoint: c.endpoint(t)}))
			var pe *PermanentError
			if !errors.As(err, &pe) || pe.Status != status {
				t.Fatalf("err = %v; want a permanent HTTP %d", err, status)
			}
			if len(c.records()) != 0 {
				t.Fatal("records counted as sent")
			}
			cur, _ := ReadCursor(CursorPath(st.Dir(), c.endpoint(t).String()))
			if cur != (Cursor{}) {
				t.Fatalf("cursor moved to %+v", cur)
			}
		})
	}
}

// TestExportBatchBounds: no request holds more records or (but for one
// record) more bytes than the bounds, and every record arrives once.
func TestExportBatchBounds(t *testing.T) {
	st := openStore(t)
	fill(t, st, 40)
	for _, c := range []struct {
		name           string
		records, bytes int
	}{{"by count", 7, 0}, {"by bytes", 0, 2000}} {
		t.Run(c.name, func(t *testing.T) {
			col := newCollector(t)
			_, err := Run(context.Background(), st, fast(Options{Endpoint: col.endpoint(t), BatchRecords: c.records, BatchBytes: c.bytes}))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int64]bool{}
			for _, req := range col.reqs() {
				size := 0
				for _, r := range req {
					size += proto.Size(r)
					if s := iattr(r, AttrSeq); s != 0 {
						if seen[s] {
							t.Errorf("record %d sent twice", s)
						}
						seen[s] = true
					}
				}
				if c.records > 0 && len(req) > c.records || c.bytes > 0 && size > c.bytes && len(req) > 1 {
					t.Errorf("a request of %d records, %d bytes", len(req), size)
				}
			}
			if len(seen) != 41 || len(col.reqs()) < 3 {
				t.Fatalf("%d records in %d requests; want 41 in several", len(seen), len(col.reqs()))
			}
		})
	}
}

// TestExportFollowShipsNewRecordsAndStopsCleanly: --follow ships what is
// appended after it started, and returns nil when its context ends.
func TestExportFollowShipsNewRecordsAndStopsCleanly(t *testing.T) {
	st := openStore(t)
	fill(t, st, 1)
	c := newCollector(t)
	ctx, cancel := context.WithCancel(context.Background())
	following := make(chan struct{})
	done := make(chan error, 1)
	var res Result
	go func() {
		var err error
		res, err = Run(ctx, st, fast(Options{Endpoint: c.endpoint(t), Follow: true, Poll: 10 * time.Millisecond,
			Following: func() { close(following) }}))
		done <- err
	}()
	<-following
	fill(t, st, 2)
	deadline := time.After(10 * time.Second)
	for recs, dens := c.count(); recs < 5 || dens < 2; recs, dens = c.count() {
		select {
		case <-c.arrived:
		case <-deadline:
			t.Fatalf("only %d audit records and %d denials arrived", recs, dens)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v; want a clean stop", err)
	}
	// The stop may come between a request's arrival and its
	// acknowledgement: then the next export sends it again, and the
	// receiver keeps one of each nmhost.seq.
	if res.Records > 5 || res.Denials > 2 || res.Checkpoints < 1 {
		t.Fatalf("result %+v", res)
	}
	res, err := Run(context.Background(), st, fast(Options{Endpoint: c.endpoint(t)}))
	if err != nil || res.Cursor.AuditSeq != 5 || res.Cursor.DenialID != 2 {
		t.Fatalf("export after the stop: %+v, %v", res, err)
	}
	if recs, dens := c.count(); recs != 5 || dens < 2 {
		t.Fatalf("%d audit records, %d denials arrived", recs, dens)
	}
}

// TestExportRefusesACursorPastTheLog: a cursor further than the log
// means the log was truncated or replaced: audit_truncated, nothing sent.
func TestExportRefusesACursorPastTheLog(t *testing.T) {
	st := openStore(t)
	fill(t, st, 1)
	c := newCollector(t)
	path := CursorPath(st.Dir(), c.endpoint(t).String())
	if err := writeCursor(path, Cursor{AuditSeq: 99}); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), st, fast(Options{Endpoint: c.endpoint(t)}))
	if mediator.CodeOf(err) != mediator.CodeAuditTruncated || len(c.records()) != 0 {
		t.Fatalf("err = %v, %d records sent", err, len(c.records()))
	}
}

func TestReadCursor(t *testing.T) {
	for _, c := range []struct {
		name, text string
		ok         bool
	}{
		{"written by us", `{"endpoint":"http://127.0.0.1:1/v1/logs","auditSeq":3,"denialId":1,"checkpointSize":3}`, true},
		{"misspelt member", `{"auditseq":3}`, false},
		{"repeated member", `{"auditSeq":3,"auditSeq":1}`, false},
		{"negative", `{"auditSeq":-1}`, false},
		{"not JSON", `3`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := t.TempDir() + "/cursor.json"
			if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadCursor(path)
			if (err == nil) != c.ok {
				t.Fatalf("ReadCursor(%s) = %v", c.text, err)
			}
		})
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, c := range []struct {
		name, in string
		unsafe   bool
		want     string // "" when refused
	}{
		{"loopback http gets the logs path", "http://127.0.0.1:4318", false, "http://127.0.0.1:4318/v1/logs"},
		{"loopback v6", "http://[::1]:4318/", false, "http://[::1]:4318/v1/logs"},
		{"other 127 address", "http://127.0.0.2:4318/custom", false, "http://127.0.0.2:4318/custom"},
		{"https anywhere", "https://otel.example.com/v1/logs", false, "https://otel.example.com/v1/logs"},
		{"plain http elsewhere", "http://otel.example.com:4318", false, ""},
		{"plain http to a name for loopback", "http://localhost:4318", false, ""},
		{"plain http elsewhere, unsafe", "http://otel.example.com:4318", true, "http://otel.example.com:4318/v1/logs"},
		{"grpc scheme", "grpc://127.0.0.1:4317", false, ""},
		{"no scheme", "127.0.0.1:4318", false, ""},
		{"user info", "https://u:p@otel.example.com/", false, ""},
		{"fragment", "https://otel.example.com/#x", false, ""},
		{"no host", "http:///v1/logs", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			u, err := ParseEndpoint(c.in, c.unsafe)
			switch {
			case c.want == "" && err == nil:
				t.Fatalf("accepted %q as %s", c.in, u)
			case c.want != "" && (err != nil || u.String() != c.want):
				t.Fatalf("ParseEndpoint(%q) = %v, %v; want %s", c.in, u, err, c.want)
			}
		})
	}
}

// TestExportAnswer: a 2xx answer is read as ExportLogsServiceResponse,
// exactly; anything else is not an acknowledgement.
func TestExportAnswer(t *testing.T) {
	for _, c := range []struct {
		name     string
		body     string
		ok       bool
		rejected int64
		msg      string
	}{
		{"empty: full success", "", true, 0, ""},
		{"partial success", "\x0a\x07\x08\x02\x12\x03bad", true, 2, "bad"},
		{"an empty partial success", "\x0a\x00", true, 0, ""},
		{"a field a later version may add", "\x10\x01\x0a\x02\x08\x01", true, 1, ""},
		{"not protobuf", "\xff", false, 0, ""},
		{"cut", "\x0a\x07\x08\x02", false, 0, ""},
		{"partial_success a varint", "\x08\x02", false, 0, ""},
		{"rejected as bytes", "\x0a\x03\x0a\x01x", false, 0, ""},
		{"a message as a varint", "\x0a\x02\x10\x01\x0a\x02\x12\x01", false, 0, ""},
		{"negative rejected", "\x0a\x0b\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", false, 0, ""},
		{"a web page", "<html>ok</html>", false, 0, ""},
		{"JSON", `{"partialSuccess":{}}`, false, 0, ""},
		{"too long", "\x0a\x00" + strings.Repeat("\x10\x01", maxAnswerBytes/2), false, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rejected, msg, ok := exportAnswer([]byte(c.body))
			if ok != c.ok || rejected != c.rejected || msg != c.msg {
				t.Fatalf("exportAnswer = %d, %q, %v; want %d, %q, %v", rejected, msg, ok, c.rejected, c.msg, c.ok)
			}
		})
	}
}
