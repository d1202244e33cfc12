// Command storeonly is the cold-start benchmark's floor for any host that
// keeps its state in nmhost's store: it opens the store in the data dir
// ($NMHOST_DATA_DIR), reads one frame, answers it with the installed
// agents as nmhost's list-agents does, closes the store and exits. It
// links only the store and the framing, not the rest of nmhost (the
// policy, wazero, CEL, net/http), so what it costs over the echo process
// is modernc SQLite's start and the store's open. It lives under testdata
// so that it is never part of the product.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/agentgate/nmhost/internal/frame"
	"github.com/agentgate/nmhost/internal/store"
)

func main() {
	st, err := store.Open(os.Getenv("NMHOST_DATA_DIR"), store.Options{})
	if err != nil {
		os.Exit(1)
	}
	defer st.Close()
	msg, err := frame.NewReader(os.Stdin).Next()
	if err != nil {
		return
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &req) != nil || req.ID == nil {
		req.ID = json.RawMessage("null")
	}
	agents, err := st.ListAgents(context.Background())
	if err != nil {
		os.Exit(1)
	}
	out, err := json.Marshal(map[string]any{"id": req.ID, "success": true, "data": map[string]any{"agents": agents}})
	if err != nil {
		os.Exit(1)
	}
	if frame.NewWriter(os.Stdout).Write(out) != nil {
		os.Exit(1)
	}
}
