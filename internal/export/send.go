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
	answer, rerr := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if rerr != nil {
			// Acknowledged or not? Sending again may duplicate, never lose.
			return 0, "", &retryable{err: fmt.Errorf("reading the collector's answer: %v", rerr)}
		}
		rejected, msg = partialSuccess(answer)
		return rejected, msg, nil
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

// partialSuccess reads ExportLogsServiceResponse.partial_success
// (field 1: rejected_log_records = 1, error_message = 2). The response
// type lives in the OTLP collector package, which links gRPC; these two
// fields are read with protobuf's own wire reader instead. An answer that
// does not parse is a plain success: the status code already said so.
func partialSuccess(b []byte) (rejected int64, msg string) {
	ps := field(b, 1, protowire.BytesType)
	if ps == nil {
		return 0, ""
	}
	if v := field(ps, 1, protowire.VarintType); v != nil {
		n, _ := protowire.ConsumeVarint(v)
		rejected = int64(n)
	}
	msg = string(field(ps, 2, protowire.BytesType))
	return rejected, msg
}

// field returns the last occurrence of field num of type typ in b: for
// bytes its length-prefixed value, for a varint its encoding; nil when
// absent or malformed.
func field(b []byte, num protowire.Number, typ protowire.Type) []byte {
	var out []byte
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil
		}
		b = b[l:]
		vl := protowire.ConsumeFieldValue(n, t, b)
		if vl < 0 {
			return nil
		}
		if n == num && t == typ {
			out = b[:vl]
			if typ == protowire.BytesType {
				v, _ := protowire.ConsumeBytes(out)
				out = v
			}
		}
		b = b[vl:]
	}
	return out
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
