package mcpgw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/nmhost/mediator"
)

// Bounds on what an upstream may send, whatever it is.
const (
	// MaxTools is the most tools one server may list; past it the
	// server's list is refused whole (tool_definitions), not cut: a cut
	// list would depend on the order a hostile server chose.
	MaxTools = 1000
	// MaxMessageBytes bounds one JSON-RPC message from an upstream.
	MaxMessageBytes = 16 << 20
	// MaxResultBytes bounds a call's result as the gateway forwards it.
	MaxResultBytes = 8 << 20
	// DefaultCallTimeout bounds a call when the configuration sets none.
	DefaultCallTimeout = 60 * time.Second
	// connectTimeout bounds starting a server and its first listing.
	connectTimeout = 30 * time.Second
	// maxDescriptionBytes bounds a tool's description as shown.
	maxDescriptionBytes = 4 << 10
)

// Tool is one tool of one server, as the gateway lists it and decides it.
type Tool struct {
	Server string
	// Def is the definition as the server listed it.
	Def *mcp.Tool
	// Definition is Def's hash (mediator.ToolDefinitionHash).
	Definition string
	Hints      mediator.ToolHints
	// Changed says what changed since the gateway last listed the tool
	// (in this process or before, SeenFile); "" when nothing did.
	Changed string
}

// Listed is what a server lists: its tools, and the names the gateway
// refused (a name it cannot show exactly, a name listed twice), with why.
type Listed struct {
	Tools   []Tool
	Refused []Refusal
}

// Refusal is a tool or server the gateway would not take, and why.
type Refusal struct {
	Server, Tool string // Tool "" for the whole server
	Err          error
}

// Gateway holds the connections to the configured servers. A server is
// started (or connected to) on first use and again after it failed.
type Gateway struct {
	cfg  Config
	seen seen

	mu       sync.Mutex
	ups      map[string]*upstream
	watchers []func(server string)

	// progress routes a server's progress notifications to the call
	// they are about, by the gateway's own token for that call: a
	// client's token is never sent upstream, so two clients' tokens
	// cannot meet.
	progress sync.Map // string -> func(*mcp.ProgressNotificationParams)
	nextTok  atomic.Int64
}

// Progress receives a server's progress notifications about one call.
type Progress func(*mcp.ProgressNotificationParams)

// New returns a gateway over cfg; dir, when set, is the data directory,
// where the definitions last listed are kept (SeenFile).
func New(cfg Config, dir string) *Gateway {
	return &Gateway{cfg: cfg, seen: seen{path: seenPath(dir)}, ups: map[string]*upstream{}}
}

// Watch has f told, from then on, that a server's tool list changed (a
// notification, a reconnection).
func (g *Gateway) Watch(f func(server string)) {
	g.mu.Lock()
	g.watchers = append(g.watchers, f)
	g.mu.Unlock()
}

func (g *Gateway) changed(server string) {
	g.mu.Lock()
	ws := slices.Clone(g.watchers)
	g.mu.Unlock()
	for _, f := range ws {
		f(server)
	}
}

// Servers is the configured servers' names, sorted.
func (g *Gateway) Servers() []string { return slices.Sorted(maps.Keys(g.cfg.Servers)) }

// Server is the configuration of the server name.
func (g *Gateway) Server(name string) (Server, bool) {
	s, ok := g.cfg.Servers[name]
	return s, ok
}

