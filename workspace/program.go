package workspace

import (
	"github.com/agentgate/nmhost/mediator"
)

// Program runs fn, which changes the workspace by other means than this
// package: a program of a high session, in the sandbox, which binds the
// directory (fn's dir) read-write. It holds the ledger's lock and marks
// it dirty while fn runs, then counts the workspace again, so the ledger
// holds what the program left. Past a quota, the count is kept and the
// error says so: the workspace then refuses to grow until files are
// removed, as a workspace over quota does.
func (w *Workspace) Program(fn func(dir string) error) error {
	var over error
	err := w.locked(func(u *usage) error {
		ferr := fn(w.dir)
		c, cerr := w.count()
		if cerr != nil {
			// Past MaxFiles or MaxDepth the walk stops: the ledger says
			// "over the file quota", so the workspace refuses to grow
			// until the person trims it.
			u.entries = max(u.entries, w.limits.MaxFiles+1)
			if ferr == nil {
				ferr = cerr
			}
			return ferr
		}
		*u = c
		if c.bytes > w.limits.MaxBytes {
			over = mediator.Errorf(mediator.CodeQuotaExceeded, "the program left %d bytes in the workspace, more than its %d-byte quota; remove some", c.bytes, w.limits.MaxBytes)
		}
		return ferr
	})
	if err == nil {
		err = over
	}
	return err
}
