package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/agentgate/nmhost/mediator"
)

func (f *Fetcher) readResponse(ctx context.Context, resp *http.Response, t Target, redirects []string, method string) (*Response, error) {
	defer resp.Body.Close()
	max := f.cfg.MaxResponseBytes
	final := t.URL.String()
	if resp.ContentLength > max {
		return nil, fmt.Errorf("fetch[%s]: %w", truncURL(final), mediator.Errorf(mediator.CodeTooLarge,
			"the response body is %d bytes; at most %d are allowed", resp.ContentLength, max))
	}
	out := &Response{
		Status:     resp.StatusCode,
		StatusText: strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)+" "),
		Headers:    map[string][]string(resp.Header.Clone()),
		FinalURL:   final,
		Redirects:  redirects,
	}
	if method == http.MethodHead {
		return out, nil
	}
	body, held, err := f.readBody(ctx, resp.Body, resp.ContentLength, max)
	if held > 0 {
		var once sync.Once
		out.release = func() { once.Do(func() { f.buffered.Release(held) }) }
	}
	if err != nil {
		out.Release()
		if me := (*mediator.Error)(nil); errors.As(err, &me) {
			return nil, fmt.Errorf("fetch[%s]: %w", truncURL(final), err)
		}
		return nil, fetchErr(ctx, err, final, len(redirects))
	}
	out.Body = body
	return out, nil
}

// smallBody is how much of a body a fetch reads without taking any of the
// buffered-bytes budget: with at most 64 requests in flight that is a
// bounded 16 MiB in all, and the small responses most fetches get never
// wait for the large ones.
const smallBody = 256 << 10

// readBody reads at most max bytes. A body over smallBody takes its share
// of the Fetcher's budget in one acquisition, while holding none of it, so
// that two growing bodies can never each hold part of the budget and wait
// for the rest: all of a declared Content-Length up front (read into one
// allocation of that size), or, for a body of unknown length, max as soon
// as it outgrows smallBody, the unused part given back once it ends. It
// returns how much of the budget it holds, which the caller releases.
func (f *Fetcher) readBody(ctx context.Context, r io.Reader, declared, max int64) ([]byte, int64, error) {
	var held int64
	reserve := func(n int64) error {
		if err := f.buffered.Acquire(ctx, n); err != nil {
			return mediator.Errorf(mediator.CodeTimeout, "no room to hold the response body before the fetch timed out")
		}
		held = n
		return nil
	}
	if declared >= 0 {
		if declared > smallBody {
			if err := reserve(declared); err != nil {
				return nil, 0, err
			}
		}
		// A server that sends more than it declared is cut off: the
		// transport reports the mismatch as an error.
		buf := make([]byte, declared)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, held, err
		}
		return buf, held, nil
	}
	small := min(smallBody, max)
	buf, err := io.ReadAll(io.LimitReader(r, small+1))
	switch {
	case err != nil:
		return nil, 0, err
	case int64(len(buf)) <= small:
		return buf, 0, nil
	case small == max:
		return nil, 0, mediator.Errorf(mediator.CodeTooLarge, "the response body is larger than %d bytes", max)
	}
	if err := reserve(max); err != nil {
		return nil, 0, err
	}
	// The buffer doubles as the body grows, up to max+1: a body of a few
	// MiB costs a few MiB and a copy of each size on the way, not an
	// allocation of max (32 MiB) that the collector counts in full and
	// clears whenever it reuses memory (most fetches, in a running host).
	// While it doubles, the old buffer lives beside the new one for the
	// copy: at most half of max more, for that moment.
	// The first size has room past a round megabyte, so a body of
	// exactly that size meets its end without one more doubling.
	body := make([]byte, len(buf), min(4*small+4096, max+1))
	copy(body, buf)
	for int64(len(body)) <= max {
		if len(body) == cap(body) {
			grown := make([]byte, len(body), min(int64(2*cap(body)), max+1))
			copy(grown, body)
			body = grown
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, held, err
		}
	}
	if int64(len(body)) > max {
		return nil, held, mediator.Errorf(mediator.CodeTooLarge, "the response body is larger than %d bytes", max)
	}
	// A buffer much larger than its body is traded for one of the exact
	// size, so the budget held is what the body takes, not what doubling
	// left behind; the rest goes back at once.
	if cap(body)-len(body) > len(body)/8 {
		body = append(make([]byte, 0, len(body)), body...)
	}
	if unused := held - int64(cap(body)); unused > 0 {
		f.buffered.Release(unused)
		held -= unused
	}
	return body, held, nil
}