func (g *Gateway) upstream(name string) (*upstream, error) {
	srv, ok := g.cfg.Servers[name]
	if !ok {
		return nil, mediator.Errorf(mediator.CodeToolNotAllowed, "no MCP server %q is configured", mediator.Truncate(name, 64))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.ups[name]
	if u == nil {
		u = &upstream{name: name, srv: srv, g: g}
		g.ups[name] = u
	}
	return u, nil
}

// List is server's tools, connecting first when needed. The listing is
// kept until the server says it changed.
func (g *Gateway) List(ctx context.Context, server string) (Listed, error) {
	u, err := g.upstream(server)
	if err != nil {
		return Listed{}, err
	}
	return u.list(ctx)
}

// Tool is server's tool name as last listed.
func (g *Gateway) Tool(ctx context.Context, server, name string) (Tool, error) {
	l, err := g.List(ctx, server)
	if err != nil {
		return Tool{}, err
	}
	for _, t := range l.Tools {
		if t.Def.Name == name {
			return t, nil
		}
	}
	return Tool{}, mediator.Errorf(mediator.CodeToolNotAllowed, "the MCP server %s lists no tool %s", server, mediator.EscapeTerminal(mediator.Truncate(name, mediator.MaxToolNameLen)))
}

// Call calls t with args (a JSON object, as sent), within the server's
// timeout, and returns the result as the server gave it, if it is within
// MaxResultBytes.
func (g *Gateway) Call(ctx context.Context, t Tool, args json.RawMessage, onProgress Progress) (*mcp.CallToolResult, error) {
	u, err := g.upstream(t.Server)
	if err != nil {
		return nil, err
	}
	var tok string
	if onProgress != nil {
		tok = "nmhost-" + strconv.FormatInt(g.nextTok.Add(1), 10)
		g.progress.Store(tok, onProgress)
		defer g.progress.Delete(tok)
	}
	return u.call(ctx, t.Def.Name, args, tok)
}

// Close ends every connection and every server process the gateway
// started.
func (g *Gateway) Close() error {
	g.mu.Lock()
	ups := slices.Collect(maps.Values(g.ups))
	g.ups = map[string]*upstream{}
	g.mu.Unlock()
	var errs []error
	for _, u := range ups {
		errs = append(errs, u.close())
	}
	return errors.Join(errs...)
}

// upstream is one configured server's connection.
type upstream struct {
	name string
	srv  Server
	g    *Gateway

	mu     sync.Mutex
	sess   *mcp.ClientSession
	conn   *connection
	listed *Listed
}

func (u *upstream) timeout() time.Duration {
	if u.srv.TimeoutMS > 0 {
		return time.Duration(u.srv.TimeoutMS) * time.Millisecond
	}
	return DefaultCallTimeout
}

// session is the live session, connecting when there is none.
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, *connection, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.sess != nil {
		return u.sess, u.conn, nil
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "nmhost-gateway", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, // no roots, sampling or elicitation: the gateway offers nothing back
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			tok, _ := req.Params.ProgressToken.(string)
			if f, ok := u.g.progress.Load(tok); ok && strings.HasPrefix(tok, "nmhost-") {
				f.(Progress)(req.Params)
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			u.mu.Lock()
			u.listed = nil
			u.mu.Unlock()
			u.g.changed(u.name)
		},
	})
	conn, transport, err := dial(u.srv)
	if err != nil {
		return nil, nil, mediator.Errorf(mediator.CodeUpstreamError, "the MCP server %s could not be started: %v", u.name, err)
	}
	sess, err := client.Connect(cctx, transport, nil)
	if err != nil {
		conn.close()
		return nil, nil, u.failure(conn, cctx, "could not be reached", err)
	}
	u.sess, u.conn, u.listed = sess, conn, nil
	return sess, conn, nil
}

// reset drops the session after a failure, so the next use reconnects.
func (u *upstream) reset(sess *mcp.ClientSession) {
	u.mu.Lock()
	if u.sess != sess {
		u.mu.Unlock()
		return
	}
	conn := u.conn
	u.sess, u.conn, u.listed = nil, nil, nil
	u.mu.Unlock()
	_ = sess.Close()
	conn.close()
	u.g.changed(u.name)
}

func (u *upstream) close() error {
	u.mu.Lock()
	sess, conn := u.sess, u.conn
	u.sess, u.conn, u.listed = nil, nil, nil
	u.mu.Unlock()
	if sess == nil {
		return nil
	}
	err := sess.Close()
	conn.close()
	return err
}

// failure names what went wrong with the server in a reason code: its
// message too large, its time up, or it failed (with the last of its
// stderr, escaped).
func (u *upstream) failure(conn *connection, ctx context.Context, what string, err error) error {
	switch {
	case conn != nil && conn.tooLarge():
		return mediator.Errorf(mediator.CodeTooLarge, "the MCP server %s sent a message larger than %d bytes; the connection was closed", u.name, MaxMessageBytes)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return mediator.Errorf(mediator.CodeTimeout, "the MCP server %s %s in time", u.name, what)
	}
	msg := fmt.Sprintf("the MCP server %s %s: %s", u.name, what, mediator.Truncate(err.Error(), 256))
	if tail := conn.stderrTail(); tail != "" {
		msg += "; its last words: " + mediator.EscapeTerminal(tail)
	}
	return mediator.Errorf(mediator.CodeUpstreamError, "%s", msg)
}

