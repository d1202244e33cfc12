package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/flows"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/host"
)

// LogFile is the host's log inside the data dir.
const LogFile = "nmhost.log"

// maxLogBytes is where the log file is rotated once, at start-up, so a
// long-lived profile cannot fill the disk with diagnostics.
const maxLogBytes = 16 << 20

func runHost(ctx context.Context, env Env) int {
	// Only frames may reach the browser. Anything else that prints to the
	// process's stdout by mistake goes to stderr instead.
	out := env.Stdout
	if f, ok := out.(*os.File); ok && f == os.Stdout {
		os.Stdout = os.Stderr
	}
	// The host's memory is bounded by budgets on what it holds at once
	// (host.DefaultMaxInFlightBytes, netproxy.DefaultMaxBufferedBytes);
	// the garbage collector is told the figure they add up to, so that
	// collected garbage does not double it. GOMEMLIMIT, when set, wins.
	if env.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(host.MemoryLimit)
	}
	caller, callerErr := host.ParseLaunch(env.Args)
	dir, err := datadir.Resolve(env.Getenv)
	if err == nil {
		err = datadir.Ensure(dir)
	}
	if err == nil {
		// A store others can write says whatever they want it to say:
		// refuse to start on it (the browser shows stderr in its log).
		err = datadir.CheckPrivate(dir)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "nmhost: %v\n", err)
		return 1
	}
	log, closeLog := openLog(dir, env.Stderr)
	defer closeLog()
	// Deferred early, so it runs last: Runtime.Close and the store's close
	// are inside the grace too.
	defer exitAfterGrace(ctx, log, os.Exit)()

	if callerErr != nil {
		log.Warn("launch arguments not understood", "err", callerErr)
		caller = host.Caller{Origin: strings.Join(env.Args, " ")}
	}
	// The application core: the store, config, fetcher and the
	// administrator's policy, opened once. An unreadable config still
	// opens the store (keeping the most records, the most carefully) and
	// admits no one; the requests still get replies. A policy that cannot
	// be trusted is not ignored: no host (fail closed).
	core, err := app.Open(dir, app.Options{AdminPolicyPath: adminPolicyPath(), TolerateBadConfig: true,
		Door: app.Door{Layer: "host", Origin: caller.Origin}})
	if err != nil {
		log.Error("the host does not run", "dir", dir, "err", err)
		return 1
	}
	defer core.Close(context.WithoutCancel(ctx))
	cfg := core.Config()
	if err := core.ConfigErr(); err != nil {
		log.Error("config unreadable; no origin is allowed", "err", err)
	}
	allowed := callerErr == nil && core.ConfigErr() == nil && slices.Contains(cfg.AllowedOrigins, caller.Origin)
	// Creating the runtime compiles nothing; the first run-agent does, or
	// loads the module from the cache an earlier process filled.
	rt, err := core.Runtime(ctx)
	if err != nil {
		log.Error("wasm runtime did not start", "err", err)
		return 1
	}
	// The logger names the pid on every line, this one included.
	log.Info("host started", "origin", caller.Origin, "allowed", allowed, "version", Version)
	wf := flows.Settings(cfg)
	// stdin is read as it comes, blocking: Serve stops on ctx (a signal)
	// without waiting for the read (host.intake says why).
	err = host.Serve(ctx, env.Stdin, out, host.Options{
		App: core, Runtime: rt, Caller: caller, OriginAllowed: allowed, Log: log, Version: Version, Workflow: &wf,
	})
	if err != nil {
		log.Error("host stopped", "err", err)
		return 1
	}
	if ctx.Err() != nil {
		log.Info("host exiting: stopped by a signal; requests in flight were cancelled and answered")
		return 0
	}
	log.Info("host exiting: input closed")
	return 0
}

func openLog(dir string, stderr io.Writer) (*slog.Logger, func()) {
	path := filepath.Join(dir, LogFile)
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogBytes {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	var w io.Writer = stderr
	if err == nil {
		w = io.MultiWriter(stderr, f)
	}
	log := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})).With("pid", os.Getpid())
	if err != nil {
		log.Warn("log file not opened", "path", path, "err", err)
		return log, func() {}
	}
	return log, func() { f.Close() }
}
