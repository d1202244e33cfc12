package app

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentgate/nmhost/internal/adminpolicy"
	"github.com/agentgate/nmhost/internal/app/flows"
	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/internal/app/runs"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/wasmhost"
)

// App is the application over one data directory. Build it with Open
// (a front end) or New (tests, from parts they already hold).
type App struct {
	st      *store.Store
	cfg     datadir.Config
	cfgErr  error
	fetcher *netproxy.Fetcher
	// admin is the administrator's rules in force: the machine's file
	// (machine), and what a browser's managed storage added (SetManaged).
	admin   atomic.Pointer[mediator.Admin]
	machine mediator.AdminPolicy

	// layer and origin name the front end in the records of refusals
	// the core makes itself ("host", "gateway", "cli"; the caller's
	// origin in host mode).
	layer, origin string

	rtOnce  sync.Once
	rt      *wasmhost.Runtime
	rtErr   error
	ownRT   bool
	ownsAll bool

	mcpOnce sync.Once
	mcp     *mcpgw.Gateway
	mcpErr  error
}

// Parts are what New assembles: a store already open, the config read
// from its directory, the fetcher and the machine's admin policy. Runtime
// is optional: nil builds one on first use (App.Runtime).
type Parts struct {
	Store   *store.Store
	Config  datadir.Config
	Fetcher *netproxy.Fetcher
	Admin   mediator.AdminPolicy
	Runtime *wasmhost.Runtime
	// Door names the front end in the records of the core's refusals.
	Door Door
}

// Door is the front end an App serves: its layer in the denial log
// ("host", "gateway", "cli") and, in host mode, the caller's origin.
type Door struct {
	Layer, Origin string
}

// New is an App over parts the caller keeps and closes.
func New(p Parts) (*App, error) {
	if p.Store == nil || p.Fetcher == nil {
		return nil, errors.New("app: New needs a Store and a Fetcher")
	}
	if p.Door.Layer == "" {
		p.Door.Layer = "core"
	}
	a := &App{st: p.Store, cfg: p.Config, fetcher: p.Fetcher, rt: p.Runtime, layer: p.Door.Layer, origin: p.Door.Origin, machine: p.Admin}
	admin := mediator.NewAdmin(p.Admin)
	a.admin.Store(&admin)
	return a, nil
}

// Options configures Open.
type Options struct {
	// AdminPolicyPath is the machine's admin policy file
	// (adminpolicy.Path() in a released binary). A file that is there and
	// cannot be trusted stops Open: a policy is never ignored.
	AdminPolicyPath string
	// TolerateBadConfig opens the store even when config.json cannot be
	// read, keeping the most records the most carefully (strict, per
	// call); ConfigErr then says why. Host mode sets it: the browser's
	// requests still get replies, and the unreadable config admits no
	// origin.
	TolerateBadConfig bool
	// Door names the front end (Parts.Door).
	Door Door
}

// Open opens the application over dir, which must be private to the
// user (datadir.CheckPrivate): a store others can write says whatever
// they want it to say.
func Open(dir string, o Options) (*App, error) {
	if err := datadir.CheckPrivate(dir); err != nil {
		return nil, err
	}
	cfg, cfgErr := datadir.LoadConfig(dir)
	if cfgErr != nil && !o.TolerateBadConfig {
		return nil, cfgErr
	}
	admin, err := adminpolicy.Load(o.AdminPolicyPath)
	if err != nil {
		return nil, fmt.Errorf("admin policy refused: %w", err)
	}
	fetcher, err := newFetcher(cfg)
	if err != nil {
		return nil, fmt.Errorf("fetcher config refused: %w", err)
	}
	st, err := store.Open(dir, storeOptions(cfg, cfgErr))
	if err != nil {
		return nil, err
	}
	a, err := New(Parts{Store: st, Config: cfg, Fetcher: fetcher, Admin: admin, Door: o.Door})
	if err != nil {
		st.Close()
		return nil, err
	}
	a.cfgErr, a.ownsAll = cfgErr, true
	return a, nil
}

// storeOptions are the store's options from the config: its audit
// settings. A config that cannot be read (err) keeps the most records
// the most carefully (strict, per call) rather than guess.
func storeOptions(cfg datadir.Config, err error) store.Options {
	if err != nil {
		return store.Options{Durability: mediator.DurabilityStrict, AuditCalls: mediator.AuditCallsPerCall}
	}
	a := cfg.Audit
	if a == nil {
		return store.Options{}
	}
	return store.Options{Durability: a.Durability, SyncWindow: time.Duration(a.SyncWindowMS) * time.Millisecond, AuditCalls: a.Calls}
}

// Close closes what Open opened (and the runtime App built itself).
func (a *App) Close(ctx context.Context) error {
	var err error
	if a.ownRT && a.rt != nil {
		err = a.rt.Close(ctx)
	}
	if a.mcp != nil {
		err = errors.Join(err, a.mcp.Close())
	}
	if a.ownsAll {
		err = errors.Join(err, a.st.Close())
	}
	return err
}

// Dir is the data directory.
func (a *App) Dir() string { return a.st.Dir() }

// Config is the data directory's config as Open read it.
func (a *App) Config() datadir.Config { return a.cfg }

// ConfigErr is why config.json could not be read, or nil.
func (a *App) ConfigErr() error { return a.cfgErr }

// Runtime is the WebAssembly runtime every run of this App shares,
// built on first use with the config's bounds (maxGuestMemory): the
// same bound whichever front end starts the run. Building one compiles
// nothing.
func (a *App) Runtime(ctx context.Context) (*wasmhost.Runtime, error) {
	a.rtOnce.Do(func() {
		if a.rt != nil {
			return
		}
		a.rt, a.rtErr = wasmhost.New(ctx, a.RuntimeConfig())
		a.ownRT = a.rtErr == nil
	})
	return a.rt, a.rtErr
}

// RuntimeConfig is the runtime's configuration from the data directory.
func (a *App) RuntimeConfig() wasmhost.Config {
	return wasmhost.Config{CacheDir: filepath.Join(a.Dir(), "wasm-cache"), MaxGuestMemory: a.cfg.MaxGuestMemory}
}

// Store is the store, for the core's own packages (internal/app/...).
// A front end reads through the views (records.go) and changes grants,
// installs and sessions through the App's operations, never through
// this (internal/archcheck, TestRulesLiveInTheCore).
func (a *App) Store() *store.Store { return a.st }

// Runs is d with this App's store: every run a front end starts goes
// through the one run constructor over the core's records.
func (a *App) Runs(d runs.Deps) runs.Deps {
	d.Store = a.st
	d.Tools = a.ModuleTools()
	return d
}

// Flows is h with this App's store, for a workflow's runs.
func (a *App) Flows(h *flows.Host) *flows.Host {
	h.Store = a.st
	if h.Tools == nil && h.Policy != nil {
		h.Tools = workflowTools{a: a, auth: h.Policy}
	}
	return h
}

// Fetcher is the configured fetcher.
func (a *App) Fetcher() *netproxy.Fetcher { return a.fetcher }