func (u *upstream) list(ctx context.Context) (Listed, error) {
	sess, conn, err := u.session(ctx)
	if err != nil {
		return Listed{}, err
	}
	u.mu.Lock()
	if u.listed != nil && u.sess == sess {
		l := *u.listed
		u.mu.Unlock()
		return l, nil
	}
	u.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	var raw []*mcp.Tool
	for t, err := range sess.Tools(lctx, nil) {
		if err != nil {
			err = u.failure(conn, lctx, "did not list its tools", err)
			if mediator.CodeOf(err) != mediator.CodeTimeout {
				u.reset(sess)
			}
			return Listed{}, err
		}
		if raw = append(raw, t); len(raw) > MaxTools {
			u.reset(sess)
			return Listed{}, mediator.Errorf(mediator.CodeToolDefinitions, "the MCP server %s lists more than %d tools; the gateway takes none of them", u.name, MaxTools)
		}
	}
	l := take(u.name, raw)
	for name, prev := range u.g.seen.note(u.name, l.Tools) {
		for i := range l.Tools {
			if l.Tools[i].Def.Name == name {
				l.Tools[i].Changed = Change(prev, l.Tools[i])
			}
		}
	}
	u.mu.Lock()
	if u.sess == sess {
		u.listed = &l
	}
	u.mu.Unlock()
	return l, nil
}

// take turns a server's listing into tools, refusing a name that is not
// plain or would not fit SERVER.TOOL, and a name listed twice (both
// times: neither is the real one).
func take(server string, raw []*mcp.Tool) Listed {
	var l Listed
	count := map[string]int{}
	for _, t := range raw {
		count[t.Name]++
	}
	for _, t := range raw {
		switch {
		case !mediator.ValidToolName(t.Name, mediator.MaxToolNameLen) || len(server)+1+len(t.Name) > mediator.MaxToolNameLen:
			l.Refused = append(l.Refused, Refusal{Server: server, Tool: mediator.EscapeTerminal(mediator.Truncate(t.Name, 64)),
				Err: mediator.Errorf(mediator.CodeToolDefinitions, "the MCP server %s lists a tool whose name is not 1-%d letters, digits, '_', '-' or '.' with the server's name: %s",
					server, mediator.MaxToolNameLen-len(server)-1, mediator.EscapeTerminal(mediator.Truncate(t.Name, 64)))})
			continue
		case count[t.Name] > 1:
			l.Refused = append(l.Refused, Refusal{Server: server, Tool: t.Name,
				Err: mediator.Errorf(mediator.CodeToolDefinitions, "the MCP server %s lists the tool %s %d times; none of them is taken", server, t.Name, count[t.Name])})
			continue
		}
		schema, _ := json.Marshal(t.InputSchema)
		var ann json.RawMessage
		var hints mediator.ToolHints
		if a := t.Annotations; a != nil {
			ann, _ = json.Marshal(a)
			ro, idem := a.ReadOnlyHint, a.IdempotentHint
			hints = mediator.ToolHints{ReadOnly: &ro, Idempotent: &idem, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
		}
		if len(t.Description) > maxDescriptionBytes {
			t.Description = mediator.Truncate(t.Description, maxDescriptionBytes)
		}
		l.Tools = append(l.Tools, Tool{Server: server, Def: t, Definition: mediator.ToolDefinitionHash(t.Name, t.Description, schema, ann), Hints: hints})
	}
	return l
}

func (u *upstream) call(ctx context.Context, tool string, args json.RawMessage, progressToken string) (*mcp.CallToolResult, error) {
	sess, conn, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, u.timeout())
	defer cancel()
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if progressToken != "" {
		params.SetProgressToken(progressToken)
	}
	res, err := sess.CallTool(cctx, params)
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && conn.alive() && cctx.Err() == nil {
			// The server answered with a JSON-RPC error: its answer,
			// not a failure of the connection.
			return nil, mediator.Errorf(mediator.CodeUpstreamError, "the MCP server %s refused the call: %s", u.name, mediator.EscapeTerminal(mediator.Truncate(err.Error(), 512)))
		}
		err = u.failure(conn, cctx, "did not answer the call", err)
		// A server that hung or broke is not trusted with the next call:
		// it is stopped and started again on next use.
		u.reset(sess)
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, mediator.Errorf(mediator.CodeUpstreamError, "the MCP server %s answered something that cannot be forwarded: %v", u.name, err)
	}
	if len(b) > MaxResultBytes {
		return nil, mediator.Errorf(mediator.CodeTooLarge, "the MCP server %s answered %d bytes; the gateway forwards at most %d", u.name, len(b), MaxResultBytes)
	}
	return res, nil
}
