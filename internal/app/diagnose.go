package app

import (
	"context"

	"github.com/agentgate/nmhost/internal/store"
)

// StoreHealth is what nmhost doctor finds of the data directory's two
// databases, checked apart from the rest of the core (the config, the
// admin policy), so each fault is named on its own.
type StoreHealth struct {
	// Opened: the store opened. Store is nil when it opened and reads;
	// Memory when the sessions' memory does (or is not made yet:
	// MemoryFound false).
	Opened        bool
	Store, Memory error
	MemoryFound   bool
}

// DiagnoseStore opens dir's store as a host would and reads it and the
// sessions' memory once.
func DiagnoseStore(ctx context.Context, dir string) StoreHealth {
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		return StoreHealth{Store: err}
	}
	defer s.Close()
	h := StoreHealth{Opened: true}
	if _, err := s.ListAgents(ctx); err != nil {
		h.Store = err
	}
	h.MemoryFound, h.Memory = s.CheckMemory(ctx)
	return h
}
