package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/manifest"
)

// runDoctor prints one line per check and fails (exit 1) when any failed.
// Every failure a command fixes ends in that whole command.
func runDoctor(ctx context.Context, env Env) error {
	var mf manifestFlags
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	mf.register(fs, "doctor")
	if _, err := parse(specFor("doctor"), fs, env); err != nil {
		return err
	}
	if err := mf.checkIDs("doctor"); err != nil {
		return err
	}
	opts, err := mf.options(env)
	if err != nil {
		return err
	}
	checks := manifest.Doctor(opts)
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return err
	}
	checks = append(checks, manifest.CheckWritableDir(dir))
	rights := manifest.Check{Name: "data dir rights " + dir, OK: true, Detail: "writable by its owner only"}
	if err := datadir.CheckPrivate(dir); err != nil {
		rights.OK, rights.Detail = false, err.Error()
	}
	checks = append(checks, rights)

	cfg, cfgErr := datadir.LoadConfig(dir)
	c := manifest.Check{Name: "config " + filepath.Join(dir, datadir.ConfigFile), OK: cfgErr == nil}
	if cfgErr != nil {
		c.Detail = cfgErr.Error()
	} else {
		c.Detail = fmt.Sprintf("admits %d origin(s): %s", len(cfg.AllowedOrigins), strings.Join(cfg.AllowedOrigins, ", "))
		for _, o := range originsFor(opts) {
			if !slices.Contains(cfg.AllowedOrigins, o) {
				c.OK, c.Detail = false, fmt.Sprintf("origin %s is not admitted; run: %s", o, manifest.InstallCommand(opts, strings.Join(mf.browsers, ","), mf.ids))
			}
		}
	}
	checks = append(checks, c)
	st := manifest.Check{Name: "store " + filepath.Join(dir, app.DBFileName), OK: true, Detail: "opens"}
	// The sessions' memory is a file of its own that only memory
	// operations open; checked here so that a broken one shows before an
	// agent's first memory call fails on it.
	mem := manifest.Check{Name: "memory " + filepath.Join(dir, app.MemoryDBFileName), OK: true, Detail: "opens"}
	switch h := app.DiagnoseStore(ctx, dir); {
	case !h.Opened:
		st.OK, st.Detail = false, h.Store.Error()
		mem.OK, mem.Detail = false, "not checked: the store does not open"
	default:
		if h.Store != nil {
			st.OK, st.Detail = false, h.Store.Error()
		}
		if h.Memory != nil {
			mem.OK, mem.Detail = false, h.Memory.Error()
		} else if !h.MemoryFound {
			mem.Detail = "none yet (made by the first memory write)"
		}
	}
	checks = append(checks, st, mem)
	ok := true
	for _, c := range checks {
		mark := "ok  "
		if !c.OK {
			mark, ok = "FAIL", false
		}
		fmt.Fprintf(env.Stdout, "%s %s: %s\n", mark, c.Name, c.Detail)
	}
	if !ok {
		return errDoctorFailed
	}
	return nil
}
