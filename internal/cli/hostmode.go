package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/internal/adminpolicy"
	"github.com/agentgate/nmhost/internal/flows"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/host"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/wasmhost"
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

	cfg, err := datadir.LoadConfig(dir)
	if err != nil {
		// An unreadable config admits no one; the requests still get replies.
		log.Error("config unreadable; no origin is allowed", "err", err)
	}
	allowed := callerErr == nil && slices.Contains(cfg.AllowedOrigins, caller.Origin)
	if callerErr != nil {
		log.Warn("launch arguments not understood", "err", callerErr)
		caller = host.Caller{Origin: strings.Join(env.Args, " ")}
	}
	// err is still the config's: an unreadable one keeps the most records.
	st, err := store.Open(dir, storeOptionsOf(cfg, err))
	if err != nil {
		log.Error("store did not open", "dir", dir, "err", err)
		return 1
	}
	defer st.Close()
	fetcher, err := newFetcher(cfg)
	if err != nil {
		log.Error("fetcher config refused", "err", err)
		return 1
	}
	// The administrator's policy, when there is one, or no host: a
	// policy that cannot be trusted is not ignored (fail closed).
	admin, err := adminpolicy.Load(adminPolicyPath())
	if err != nil {
		log.Error("admin policy refused; the host does not run without it", "err", err)
		return 1
	}
	// Creating the runtime compiles nothing; the first run-agent does, or
	// loads the module from the cache an earlier process filled.
	rt, err := wasmhost.New(ctx, wasmhost.Config{CacheDir: filepath.Join(dir, "wasm-cache"), MaxGuestMemory: cfg.MaxGuestMemory})
	if err != nil {
		log.Error("wasm runtime did not start", "err", err)
		return 1
	}
	defer rt.Close(context.WithoutCancel(ctx))
	// The logger names the pid on every line, this one included.
	log.Info("host started", "origin", caller.Origin, "allowed", allowed, "version", Version)
	wf := flows.Settings(cfg)
	// stdin is read as it comes, blocking: Serve stops on ctx (a signal)
	// without waiting for the read (host.intake says why).
	err = host.Serve(ctx, env.Stdin, out, host.Options{
		Store: st, Fetcher: fetcher, Runtime: rt, Caller: caller, OriginAllowed: allowed, Log: log, Version: Version,
		Workflow: &wf, Admin: admin,
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

func newFetcher(cfg datadir.Config) (*netproxy.Fetcher, error) {
	nc := netproxy.Config{MaxResponseBytes: cfg.MaxResponseBytes}
	if cfg.UnsafeProxyURL != "" {
		u, err := url.Parse(cfg.UnsafeProxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("unsafeProxyURL %q is not an http(s) URL", cfg.UnsafeProxyURL)
		}
		nc.UnsafeProxyURL = u
	}
	if len(cfg.StaticHosts) > 0 {
		r, err := newStaticResolver(cfg.StaticHosts)
		if err != nil {
			return nil, err
		}
		nc.Resolver = r
	}
	return netproxy.New(nc), nil
}

// staticResolver answers configured names from the config (like a hosts
// file) and asks DNS for the rest. Its answers pass through the same address
// checks as DNS answers: it can only make a name resolve, never make an
// address allowed.
type staticResolver struct {
	m map[string][]netip.Addr
}

func newStaticResolver(m map[string][]string) (*staticResolver, error) {
	r := &staticResolver{m: map[string][]netip.Addr{}}
	for name, addrs := range m {
		canon := strings.TrimSuffix(strings.ToLower(name), ".")
		for _, a := range addrs {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				return nil, fmt.Errorf("staticHosts[%s]: %q is not an IP address", name, a)
			}
			r.m[canon] = append(r.m[canon], ip)
		}
	}
	return r, nil
}

func (r *staticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ips, ok := r.m[strings.TrimSuffix(strings.ToLower(host), ".")]; ok {
		return ips, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
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
