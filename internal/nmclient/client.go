// Package nmclient speaks native messaging to a host the way a browser
// does: framed requests with ids, replies matched by id, chunks reassembled.
// The demo, the tests and the benchmarks use it.
package nmclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/agentgate/nmhost/internal/frame"
	"github.com/agentgate/nmhost/internal/shown"
)

// Reply is one reply from the host.
type Reply struct {
	ID      json.RawMessage `json:"id"`
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
	Code    string          `json:"code,omitempty"`
	// Frames is how many frames carried the reply (more than one when chunked).
	Frames int `json:"-"`
}

// Client sends requests to a host and routes replies back to callers.
// It is safe for concurrent use.
type Client struct {
	w       *frame.Writer
	closer  io.Closer
	nextID  atomic.Int64
	mu      sync.Mutex
	pending map[string]chan Reply
	events  map[string]func(Event)
	chunks  map[string][][]byte
	onHost  HostHandler
	done    chan struct{}
	err     error
	// Unmatched receives replies whose id matches no pending call (for
	// example replies with a null id to unparseable frames). Buffered; extra
	// replies are dropped.
	Unmatched chan Reply
}

// New starts a client reading replies from r and writing requests to w.
// closer, when non-nil, is closed by Close (the host's stdin).
func New(r io.Reader, w io.Writer, closer io.Closer) *Client {
	c := &Client{
		w: frame.NewBrowserWriter(w), closer: closer,
		pending: map[string]chan Reply{}, events: map[string]func(Event){}, chunks: map[string][][]byte{},
		done: make(chan struct{}), Unmatched: make(chan Reply, 64),
	}
	go c.readLoop(r)
	return c
}

// Process is a host started as a child process.
type Process struct {
	*Client
	Cmd *exec.Cmd
}

// Start runs the host binary with args and env (nil env inherits), stderr
// going to stderr (nil discards), and connects a client to its stdio.
func Start(binary string, args, env []string, stderr io.Writer) (*Process, error) {
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return nil, fmt.Errorf("nmclient: start %s: %w", binary, err)
	}
	return &Process{Client: New(stdout, stdin, stdin), Cmd: cmd}, nil
}

// Wait closes the host's stdin and waits for it to exit.
func (p *Process) Wait() error {
	p.Client.Close()
	return p.Cmd.Wait()
}

// Event is a progress frame of a long request (run-agent's output and
// denials): the request's id and an event name, never "success".
type Event struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// HostHandler answers a request the host sends to the client (browser-call,
// prompt), as the extension does. It returns the result's fields; the
// client adds id and the result type. It runs on its own goroutine.
type HostHandler func(typ string, msg json.RawMessage) map[string]any

// hostResultTypes maps a host-initiated request type to its result type.
var hostResultTypes = map[string]string{"browser-call": "browser-result", "prompt": "prompt-result", "prompt-layer": "prompt-layer-result"}

// hostNotices are host-initiated messages that take no answer: a
// prompt-cancel withdraws a prompt sent before. The handler sees them; what
// it returns is dropped.
var hostNotices = map[string]bool{"prompt-cancel": true}

// SetHostHandler makes the client answer host-initiated requests with h.
// Without one they go unanswered, as with an extension that ignores them.
func (c *Client) SetHostHandler(h HostHandler) {
	c.mu.Lock()
	c.onHost = h
	c.mu.Unlock()
}

// Call sends a request of type typ with params' fields beside id and type,
// and waits for its reply.
func (c *Client) Call(ctx context.Context, typ string, params any) (Reply, error) {
	return c.CallWithEvents(ctx, typ, params, nil)
}

// CallWithEvents is Call that also hands the request's progress events to
// onEvent (on the reader goroutine, in arrival order) until the reply.
func (c *Client) CallWithEvents(ctx context.Context, typ string, params any, onEvent func(Event)) (Reply, error) {
	id := strconv.FormatInt(c.nextID.Add(1), 10)
	msg, err := envelope(id, typ, params)
	if err != nil {
		return Reply{}, err
	}
	ch := make(chan Reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return Reply{}, c.err
	}
	c.pending[id] = ch
	if onEvent != nil {
		c.events[id] = onEvent
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		delete(c.events, id)
		c.mu.Unlock()
	}()
	if err := c.w.Write(msg); err != nil {
		return Reply{}, fmt.Errorf("nmclient: call[%s] %s: %w", id, typ, err)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-c.done:
		return Reply{}, fmt.Errorf("nmclient: call[%s] %s: %w", id, typ, c.readErr())
	case <-ctx.Done():
		return Reply{}, fmt.Errorf("nmclient: call[%s] %s: %w", id, typ, ctx.Err())
	}
}

