package export

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"golang.org/x/mod/sumdb/tlog"
	"google.golang.org/protobuf/proto"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// Batch bounds: a request holds at most this many records and, but for a
// single record larger than that, this many bytes of them. The collector's
// OTLP/HTTP receiver takes 20 MiB requests by default; 1 MiB keeps a
// retried request cheap.
const (
	DefaultBatchRecords = 1000
	DefaultBatchBytes   = 1 << 20
	DefaultPoll         = time.Second
	DefaultRetryFor     = 5 * time.Minute
)

// Options says where and how to export. Endpoint is required (from
// ParseEndpoint); the zero value of every other field is its default.
type Options struct {
	Endpoint *url.URL
	// Follow keeps exporting as records are made, polling every Poll,
	// until ctx ends.
	Follow bool
	Poll   time.Duration
	// BatchRecords and BatchBytes bound each request.
	BatchRecords int
	BatchBytes   int
	Backoff      Backoff
	// RetryFor is how long one request is retried before the export
	// gives up (without Follow); with Follow, retries never stop.
	RetryFor time.Duration
	// CursorFile is where the acknowledged position is kept; default
	// CursorPath(data dir, endpoint).
	CursorFile string
	Version    string       // service.version
	Client     *http.Client // default: 30 s per request; its redirects are never followed
	// Notify hears of retries and partial successes (the CLI prints them
	// on stderr); Following is called once everything present was sent,
	// before following new records.
	Notify    func(msg string)
	Following func()
}

