package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/flows"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/viewer"
	"github.com/agentgate/nmhost/mediator"
)

// runServe: nmhost serve [--port N] [--bind ADDR [--unsafe-bind]] [--open].
// The first line on stdout is the viewer's URL, the token in its fragment
// (which browsers never send to a server); everything else goes to stderr
// and the log file.
func runServe(ctx context.Context, env Env) error {
	var (
		port       int
		bind       string
		unsafeBind bool
		open       bool
	)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.IntVar(&port, "port", 0, "TCP port `N`; 0 (the default) picks a free one")
	fs.StringVar(&bind, "bind", "127.0.0.1", "the IP address `ADDR` to listen on; anything but loopback needs --unsafe-bind")
	fs.BoolVar(&unsafeBind, "unsafe-bind", false, "allow --bind to a non-loopback address: anyone who can reach it and learns the token can read the log and run agents")
	fs.BoolVar(&open, "open", false, "open the viewer in the default browser")
	if _, err := parse(specFor("serve"), fs, env); err != nil {
		return err
	}
	if port < 0 || port > 65535 {
		return usagef("serve", "--port %d is not a TCP port (0-65535)", port)
	}
	addr, err := netip.ParseAddr(bind)
	if err != nil {
		return usagef("serve", "--bind %q is not an IP address (a name could resolve anywhere)", bind)
	}
	addr = addr.Unmap()
	unsafeHost := ""
	if !addr.IsLoopback() {
		if !unsafeBind {
			return fmt.Errorf("--bind %s is not a loopback address; the viewer listens on loopback only unless --unsafe-bind is given", addr)
		}
		unsafeHost = addr.String()
	}

	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return err
	}
	if err := datadir.Ensure(dir); err != nil {
		return err
	}
	if err := datadir.CheckPrivate(dir); err != nil {
		return err
	}
	log, closeLog := openLog(dir, env.Stderr)
	defer closeLog()
	token, err := viewer.LoadOrCreateToken(dir)
	if err != nil {
		return err
	}
	// The viewer's gateway has no prompt window of its own: what needs a
	// person is relayed to a browser with the extension (app.RelayPrompter),
	// and refused with confirmation_required when none takes it.
	core, err := app.Open(dir, app.Options{AdminPolicyPath: adminPolicyPath(), Door: app.Door{Layer: "gateway"}})
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	cfg := core.Config()
	policy := core.Policy(mediator.PolicyOptions{Prompter: core.RelayPrompter()})
	fetch, err := core.FetchService(policy, func(ctx context.Context, d mediator.Denial) { core.LogDenial(ctx, "gateway", d) })
	if err != nil {
		return err
	}
	rt, err := core.Runtime(ctx)
	if err != nil {
		return err
	}

	wf := flows.Settings(cfg)
	srv, err := viewer.New(viewer.Config{
		App: core, Token: token, Runtime: rt, Fetch: fetch, Authorizer: policy,
		UnsafeBindHost: unsafeHost, Log: log, Workflow: &wf,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr.String(), strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer ln.Close()
	_, gotPort, _ := net.SplitHostPort(ln.Addr().String())
	urlHost := addr.String()
	if addr.Is6() {
		urlHost = "[" + urlHost + "]"
	}
	link := "http://" + urlHost + ":" + gotPort + "/#token=" + token.String()
	fmt.Fprintln(env.Stdout, link)
	log.Info("viewer started", "addr", ln.Addr().String(), "dir", dir, "unsafeBind", unsafeHost != "")
	fmt.Fprintf(env.Stderr, "nmhost serve: the denial log of %s, live at the URL above (the token is also in %s). Ctrl-C stops.\n", dir, filepath.Join(dir, viewer.TokenFile))
	if open {
		// The opener gets the path of a private file that forwards to the
		// URL, never the URL: a process's arguments are readable by every
		// user of the machine.
		launcher, err := viewer.Launch(dir, link, nil)
		if launcher != "" {
			defer os.Remove(launcher)
		}
		if err != nil {
			log.Warn("could not open a browser; open the URL yourself", "err", err)
		}
	}
	err = srv.Serve(ctx, ln)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
