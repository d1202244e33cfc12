package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentgate/nmhost/mediator"
)

// AppendAuditBatch appends entries in order in one transaction: all of
// them are in the log, durable, or none is. A workflow layer's decisions
// take one commit this way, however many tasks it has.
func (s *Store) AppendAuditBatch(ctx context.Context, entries []mediator.AuditEntry) ([]mediator.AuditRecord, error) {
	out := make([]mediator.AuditRecord, 0, len(entries))
	err := s.write(context.WithoutCancel(ctx), func(tx *sql.Tx) error {
		out = out[:0]
		for _, e := range entries {
			rec, err := s.appendAuditTx(ctx, tx, e)
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
