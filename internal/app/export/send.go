package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/agentgate/nmhost/mediator"
)

// Backoff is how long to wait between attempts: Initial, doubled each
// time up to Max, each wait drawn from its upper half (jitter, so a fleet
// that lost its collector together does not come back in step). The zero
// value waits 200 ms first and at most 30 s.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

func (b Backoff) delay(attempt int) time.Duration {
	initial, most := b.Initial, b.Max
	if initial <= 0 {
		initial = 200 * time.Millisecond
	}
	if most <= 0 {
		most = 30 * time.Second
	}
	d := initial
	for i := 0; i < attempt && d < most; i++ {
		d *= 2
	}
	d = min(d, most)
	return d/2 + rand.N(d/2+1)
}

// PermanentError is a collector's refusal that sending again would not
// change (a 4xx other than 429): the request is malformed for it, or it
// wants credentials. Nothing is acknowledged; the cursor stays.
type PermanentError struct {
	Status int
	Body   string // the start of its answer, for the person
}

func (e *PermanentError) Error() string {
	msg := fmt.Sprintf("the collector refused the records: HTTP %d", e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg + " (not retried; nothing was acknowledged, the next export sends them again)"
}

// RedirectError is a collector's redirect, refused: the export talks to
// its endpoint only. Nothing was sent elsewhere and nothing is
// acknowledged; the cursor stays. Not retried: the endpoint is to be
// corrected (to where it points, if that is the collector and the
// endpoint rule takes it).
type RedirectError struct {
	Status   int
	Location string // where it pointed, as it said it, for the person
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the collector answered HTTP %d, a redirect to %q: not followed, the records go to the endpoint given and nowhere else (not retried; nothing was acknowledged, the next export sends them again; give the collector's own address as --otlp-endpoint)",
		e.Status, e.Location)
}

// retryable is a failure after which the same request may succeed: the
// collector down, overloaded or throttling. after is what it asked for in
// Retry-After, 0 when it did not say.
type retryable struct {
	err   error
	after time.Duration
}

func (e *retryable) Error() string { return e.err.Error() }

// maxAnswerBytes bounds what is read of a collector's answer.
const maxAnswerBytes = 64 << 10

// post sends one encoded request. It returns the number of records the
// collector said it rejected (OTLP partial success: those are not to be
// sent again), a *retryable error, a *PermanentError, or the context's.
func post(ctx context.Context, c *http.Client, endpoint *url.URL, body []byte) (rejected int64, msg string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := c.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		// Refused, reset, timed out: the collector is not there now.
		return 0, "", &retryable{err: fmt.Errorf("collector at %s unreachable: %v", hostPort(endpoint), unwrapURL(err))}
	}
	defer resp.Body.Close()
	answer, rerr := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if rerr != nil {
			// Acknowledged or not? Sending again may duplicate, never lose.
			return 0, "", &retryable{err: fmt.Errorf("reading the collector's answer: %v", rerr)}
		}
		rejected, msg, ok := exportAnswer(answer)
		if !ok {
			// Something answered 2xx, but not as an OTLP receiver does (a
			// portal's page, a proxy's JSON, a cut answer): not an
			// acknowledgement. Sent again, it may duplicate, never lose.
			return 0, "", &retryable{err: fmt.Errorf("collector at %s answered HTTP %d with %d bytes that are not an OTLP answer (ExportLogsServiceResponse)",
				hostPort(endpoint), resp.StatusCode, len(answer))}
		}
		return rejected, msg, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return 0, "", &RedirectError{Status: resp.StatusCode,
			Location: mediator.Truncate(mediator.EscapeTerminal(resp.Header.Get("Location")), 300)}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return 0, "", &retryable{err: fmt.Errorf("collector at %s answered HTTP %d", hostPort(endpoint), resp.StatusCode),
			after: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return 0, "", &PermanentError{Status: resp.StatusCode, Body: mediator.Truncate(mediator.EscapeTerminal(string(bytes.TrimSpace(answer))), 300)}
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// retryAfter reads a Retry-After of seconds (the form collectors send);
// a date or nonsense is 0: our own backoff applies.
func retryAfter(v string) time.Duration {
	s, err := strconv.Atoi(v)
	if err != nil || s < 0 {
		return 0
	}
	return time.Duration(min(s, 3600)) * time.Second
}

// exportAnswer reads a 2xx answer's body as ExportLogsServiceResponse
// (partial_success = 1 {rejected_log_records = 1, error_message = 2}),
// exactly: ok only when the whole body is well-formed protobuf with those
// fields of those types (other fields are skipped, as protobuf readers
// do; an empty body is full success). The response type lives in the
// OTLP collector package, which links gRPC; these fields are read with
// protobuf's own wire reader instead.
func exportAnswer(b []byte) (rejected int64, msg string, ok bool) {
	if len(b) > maxAnswerBytes {
		return 0, "", false
	}
	ok = eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num != 1 {
			return true
		}
		if typ != protowire.BytesType {
			return false
		}
		rejected, msg = 0, ""
		return eachField(v, func(num protowire.Number, typ protowire.Type, v []byte) bool {
			switch {
			case num == 1 && typ == protowire.VarintType:
				n, _ := protowire.ConsumeVarint(v)
				rejected = int64(n)
			case num == 2 && typ == protowire.BytesType:
				msg = string(v)
			case num == 1 || num == 2:
				return false // a known field of the wrong type
			}
			return true
		})
	})
	if !ok || rejected < 0 {
		return 0, "", false
	}
	return rejected, msg, true
}

// eachField calls f with each field of b in order (for a bytes field its
// contents, for a varint its encoding) while f returns true; false when b
// is not well-formed protobuf or f said no.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte) bool) bool {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		b = b[l:]
		vl := protowire.ConsumeFieldValue(n, t, b)
		if vl < 0 {
			return false
		}
		v := b[:vl]
		if t == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		if !f(n, t, v) {
			return false
		}
		b = b[vl:]
	}
	return true
}

// sendWithRetry posts body until the collector acknowledges it, a
// permanent refusal, ctx ends, or (retryFor > 0) retrying would go past
// retryFor since the first attempt. notify hears of each retry.
func sendWithRetry(ctx context.Context, o *Options, body []byte) (int64, string, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		rejected, msg, err := post(ctx, o.client(), o.Endpoint, body)
		var r *retryable
		if !errors.As(err, &r) {
			return rejected, msg, err
		}
		wait := max(o.Backoff.delay(attempt), r.after)
		wait = min(wait, max(o.Backoff.Max, 30*time.Second))
		if o.RetryFor > 0 && time.Since(start)+wait > o.RetryFor {
			return 0, "", fmt.Errorf("%v; gave up after %s of retries (nothing was acknowledged, the next export sends these records again)", r.err, time.Since(start).Round(time.Millisecond))
		}
		o.notify("%v; retrying in %s", r.err, wait.Round(time.Millisecond))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, "", ctx.Err()
		case <-t.C:
		}
	}
}
