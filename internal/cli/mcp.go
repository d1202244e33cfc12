package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/mcpserve"
	"github.com/agentgate/nmhost/internal/viewer"
	"github.com/agentgate/nmhost/mediator"
)

// runMCP: nmhost mcp [--http ADDR] [--server NAME] [--agent ID] [--session ID] [--yes-to mcp.call].
// Over stdio, stdout carries the protocol and nothing else; the gateway's
// own words go to stderr.
func runMCP(ctx context.Context, env Env) error {
	var (
		httpAddr, agent, session, only string
		yesTo                          multiFlag
	)
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.StringVar(&httpAddr, "http", "", "serve Streamable HTTP on the loopback `ADDR` (127.0.0.1:PORT) instead of stdio")
	fs.StringVar(&agent, "agent", app.GatewayAgent, "the agent `ID` the clients act as")
	fs.StringVar(&only, "server", "", "serve only the configured server `NAME`, its tools under their own names")
	fs.StringVar(&session, "session", "", "the session `ID` the calls belong to (its level applies)")
	fs.Var(&yesTo, "yes-to", "answer allow-once to prompts for this operation (mcp.call), for scripts; repeatable")
	if _, err := parse(specFor("mcp"), fs, env); err != nil {
		return err
	}
	var listen netip.AddrPort
	if httpAddr != "" {
		ap, err := netip.ParseAddrPort(httpAddr)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			return usagef("mcp", "--http %q is not a loopback IP:PORT (the gateway listens on loopback only)", httpAddr)
		}
		listen = ap
	}
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return err
	}
	if err := datadir.Ensure(dir); err != nil {
		return err
	}
	core, err := app.Open(dir, app.Options{AdminPolicyPath: adminPolicyPath(), Door: app.Door{Layer: "mcp"}})
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	level := ""
	if session != "" {
		s, err := core.Sessions().SessionSettings(ctx, session)
		if err != nil {
			return err
		}
		level = s.PermissionLevel
	}
	// Over stdio the terminal is not stdin (that is the client): the
	// person is asked on the controlling terminal when there is one.
	promptIn := env.Stdin
	if httpAddr == "" {
		promptIn = nil
		if tty, err := os.Open("/dev/tty"); err == nil {
			defer tty.Close()
			promptIn = tty
		}
	}
	prompter, err := newCLIPrompter(orEmpty(promptIn), env.Stderr, yesTo)
	if err != nil {
		return err
	}
	// With no terminal, the question goes to a browser with the
	// extension, through any host process it is connected to.
	prompter.elsewhere = core.RelayPrompter()
	if err := core.EnsureGatewayAgent(ctx, agent); err != nil {
		return err
	}
	srv, err := mcpserve.New(ctx, mcpserve.Options{Core: core, Agent: agent, Prompter: prompter,
		SessionID: session, SessionLevel: level, Only: only, Log: env.Stderr})
	if err != nil {
		return err
	}
	defer srv.Close()
	if httpAddr == "" {
		return srv.ServeStdio(ctx, io.NopCloser(env.Stdin), nopWriteCloser{env.Stdout})
	}
	return serveMCPHTTP(ctx, env, dir, srv, listen)
}

func serveMCPHTTP(ctx context.Context, env Env, dir string, srv *mcpserve.Server, listen netip.AddrPort) error {
	token, err := viewer.LoadOrCreateToken(dir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen.String())
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	h := srv.Handler(mcpserve.HTTPConfig{Token: token.Matches, Hosts: []string{addr, "localhost:" + port}})
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.Stdout, "http://%s/\n", addr)
	fmt.Fprintf(env.Stderr, "nmhost mcp: Streamable HTTP on http://%s/ (Authorization: Bearer, the token in %s)\n", addr, mediator.EscapeTerminal(dir+"/"+viewer.TokenFile))
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// A client's standing event stream never ends by itself: the
		// calls in flight get a second to finish, then every connection
		// is closed.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return hs.Close()
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return eofReader{}
	}
	return r
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
