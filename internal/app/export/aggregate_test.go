package export

import (
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// TestAggregateRecordAttributes: a run's aggregate record ships with its
// count, bytes, content hash and times as attributes, and reads as
// allowed; a record claiming the kind without the numbers ships none of
// them rather than zeros that look counted.
func TestAggregateRecordAttributes(t *testing.T) {
	agg := &mediator.AuditAggregate{Count: 9000, Bytes: 81000, SHA256: mediator.AggregateHash("a", "b"), First: 1, Last: 2}
	cases := []struct {
		name string
		agg  *mediator.AuditAggregate
		want map[string]any
	}{
		{"counted", agg, map[string]any{AttrAggCount: int64(9000), AttrAggBytes: int64(81000), AttrAggSHA256: agg.SHA256,
			AttrAggFirst: int64(1), AttrAggLast: int64(2), AttrDecision: "allowed", AttrKind: mediator.AuditAggregated}},
		{"no numbers", nil, map[string]any{AttrDecision: "allowed", AttrKind: mediator.AuditAggregated}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := store.AuditExportRecord{AuditRecord: mediator.AuditRecord{Seq: 7, AuditEntry: mediator.AuditEntry{Kind: mediator.AuditAggregated,
				Operation: mediator.Operation{AgentID: "a", Name: mediator.OpLog}, Allowed: true, Code: mediator.CodeAllowed, Aggregate: c.agg}}}
			got := map[string]any{}
			for _, kv := range auditLog(r, 0).Attributes {
				if s := kv.Value.GetStringValue(); s != "" {
					got[kv.Key] = s
				} else {
					got[kv.Key] = kv.Value.GetIntValue()
				}
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("%s = %v; want %v", k, got[k], v)
				}
			}
			if c.agg == nil {
				if _, ok := got[AttrAggCount]; ok {
					t.Errorf("count shipped without numbers: %v", got)
				}
			}
		})
	}
}
