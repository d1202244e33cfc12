package wasmhost

import (
	"context"
	"encoding/json"

	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/mediator"
)

// Memory is the sessions' memory as a run reaches it (the store
// implements it): entries a session's agents keep for its later runs,
// searched by words. Every call names the run's own session; a run has
// no way to name another.
type Memory interface {
	WriteMemory(ctx context.Context, sessionID, text string, tags []string) (int64, error)
	SearchMemory(ctx context.Context, sessionID, query string, limit int) ([]mediator.MemoryHit, error)
}

// memoryWriteRequest is the JSON a guest passes to memory_write.
type memoryWriteRequest struct {
	Text string   `json:"text"`
	Tags []string `json:"tags"`
}

// memorySearchRequest is the JSON a guest passes to memory_search; limit
// 0 (or absent) asks for the default.
type memorySearchRequest struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// memoryWrite adds an entry to the run's session's memory: the operation
// memory.write, decided with the text's size (never the text), then the
// store's bounds and quota.
func (ru *run) memoryWrite(mod api.Module, stack []uint64) ([]byte, error) {
	var req memoryWriteRequest
	if err := memoryRequest(mod, stack, "memory_write", &req); err != nil {
		return nil, err
	}
	op := mediator.Operation{Name: mediator.OpMemoryWrite, TextLength: len(req.Text)}
	return ru.authorized(op, func() ([]byte, error) {
		if err := ru.hasMemory(); err != nil {
			return nil, err
		}
		id, err := ru.spec.Memory.WriteMemory(ru.ctx, ru.spec.SessionID, req.Text, req.Tags)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			ID int64 `json:"id"`
		}{id})
	})
}

// memorySearch searches the run's session's memory: the operation
// memory.search, decided with the query's size.
func (ru *run) memorySearch(mod api.Module, stack []uint64) ([]byte, error) {
	var req memorySearchRequest
	if err := memoryRequest(mod, stack, "memory_search", &req); err != nil {
		return nil, err
	}
	op := mediator.Operation{Name: mediator.OpMemorySearch, TextLength: len(req.Query)}
	return ru.authorized(op, func() ([]byte, error) {
		if err := ru.hasMemory(); err != nil {
			return nil, err
		}
		hits, err := ru.spec.Memory.SearchMemory(ru.ctx, ru.spec.SessionID, req.Query, req.Limit)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			Results []mediator.MemoryHit `json:"results"`
		}{hits})
	})
}

// memoryRequest reads a memory call's JSON argument exactly: a member
// named otherwise, given twice or not in the request is bad_request.
func memoryRequest(mod api.Module, stack []uint64, fn string, v any) error {
	raw, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return err
	}
	if err := mediator.DecodeExact(raw, v); err != nil {
		return &mediator.Error{Code: mediator.CodeBadRequest, Msg: fn + ": the request is not the JSON docs/abi.md describes", Err: err}
	}
	return nil
}

// hasMemory: a run started without a session (a test, an embedder) has no
// memory to reach.
func (ru *run) hasMemory() error {
	if ru.spec.Memory == nil || ru.spec.SessionID == "" {
		return mediator.Errorf(mediator.CodeUnknownSession, "this run belongs to no session, so it has no memory")
	}
	return nil
}
