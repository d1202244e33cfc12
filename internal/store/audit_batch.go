package store

import (
	"context"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// AppendAuditBatch appends entries in order as one request of the group
// commit: all of them are in the log, durable, or none is, and they share
// the commit (and its one fsync) with whatever else is queued. A workflow
// layer's decisions take one commit this way, however many tasks it has.
func (s *Store) AppendAuditBatch(ctx context.Context, entries []mediator.AuditEntry) ([]mediator.AuditRecord, error) {
	out := make([]mediator.AuditRecord, 0, len(entries))
	err := s.group(func(_ context.Context, _ dbtx, w *auditWriter) error {
		out = out[:0] // a retried group writes again from the start
		for _, e := range entries {
			rec, err := w.append(e)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit append: %w", err)
	}
	return out, nil
}