// Send writes one raw frame, for tests that feed the host hostile input.
func (c *Client) Send(raw []byte) error { return c.w.Write(raw) }

// Close closes the host's stdin (when known); the host then exits.
func (c *Client) Close() error {
	if c.closer != nil {
		return c.closer.Close()
	}
	return nil
}

func (c *Client) readErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *Client) readLoop(r io.Reader) {
	in := frame.NewReader(r)
	var err error
	for {
		var msg []byte
		if msg, err = in.Next(); err != nil {
			break
		}
		c.dispatch(msg)
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("host closed its output")
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

func (c *Client) dispatch(msg []byte) {
	var head struct {
		ID    json.RawMessage `json:"id"`
		Type  string          `json:"type"`
		Event string          `json:"event"`
		Chunk *struct {
			Seq   int `json:"seq"`
			Total int `json:"total"`
		} `json:"chunk"`
	}
	if err := json.Unmarshal(msg, &head); err != nil {
		return
	}
	key := idKey(head.ID)
	frames := 1
	if head.Chunk != nil {
		c.mu.Lock()
		c.chunks[key] = append(c.chunks[key], bytes.Clone(msg))
		parts := c.chunks[key]
		complete := len(parts) == head.Chunk.Total
		if complete {
			delete(c.chunks, key)
		}
		c.mu.Unlock()
		if !complete {
			return
		}
		joined, err := frame.Join(parts)
		if err != nil {
			return
		}
		msg, frames = joined, len(parts)
	}
	if head.Chunk != nil {
		// The joined message is what matters from here on.
		head.Type, head.Event = "", ""
		_ = json.Unmarshal(msg, &head)
	}
	if result, ok := hostResultTypes[head.Type]; ok {
		c.answerHost(head.ID, head.Type, result, msg)
		return
	}
	if hostNotices[head.Type] {
		c.mu.Lock()
		h := c.onHost
		c.mu.Unlock()
		if h != nil {
			go h(head.Type, msg)
		}
		return
	}
	if head.Event != "" {
		var ev Event
		if json.Unmarshal(msg, &ev) == nil {
			c.mu.Lock()
			fn := c.events[key]
			c.mu.Unlock()
			if fn != nil {
				fn(ev)
			}
		}
		return
	}
	var r Reply
	if err := json.Unmarshal(msg, &r); err != nil {
		return
	}
	r.Frames = frames
	c.mu.Lock()
	ch, ok := c.pending[idKey(r.ID)]
	c.mu.Unlock()
	if ok {
		ch <- r
		return
	}
	select {
	case c.Unmatched <- r:
	default:
	}
}

func (c *Client) answerHost(id json.RawMessage, typ, resultType string, msg []byte) {
	c.mu.Lock()
	h := c.onHost
	c.mu.Unlock()
	if h == nil {
		return
	}
	go func() {
		fields := h(typ, msg)
		if fields == nil {
			fields = map[string]any{}
		}
		fields["id"], fields["type"] = id, resultType
		if _, ok := fields["shown"]; !ok && resultType != "browser-result" {
			// As a prompt window does: the answer carries the digest of
			// the prompt it answers. A handler that sets "shown" itself
			// (a test forging one) keeps its own.
			if d, err := shown.Digest(msg); err == nil {
				fields["shown"] = d
			}
		}
		if b, err := json.Marshal(fields); err == nil {
			_ = c.w.Write(b)
		}
	}()
}

// idKey normalises an id so "7" and 7 do not collide with each other's
// pending calls: the client only ever sends string ids.
func idKey(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return "raw:" + string(raw)
}

func envelope(id, typ string, params any) ([]byte, error) {
	fields := map[string]json.RawMessage{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("nmclient: %s params: %w", typ, err)
		}
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, fmt.Errorf("nmclient: %s params must be an object: %w", typ, err)
		}
	}
	fields["id"], _ = json.Marshal(id)
	fields["type"], _ = json.Marshal(typ)
	return json.Marshal(fields)
}

// Decode unmarshals a successful reply's data into v, or returns the
// reply's error with its code.
func (r Reply) Decode(v any) error {
	if !r.Success {
		return &ReplyError{Code: r.Code, Msg: r.Error}
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(r.Data, v)
}

// ReplyError is a failed reply.
type ReplyError struct{ Code, Msg string }

func (e *ReplyError) Error() string { return e.Code + ": " + e.Msg }