// client is the caller's client (a copy) or the default, in either case
// one that does not follow redirects: the records go to the endpoint the
// person gave and that ParseEndpoint accepted, and nowhere else. A
// collector's 3xx would send the batch, in clear text if it says http, to
// an address the endpoint rule never saw; it is refused (post).
func (o *Options) client() *http.Client {
	c := &http.Client{Timeout: 30 * time.Second}
	if o.Client != nil {
		cc := *o.Client
		c = &cc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func (o *Options) notify(format string, args ...any) {
	if o.Notify != nil {
		o.Notify(fmt.Sprintf(format, args...))
	}
}

// Result counts what the collector acknowledged in this run.
type Result struct {
	Records, Denials, Checkpoints, Batches int
	Rejected                               int64 // records the collector said it dropped (partial success)
	Cursor                                 Cursor
}

// exporter is one run's state.
type exporter struct {
	st  Records
	o   Options
	res *resourcepb.Resource
	cur Cursor
	out Result
}

// Records is what an export reads: the trail's records and the denial
// log after a cursor, a fresh checkpoint, and the data dir for the cursor
// file. The core hands it out (app.App.Export); declared here, so that
// the exporter does not link the rest of the core.
type Records interface {
	Dir() string
	AuditVerifierKey() (string, error)
	AuditCheckpoint(ctx context.Context) (signed []byte, size int64, root tlog.Hash, err error)
	ListAuditBodies(ctx context.Context, afterSeq, throughSeq int64, limit int) ([]store.AuditExportRecord, error)
	ListDenialsAfter(ctx context.Context, afterID int64, limit int) ([]mediator.Denial, error)
}

// Run ships every audit record, denial and signed checkpoint the cursor
// has not seen to o.Endpoint, advancing the cursor after each batch the
// collector acknowledged. With o.Follow it keeps going until ctx ends,
// which is a clean stop (nil error); without, it returns when everything
// present was acknowledged.
func Run(ctx context.Context, st Records, o Options) (Result, error) {
	if o.Endpoint == nil {
		return Result{}, errors.New("export: no endpoint")
	}
	if o.CursorFile == "" {
		o.CursorFile = CursorPath(st.Dir(), o.Endpoint.String())
	}
	if o.BatchRecords <= 0 || o.BatchRecords > store.MaxDenialPage {
		o.BatchRecords = min(DefaultBatchRecords, store.MaxDenialPage)
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Follow {
		o.RetryFor = 0
	} else if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	cur, err := ReadCursor(o.CursorFile)
	if err != nil {
		return Result{}, err
	}
	vkey, err := st.AuditVerifierKey()
	if err != nil {
		return Result{}, err
	}
	host, _ := os.Hostname()
	e := &exporter{st: st, o: o, res: resource(o.Version, host, vkey), cur: cur}
	e.cur.Endpoint = o.Endpoint.String()
	e.out.Cursor = e.cur
	for first := true; ; first = false {
		started := time.Now()
		if err := e.round(ctx); err != nil {
			if o.Follow && ctx.Err() != nil {
				return e.out, nil
			}
			return e.out, err
		}
		if !o.Follow {
			return e.out, nil
		}
		if first && o.Following != nil {
			o.Following()
		}
		// The next look is due Poll after this one started, however long
		// the round took: no busy loop, no drift.
		t := time.NewTimer(time.Until(started.Add(o.Poll)))
		select {
		case <-ctx.Done():
			t.Stop()
			return e.out, nil
		case <-t.C:
		}
	}
}

// round signs the present tree head, then ships every record up to it
// and every denial whose decision is among them, in batches, and the
// checkpoint with the batch that completes it: the collector never holds
// a checkpoint of records it has not been sent.
func (e *exporter) round(ctx context.Context) error {
	note, size, root, err := e.st.AuditCheckpoint(ctx)
	if err != nil {
		return err
	}
	if size < e.cur.AuditSeq {
		return mediator.Errorf(mediator.CodeAuditTruncated, "the audit log holds %d records but %s already acknowledged %d: the log was truncated or replaced (run nmhost audit verify; remove %s to export this log from its start)",
			size, hostPort(e.o.Endpoint), e.cur.AuditSeq, e.o.CursorFile)
	}
	// The next batch is read and encoded while the collector takes the
	// one before (half the export's time is reading and encoding): the
	// producer runs ahead by one batch, on its own copy of the cursor;
	// only ship moves the real one, after each acknowledgement.
	ctx, cancel := context.WithCancel(ctx)
	next := make(chan encoded, 1)
	go e.produce(ctx, e.cur, size, note, root[:], next)
	defer func() {
		// Stop the producer and wait for it: nothing reads the store
		// after the export returned (and the caller closed it).
		cancel()
		for range next {
		}
	}()
	for enc := range next {
		if enc.err != nil {
			return enc.err
		}
		if err := e.ship(ctx, enc.batch, enc.body); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// encoded is a batch and its request body, or what stopped the producer.
type encoded struct {
	batch
	body []byte
	err  error
}

// produce sends the round's batches, encoded, from cur on, and closes out
// when there is nothing left, after an error, or when ctx ends.
func (e *exporter) produce(ctx context.Context, cur Cursor, size int64, note, root []byte, out chan<- encoded) {
	defer close(out)
	for {
		b, err := e.batch(ctx, cur, size, note, root)
		if err == nil && len(b.recs) == 0 {
			return
		}
		var body []byte
		if err == nil {
			body, err = proto.Marshal(request(e.res, b.recs))
		}
		select {
		case out <- encoded{batch: b, body: body, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
		cur = b.next
	}
}

// batch is one request's records and the cursor they advance to.
type batch struct {
	recs                         []*logspb.LogRecord
	next                         Cursor
	records, denials, checkpoint int
}

// batch collects the next records after the cursor, up to the round's
// checkpoint size, with the denials whose decision records are in it or
// before: a denial never reaches the collector ahead of its decision.
func (e *exporter) batch(ctx context.Context, cur Cursor, size int64, note, root []byte) (batch, error) {
	b := batch{next: cur}
	bytes := 0
	now := uint64(time.Now().UnixNano())
	full := func(r *logspb.LogRecord) bool {
		n := sizeBound(r)
		if len(b.recs) >= e.o.BatchRecords || len(b.recs) > 0 && bytes+n > e.o.BatchBytes {
			return true
		}
		bytes += n
		b.recs = append(b.recs, r)
		return false
	}
	recs, err := e.st.ListAuditBodies(ctx, cur.AuditSeq, size, e.o.BatchRecords)
	if err != nil {
		return batch{}, err
	}
	dens, err := e.st.ListDenialsAfter(ctx, cur.DenialID, e.o.BatchRecords)
	if err != nil {
		return batch{}, err
	}
	// addDenials adds, in id order, the denials whose decision records
	// are shipped (through seq); it stops at the first that must wait.
	addDenials := func(through int64) bool {
		for len(dens) > 0 && dens[0].AuditSeq <= through {
			if full(denialLog(dens[0], now)) {
				return false
			}
			b.next.DenialID, b.denials = dens[0].ID, b.denials+1
			dens = dens[1:]
		}
		return true
	}
	if !addDenials(b.next.AuditSeq) {
		return b, nil
	}
	for _, r := range recs {
		if full(auditLog(r, now)) {
			return b, nil
		}
		b.next.AuditSeq, b.records = r.Seq, b.records+1
		if !addDenials(r.Seq) {
			return b, nil
		}
	}
	if b.next.AuditSeq == size && cur.CheckpointSize != size && size > 0 {
		if full(checkpointLog(note, size, root, now)) {
			return b, nil
		}
		b.next.CheckpointSize, b.checkpoint = size, 1
	}
	return b, nil
}

// sizeBound is at least the encoded size of r, without encoding it (a
// quarter of the exporter's time went to proto.Size): each field's tag
// and length take at most 1+5 bytes, fixed fields 9, and the record's
// own framing in ScopeLogs 6.
func sizeBound(r *logspb.LogRecord) int {
	n := 6 + 3*9 + 2*6 + len(r.SeverityText) + len(r.EventName) + 6 + len(r.Body.GetStringValue()) + 6
	for _, a := range r.Attributes {
		n += 3*6 + len(a.Key) + len(a.Value.GetStringValue()) + 11
	}
	return n
}

// ship sends b and, once the collector acknowledged it, writes the
// cursor. A crash between the two sends b again on the next run: the
// receiver deduplicates by nmhost.seq (docs/fleet.md).
func (e *exporter) ship(ctx context.Context, b batch, body []byte) error {
	rejected, msg, err := sendWithRetry(ctx, &e.o, body)
	if err != nil {
		return err
	}
	if rejected > 0 {
		// OTLP forbids sending a partially accepted request again: the
		// collector judged those records malformed, and will again.
		e.o.notify("the collector accepted the batch but dropped %d records: %s", rejected, mediator.EscapeTerminal(msg))
	}
	if err := writeCursor(e.o.CursorFile, b.next); err != nil {
		return fmt.Errorf("the collector acknowledged records but the export cursor could not be saved (the next export sends them again): %w", err)
	}
	e.cur = b.next
	e.out.Cursor = b.next
	e.out.Records += b.records
	e.out.Denials += b.denials
	e.out.Checkpoints += b.checkpoint
	e.out.Batches++
	e.out.Rejected += rejected
	return nil
}
