package viewer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/runs"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

// client is one websocket connection. Everything it is sent goes through
// its bounded queue to its one writer goroutine; a full queue drops the
// client, never blocks the sender.
type client struct {
	conn  *websocket.Conn
	queue chan *websocket.PreparedMessage
	done  chan struct{}
	once  sync.Once
	why   string
}

func (c *client) send(m *websocket.PreparedMessage) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.queue <- m:
		return true
	default:
		c.drop(fmt.Sprintf("it fell %d messages behind", cap(c.queue)))
		return false
	}
}

// drop disconnects the client. Closing the connection also unblocks a
// writer stuck on a client that stopped reading.
func (c *client) drop(why string) {
	c.once.Do(func() {
		c.why = why
		close(c.done)
		c.conn.Close()
	})
}

func (c *client) sendJSON(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	m, err := websocket.NewPreparedMessage(websocket.TextMessage, b)
	if err != nil {
		return false
	}
	return c.send(m)
}

func (c *client) writeLoop(timeout time.Duration) {
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			return
		case m := <-c.queue:
			c.conn.SetWriteDeadline(time.Now().Add(timeout))
			if err := c.conn.WritePreparedMessage(m); err != nil {
				c.drop("write failed: " + err.Error())
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(timeout)); err != nil {
				c.drop("ping failed")
				return
			}
		}
	}
}

// handleWS upgrades to a websocket; ServeHTTP has checked the token (in
// the Authorization header or the token subprotocol). The Origin must still
// be this viewer's own when a browser sends one: a websocket is not bound by
// the same-origin policy, and this keeps any other page from driving the
// socket should it ever come by the token. Only programs omit Origin.
func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 4096,
		// Only the fixed protocol is ever selected, so the token the page
		// offered as a subprotocol is not echoed back.
		Subprotocols: []string{ViewerProtocol},
		CheckOrigin: func(r *http.Request) bool {
			origin := r.Header.Get("Origin")
			return origin == "" || origin == "http://"+r.Host
		},
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			code := mediator.CodeBadRequest
			if status == http.StatusForbidden {
				code = mediator.CodeUnauthorized
				s.log.Warn("viewer websocket refused", "origin", clip(r.Header.Get("Origin"), 64), "remote", r.RemoteAddr)
			}
			writeError(w, status, mediator.Errorf(code, "websocket: %v", reason))
		},
	}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade answered already
	}
	conn.SetReadLimit(MaxWSMessageBytes)
	c := &client{conn: conn, queue: make(chan *websocket.PreparedMessage, s.cfg.ClientQueue), done: make(chan struct{})}
	s.hub.join(c)
	defer func() {
		s.hub.leave(c)
		c.drop("closed")
		if c.why != "closed" {
			s.log.Warn("viewer websocket client dropped", "remote", r.RemoteAddr, "why", c.why)
		}
	}()
	go c.writeLoop(s.cfg.WriteTimeout)

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel() // a run outlives no connection
	runs := make(chan struct{}, maxRunsPerClient)
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var msg wsMessage
		// Read exactly, like every other input: a second
		// "permissionLevel" in another case cannot raise the level.
		if err := mediator.DecodeExact(data, &msg); err != nil {
			c.sendJSON(wsError{Type: "error", Code: mediator.CodeBadRequest, Error: "malformed JSON message (names match exactly; no unknown, repeated or case-variant members): " + err.Error()})
			continue
		}
		if err := msg.published(); err != nil {
			c.sendJSON(wsError{Type: "error", RunID: msg.RunID, Code: mediator.CodeOf(err), Error: mediator.MessageOf(err)})
			continue
		}
		switch msg.Type {
		case "run", "run-workflow":
			select {
			case runs <- struct{}{}:
			default:
				c.sendJSON(wsError{Type: "error", RunID: msg.RunID, SessionID: msg.SessionID, Code: mediator.CodeTooLarge,
					Error: fmt.Sprintf("at most %d runs at once per connection", maxRunsPerClient)})
				continue
			}
			run := s.run
			if msg.Type == "run-workflow" {
				run = s.runWorkflow
			}
			s.runsWG.Add(1)
			go func() {
				defer s.runsWG.Done()
				defer func() { <-runs }()
				run(ctx, c, msg)
			}()
		case "ping":
			c.sendJSON(map[string]string{"type": "pong"})
		default:
			c.sendJSON(wsError{Type: "error", Code: mediator.CodeUnknownType, Error: fmt.Sprintf("unknown message type %q", clip(msg.Type, 32))})
		}
	}
}

// wsMessage is a client message. "run" runs an agent in a session; runId is
// optional and echoed so a client can tell concurrent runs apart.
type wsMessage struct {
	Type            string `json:"type"`
	RunID           string `json:"runId,omitempty"`
	SessionID       string `json:"sessionId"`
	AgentID         string `json:"agentId"`
	PermissionLevel string `json:"permissionLevel"`
	Input           string `json:"input"`
	// The session API's published names for the same two members; a
	// message may use either spelling of each, never both.
	SessionIDPublished       string `json:"session_id"`
	PermissionLevelPublished string `json:"permission_level"`
	// Workflow is a run-workflow message's graph (docs/permissions.md,
	// "Workflows").
	Workflow json.RawMessage `json:"workflow,omitempty"`
	// Script, ScriptName and ScriptAgent are an agent's script instead
	// (flows.Source).
	Script      string `json:"script,omitempty"`
	ScriptName  string `json:"scriptName,omitempty"`
	ScriptAgent string `json:"scriptAgent,omitempty"`
}

