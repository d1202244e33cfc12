package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/mediator"
)

// Options configures a Server.
type Options struct {
	Core *app.App
	// Agent is who the clients act as (app.GatewayAgent by default).
	Agent string
	// Prompter asks the person about a call that needs them; nil: such
	// calls are refused with confirmation_required, on the record.
	Prompter mediator.Prompter
	// SessionID and SessionLevel place the calls in a session ("": none,
	// the default level).
	SessionID, SessionLevel string
	// Only, when set, serves that one configured server's tools under
	// their own names: a client's configuration can swap one server
	// entry for the gateway in front of it, and with one server no name
	// can shadow another's.
	Only string
	// Log receives what the gateway has to say to the person (a server
	// that failed to list); nil discards it.
	Log io.Writer
}

// Server is the MCP server the clients see: the configured servers'
// tools, each named SERVER.TOOL (or one server's, under their own names),
// each call decided by the core.
type Server struct {
	o      Options
	srv    *mcp.Server
	gw     *mcpgw.Gateway
	auth   mediator.Authorizer
	mu     sync.Mutex
	names  map[string][]string // server -> the names listed for it
	closed bool
}

// New lists every configured server's tools and returns the server that
// offers them. A server that fails to list is reported and offers nothing
// until it lists again.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Agent == "" {
		o.Agent = app.GatewayAgent
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	gw, err := o.Core.MCP()
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, gw: gw, names: map[string][]string{}}
	s.auth = o.Core.Policy(mediator.PolicyOptions{Prompter: o.Prompter})
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "nmhost", Title: "nmhost MCP gateway", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		Instructions: "Tools of the MCP servers the person configured, named SERVER.TOOL. Every call is decided by nmhost first: some run at once, some wait for the person, some are refused with a reason.",
	})
	servers := gw.Servers()
	if o.Only != "" {
		if _, ok := gw.Server(o.Only); !ok {
			return nil, mediator.Errorf(mediator.CodeToolNotAllowed, "no MCP server %q is configured (%s)", mediator.Truncate(o.Only, 64), mcpgw.ConfigFile)
		}
		servers = []string{o.Only}
	}
	for _, name := range servers {
		s.refresh(ctx, name)
	}
	gw.Watch(func(server string) { go s.Refresh(context.WithoutCancel(ctx), server) })
	return s, nil
}

// Refresh re-lists server's tools (its list changed, or it restarted).
func (s *Server) Refresh(ctx context.Context, server string) {
	if s.o.Only == "" || server == s.o.Only {
		s.refresh(ctx, server)
	}
}

func (s *Server) refresh(ctx context.Context, server string) {
	l, err := s.gw.List(ctx, server)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if old := s.names[server]; len(old) > 0 {
		s.srv.RemoveTools(old...)
	}
	delete(s.names, server)
	if err != nil {
		s.o.Core.RecordToolRefusals(ctx, s.o.Agent, []mcpgw.Refusal{{Server: server, Err: err}})
		fmt.Fprintf(s.o.Log, "nmhost mcp: %s offers no tools: %s\n", server, mediator.EscapeTerminal(mediator.MessageOf(err)))
		return
	}
	s.o.Core.RecordToolRefusals(ctx, s.o.Agent, l.Refused)
	for _, r := range l.Refused {
		fmt.Fprintf(s.o.Log, "nmhost mcp: %s: %s\n", server, mediator.EscapeTerminal(mediator.MessageOf(r.Err)))
	}
	names := make([]string, 0, len(l.Tools))
	for _, t := range l.Tools {
		name := server + "." + t.Def.Name
		if s.o.Only != "" {
			name = t.Def.Name
		}
		def := *t.Def
		def.Name = name
		if def.InputSchema == nil {
			def.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		tool := t.Def.Name
		s.srv.AddTool(&def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.call(ctx, server, tool, req.Params.Arguments, progressTo(ctx, req)), nil
		})
		names = append(names, name)
	}
	s.names[server] = names
}

// call makes one call through the core. A refusal is a tool result with
// isError and the reason code, not a protocol error: the client (often a
// model) reads why and what would fix it.
func (s *Server) call(ctx context.Context, server, tool string, args json.RawMessage, progress mcpgw.Progress) *mcp.CallToolResult {
	res, err := s.o.Core.CallTool(ctx, s.auth, app.ToolCallRequest{AgentID: s.o.Agent, Server: server, Tool: tool, Args: args,
		SessionID: s.o.SessionID, SessionLevel: s.o.SessionLevel, Progress: progress})
	if err != nil {
		code := mediator.CodeOf(err)
		return &mcp.CallToolResult{IsError: true, Meta: mcp.Meta{"nmhost/code": string(code)},
			Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("nmhost did not make this call (%s): %s", code, mediator.MessageOf(err))}}}
	}
	return res
}

// MCP is the SDK server, for a transport to run.
func (s *Server) MCP() *mcp.Server { return s.srv }

// ServeStdio serves one client on r and w (newline-delimited JSON-RPC)
// until it disconnects or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	return s.srv.Run(ctx, &mcp.IOTransport{Reader: r, Writer: w, MaxLineLength: mcpgw.MaxMessageBytes})
}

// Close stops offering tools; the gateway's connections are the
// caller's to close.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

// progressTo passes a server's progress about a call on to the client
// that made it, under the client's own token; nil when the client asked
// for none.
func progressTo(ctx context.Context, req *mcp.CallToolRequest) mcpgw.Progress {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	return func(p *mcp.ProgressNotificationParams) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}
