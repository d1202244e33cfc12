package viewer

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
)

// hub is the live tail: one goroutine polls the store for denials written
// by any process and fans each one out, encoded once, to every connected
// websocket client. Polling the shared SQLite file is what lets a viewer
// see denials from host processes it has never heard of.
type hub struct {
	denials  app.Denials
	interval time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	clients map[*client]struct{}
	head    int64 // the newest denial id fanned out (or present at start)

	done chan struct{}
}

func newHub(denials app.Denials, interval time.Duration, log *slog.Logger) *hub {
	return &hub{denials: denials, interval: interval, log: log, clients: map[*client]struct{}{}, done: make(chan struct{})}
}

// start reads the current head, so that only denials written from now on
// are tailed, and starts polling until ctx ends.
func (h *hub) start(ctx context.Context) error {
	p, err := h.denials.ListDenials(ctx, app.DenialFilter{Limit: 1})
	if err != nil {
		close(h.done)
		return err
	}
	if len(p.Denials) > 0 {
		h.head = p.Denials[0].ID
	}
	go h.run(ctx)
	return nil
}

func (h *hub) wait() { <-h.done }

func (h *hub) run(ctx context.Context) {
	defer close(h.done)
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.mu.Lock()
			for c := range h.clients {
				c.drop("the viewer is shutting down")
			}
			h.mu.Unlock()
			return
		case <-t.C:
		}
		h.poll(ctx)
	}
}

// poll fans out every denial newer than head, a page at a time.
func (h *hub) poll(ctx context.Context) {
	h.mu.Lock()
	after := h.head
	h.mu.Unlock()
	for {
		p, err := h.denials.ListDenials(ctx, app.DenialFilter{AfterID: after, Limit: app.MaxDenialPage})
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("live tail: reading the denial log failed", "err", err)
			}
			return
		}
		for _, d := range p.Denials {
			h.publish(d)
			after = d.ID
		}
		if len(p.Denials) < app.MaxDenialPage {
			return
		}
	}
}

// liveDenial is the live-tail message.
type liveDenial struct {
	Type   string          `json:"type"` // "denial"
	Denial mediator.Denial `json:"denial"`
}

func (h *hub) publish(d mediator.Denial) {
	b, err := json.Marshal(liveDenial{Type: "denial", Denial: d})
	if err != nil {
		return
	}
	// Encoded and framed once, however many clients there are.
	m, err := websocket.NewPreparedMessage(websocket.TextMessage, b)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.head = d.ID
	for c := range h.clients {
		c.send(m)
	}
}

// join adds c to the fan-out and sends it the hello, first of all its
// messages: c will receive every denial with an id above hello's lastId,
// and can page everything up to it from the API.
func (h *hub) join(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clients[c] = struct{}{}
	c.sendJSON(map[string]any{"type": "hello", "lastId": h.head})
}

func (h *hub) leave(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, c)
}

// count is the number of connected clients (tests).
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}
