package viewer

import (
	"net/url"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// FuzzParseDenialQuery: any query string either is refused with
// bad_request or yields a filter inside the store's bounds.
func FuzzParseDenialQuery(f *testing.F) {
	for _, s := range []string{"", "agentId=a&limit=5", "since=2026-01-01T00:00:00Z&until=1", "q=%00", "limit=-1", "beforeId=9223372036854775807"} {
		f.Add(s)
	}
	now := time.UnixMilli(1_800_000_000_000)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		dq, err := parseDenialQuery(q, now)
		if err != nil {
			if mediator.CodeOf(err) != mediator.CodeBadRequest {
				t.Fatalf("refused with %s: %v", mediator.CodeOf(err), err)
			}
			return
		}
		fl := dq.filter
		if fl.Limit < 0 || fl.Limit > store.MaxDenialPage || fl.Since < 0 || fl.BeforeID < 0 || fl.AfterID < 0 || len(dq.search) > 256*4 {
			t.Fatalf("accepted an out-of-bounds filter %+v from %q", fl, raw)
		}
	})
}