// published takes the session API's published names into the camelCase
// ones: either spelling of a member, never both (a message that says two
// levels is refused, not read one way here and another there).
func (m *wsMessage) published() error {
	for _, f := range []struct {
		camel, published *string
		name             string
	}{{&m.SessionID, &m.SessionIDPublished, "sessionId"}, {&m.PermissionLevel, &m.PermissionLevelPublished, "permissionLevel"}} {
		if *f.published == "" {
			continue
		}
		if *f.camel != "" {
			return mediator.Errorf(mediator.CodeBadRequest, "the message names %s twice (in both spellings)", f.name)
		}
		*f.camel, *f.published = *f.published, ""
	}
	return nil
}

type wsError struct {
	Type      string        `json:"type"` // "error"
	RunID     string        `json:"runId,omitempty"`
	SessionID string        `json:"sessionId,omitempty"`
	Code      mediator.Code `json:"code"`
	Error     string        `json:"error"`
}

// runEvent is one streamed message of a run: "output", "denial" or
// "result".
type runEvent struct {
	Type      string           `json:"type"`
	RunID     string           `json:"runId,omitempty"`
	SessionID string           `json:"sessionId"`
	AgentID   string           `json:"agentId"`
	Text      string           `json:"text,omitempty"`
	Denial    *mediator.Denial `json:"denial,omitempty"`
	Result    *wasmhost.Result `json:"result,omitempty"`
}

// run runs msg's agent in its session's context: a named session must
// exist, and its stored level applies unless the message asks for a lower
// one; a message without one starts a fresh session, named in every
// message of the run. A message cannot raise the level: that takes a
// settings PUT, which is the user's decision, not a run's.
func (s *Server) run(ctx context.Context, c *client, msg wsMessage) {
	fail := func(err error) { runFailed(c, msg, err) }
	in, ok := s.openRun(ctx, c, &msg)
	if !ok {
		return
	}
	defer in.Close()
	ev := func(e runEvent) runEvent {
		e.RunID, e.SessionID, e.AgentID = msg.RunID, msg.SessionID, msg.AgentID
		return e
	}
	deps := s.app.Runs(runs.Deps{Runtime: s.cfg.Runtime, Authorizer: s.cfg.Authorizer, Fetch: s.cfg.Fetch,
		LogDenial: s.gatewayDenials(msg.SessionID)})
	out, err := deps.Run(ctx, runs.Request{AgentID: msg.AgentID, Input: msg.Input, Session: &in,
		Events: func(e wasmhost.Event) {
			if e.Kind == "denial" {
				c.sendJSON(ev(runEvent{Type: "denial", Denial: e.Denial}))
				return
			}
			c.sendJSON(ev(runEvent{Type: "output", Text: e.Text}))
		},
	})
	if err != nil {
		fail(fmt.Errorf("agent[%s] session[%s]: %w", msg.AgentID, msg.SessionID, err))
		return
	}
	res := out.Result
	c.sendJSON(ev(runEvent{Type: "result", Result: &res}))
}

// openRun resolves msg's session as every run kind does
// (app.Sessions.OpenRun): the named one at its level or a lower one the message
// asks for, or a fresh one when it names none, whose id then goes in msg
// and so in every message of the run. The caller closes the run; on
// failure the client has been told and ok is false.
func (s *Server) openRun(ctx context.Context, c *client, msg *wsMessage) (in app.Run, ok bool) {
	in, err := s.app.Sessions().OpenRun(ctx, msg.SessionID, msg.PermissionLevel)
	if err != nil {
		runFailed(c, *msg, err)
		return app.Run{}, false
	}
	msg.SessionID = in.Session
	return in, true
}

// runFailed tells the client a run or workflow of msg ended with err.
func runFailed(c *client, msg wsMessage, err error) {
	c.sendJSON(wsError{Type: "error", RunID: msg.RunID, SessionID: msg.SessionID, Code: mediator.CodeOf(err), Error: err.Error()})
}

// gatewayDenials records the denials the runtime decides itself in a run
// of session: layer "gateway" unless it names one, and the session in the
// details.
func (s *Server) gatewayDenials(session string) func(ctx context.Context, d mediator.Denial) {
	return func(ctx context.Context, d mediator.Denial) {
		if d.Context.Layer == "" {
			d.Context.Layer = "gateway"
		}
		if d.Context.Details == nil {
			d.Context.Details = map[string]string{}
		}
		d.Context.Details["session"] = session
		if _, err := s.app.Denials().LogDenial(context.WithoutCancel(ctx), d); err != nil {
			s.log.Error("recording a denial failed", "agent", d.AgentID, "err", err)
		}
	}
}
