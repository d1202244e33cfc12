package mediator

import (
	"context"
	"errors"
	"testing"
)

// TestDenialAuditEntry checks the decision record a refusal decided outside
// the policy gets: the rule its layer names, the import at link time, and
// what the extension reports marked as the extension's whatever it claims.
func TestDenialAuditEntry(t *testing.T) {
	cases := []struct {
		name   string
		d      Denial
		by, op string
		class  SafetyClass
	}{
		{"grant", Denial{AgentID: "a", Permission: "network.fetch", Code: CodeRevokedByUser,
			Context: DenialContext{Layer: "host", Method: "GET", URL: "https://x.example/", Reason: "r",
				Details: map[string]string{"operation": OpNetworkFetch, "decidedBy": "grant:network.fetch"}}},
			"grant:network.fetch", OpNetworkFetch, AlwaysSafe},
		{"link", Denial{AgentID: "a", Permission: "clipboard.read", Code: CodeImportNotGranted,
			Context: DenialContext{Layer: "link", Reason: "r", Details: map[string]string{"import": "clipboard_read"}}},
			"link:clipboard_read", "clipboard.read", AlwaysConfirm},
		{"extension", Denial{AgentID: "a", Permission: "page.read", Code: CodeHostNotAllowed,
			Context: DenialContext{Layer: "extension", Reason: "r"}}, "extension", "page.read", ""},
		// Hostile: the extension claims a host rule decided.
		{"extension claiming a host rule", Denial{AgentID: "a", Permission: "network.fetch", Code: CodeHostNotAllowed,
			Context: DenialContext{Layer: "extension", Reason: "r", Details: map[string]string{"decidedBy": "grant:network.fetch"}}},
			"extension:grant:network.fetch", "network.fetch", AlwaysSafe},
		{"no layer", Denial{AgentID: "a", Permission: "native-messaging", Code: CodeOriginNotAllowed},
			"host", "native-messaging", ""},
		// Hostile: an empty or "allowed" code is never recorded as allowed.
		{"allowed code", Denial{AgentID: "a", Permission: "console.log", Code: CodeAllowed, Context: DenialContext{Layer: "host"}},
			"host", "console.log", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := c.d.AuditEntry()
			want := c.d.Code
			if want == CodeAllowed || want == "" {
				want = CodeInternal
			}
			if e.Kind != AuditDecision || e.Allowed || e.Code != want || e.DecidedBy != c.by || e.Operation.Name != c.op ||
				e.Operation.AgentID != c.d.AgentID || string(e.Operation.Permission) != c.d.Permission || e.Reason != c.d.Context.Reason || e.Class != c.class {
				t.Fatalf("entry %+v; want a refused %s decision by %s of %s (class %q)", e, want, c.by, c.op, c.class)
			}
		})
	}
}

// ticket is a queued record that is already done.
type ticket struct {
	done chan struct{}
	err  error
}

func (t *ticket) Done() <-chan struct{}        { return t.done }
func (t *ticket) Result() (AuditRecord, error) { return AuditRecord{}, t.err }

func doneTicket(err error) *ticket {
	t := &ticket{done: make(chan struct{}), err: err}
	close(t.done)
	return t
}

func TestAuditBarrier(t *testing.T) {
	lost := errors.New("disk gone")
	cases := []struct {
		name    string
		tickets []*ticket
		want    Code // "" for no error
	}{
		{"empty", nil, ""},
		{"all durable", []*ticket{doneTicket(nil), doneTicket(nil)}, ""},
		{"one lost", []*ticket{doneTicket(nil), doneTicket(lost), doneTicket(nil)}, CodeInternal},
		// More than the pruning limit: a failure pruned early still counts.
		{"lost before pruning", append([]*ticket{doneTicket(lost)}, manyDone(3000)...), CodeInternal},
		{"pending at deadline", []*ticket{{done: make(chan struct{})}}, CodeTimeout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := NewAuditBarrier()
			for _, tk := range c.tickets {
				b.add(tk)
			}
			wctx, cancel := context.WithCancel(context.Background())
			if c.want == CodeTimeout {
				cancel()
			}
			defer cancel()
			err := b.Wait(wctx)
			if got := Code(""); err != nil {
				got = CodeOf(err)
				if got != c.want {
					t.Fatalf("Wait: %v (%s); want %q", err, got, c.want)
				}
			} else if c.want != "" {
				t.Fatalf("Wait: nil; want %s", c.want)
			}
		})
	}
}

func manyDone(n int) []*ticket {
	out := make([]*ticket, n)
	for i := range out {
		out[i] = doneTicket(nil)
	}
	return out
}
