package mediator

import (
	"context"
	"testing"
)

// countingAuthorizer allows everything and counts what it was asked.
type countingAuthorizer struct{ asked []Operation }

func (c *countingAuthorizer) Authorize(_ context.Context, op Operation) (func(error), error) {
	c.asked = append(c.asked, op)
	return func(error) {}, nil
}

// nullRecords accepts appends; Preapproved only appends executed records.
type nullRecords struct {
	PolicyRecords
	appended []AuditEntry
}

func (n *nullRecords) AppendAudit(_ context.Context, e AuditEntry) (AuditRecord, error) {
	n.appended = append(n.appended, e)
	return AuditRecord{Seq: int64(len(n.appended)), AuditEntry: e}, nil
}

// TestPreapprovedAllowsExactlyOnce: a layer's approval runs exactly the
// approved operation once; another target, a larger body, a redirect hop
// or a second request goes to the policy as usual.
func TestPreapprovedAllowsExactlyOnce(t *testing.T) {
	approved := Operation{AgentID: "a", Name: OpNetworkFetch, Method: "POST", URL: "https://api.example.com/in", TextLength: 10}
	for _, tc := range []struct {
		name   string
		op     Operation
		toNext bool
	}{
		{"another url", Operation{AgentID: "a", Name: OpNetworkFetch, Method: "POST", URL: "https://evil.example/in", TextLength: 10}, true},
		{"another agent", Operation{AgentID: "b", Name: OpNetworkFetch, Method: "POST", URL: approved.URL, TextLength: 10}, true},
		{"another method", Operation{AgentID: "a", Name: OpNetworkFetch, Method: "DELETE", URL: approved.URL}, true},
		{"a bigger body", Operation{AgentID: "a", Name: OpNetworkFetch, Method: "POST", URL: approved.URL, TextLength: 11}, true},
		{"a redirect hop", Operation{AgentID: "a", Name: OpNetworkFetch, Method: "POST", URL: approved.URL, TextLength: 10, Hop: 1}, true},
		{"the approved one", approved, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, recs := &countingAuthorizer{}, &nullRecords{}
			p := &Preapproved{Op: approved, Seq: 7, Next: next, Records: recs}
			done, err := p.Authorize(context.Background(), tc.op)
			if err != nil {
				t.Fatal(err)
			}
			done(nil)
			if (len(next.asked) == 1) != tc.toNext {
				t.Fatalf("asked the policy %d times", len(next.asked))
			}
			if !tc.toNext {
				if len(recs.appended) != 1 || recs.appended[0].Kind != AuditExecuted || recs.appended[0].Ref != 7 {
					t.Fatalf("executed record %+v", recs.appended)
				}
				// A second time is not approved.
				if _, err := p.Authorize(context.Background(), approved); err != nil || len(next.asked) != 1 {
					t.Fatalf("second use: %v, policy asked %d times", err, len(next.asked))
				}
			}
		})
	}
}
