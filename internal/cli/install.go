package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/manifest"
)

type manifestFlags struct {
	ids         multiFlag
	browsers    multiFlag
	system      bool
	userDataDir string
}

type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*m = append(*m, p)
		}
	}
	return nil
}

func (mf *manifestFlags) register(fs *flag.FlagSet) {
	fs.Var(&mf.ids, "extension-id", "extension id (Chrome: 32 letters a-p; Firefox: add-on id); repeatable")
	fs.Var(&mf.browsers, "browser", "chrome, chromium, brave, edge, vivaldi, firefox or all (default chrome); repeatable")
	fs.BoolVar(&mf.system, "system", false, "install for every user of the machine (needs root)")
	fs.StringVar(&mf.userDataDir, "user-data-dir", "", "install into this Chromium --user-data-dir instead of the browser's default profile")
}

func (mf *manifestFlags) options() (manifest.Options, error) {
	bin, err := os.Executable()
	if err != nil {
		return manifest.Options{}, err
	}
	if bin, err = filepath.EvalSymlinks(bin); err != nil {
		return manifest.Options{}, err
	}
	return manifest.Options{
		ExtensionIDs: mf.ids, Browsers: mf.browsers, System: mf.system,
		UserDataDir: mf.userDataDir, BinaryPath: bin,
	}, nil
}

func parseFlags(fs *flag.FlagSet, env Env) error {
	fs.SetOutput(env.Stderr)
	if err := fs.Parse(env.Args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	return nil
}

func runInstall(env Env) error {
	var mf manifestFlags
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	mf.register(fs)
	if err := parseFlags(fs, env); err != nil {
		return err
	}
	if len(mf.ids) == 0 {
		fmt.Fprintln(env.Stderr, "install needs --extension-id")
		return errUsage
	}
	opts, err := mf.options()
	if err != nil {
		return err
	}
	installed, err := manifest.Install(opts)
	if err != nil {
		return err
	}
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return err
	}
	// The host admits exactly the callers it was installed for; the
	// manifest's allowed_origins is the browser's check, this is ours.
	cfg, err := datadir.LoadConfig(dir)
	if err != nil {
		return err
	}
	cfg.AddOrigins(originsFor(opts)...)
	if err := datadir.SaveConfig(dir, cfg); err != nil {
		return err
	}
	for _, in := range installed {
		fmt.Fprintf(env.Stdout, "installed %s\n", in.Path)
	}
	fmt.Fprintf(env.Stdout, "data dir %s admits %s\n", dir, strings.Join(cfg.AllowedOrigins, ", "))
	return nil
}

// originsFor lists what the host sees as the caller for each id: Chrome's
// origin URL, or Firefox's bare add-on id.
func originsFor(opts manifest.Options) []string {
	var out []string
	for _, id := range opts.ExtensionIDs {
		if manifest.ValidChromeID(id) {
			out = append(out, manifest.AllowedOrigins([]string{id})...)
		} else {
			out = append(out, id)
		}
	}
	return out
}

func runUninstall(env Env) error {
	var mf manifestFlags
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	mf.register(fs)
	if err := parseFlags(fs, env); err != nil {
		return err
	}
	opts, err := mf.options()
	if err != nil {
		return err
	}
	removed, err := manifest.Uninstall(opts)
	for _, p := range removed {
		fmt.Fprintf(env.Stdout, "removed %s\n", p)
	}
	if err != nil {
		return err
	}
	if len(mf.ids) > 0 {
		dir, err := datadir.Resolve(env.Getenv)
		if err != nil {
			return err
		}
		cfg, err := datadir.LoadConfig(dir)
		if err != nil {
			return err
		}
		cfg.RemoveOrigins(originsFor(opts)...)
		if err := datadir.SaveConfig(dir, cfg); err != nil {
			return err
		}
	}
	return nil
}

func runDoctor(ctx context.Context, env Env) (bool, error) {
	var mf manifestFlags
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	mf.register(fs)
	if err := parseFlags(fs, env); err != nil {
		return false, err
	}
	opts, err := mf.options()
	if err != nil {
		return false, err
	}
	checks := manifest.Doctor(opts)
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return false, err
	}
	checks = append(checks, manifest.CheckWritableDir(dir))
	cfg, cfgErr := datadir.LoadConfig(dir)
	c := manifest.Check{Name: "config " + filepath.Join(dir, datadir.ConfigFile), OK: cfgErr == nil}
	if cfgErr != nil {
		c.Detail = cfgErr.Error()
	} else {
		c.Detail = fmt.Sprintf("admits %d origin(s): %s", len(cfg.AllowedOrigins), strings.Join(cfg.AllowedOrigins, ", "))
		for _, o := range originsFor(opts) {
			if !contains(cfg.AllowedOrigins, o) {
				c.OK, c.Detail = false, fmt.Sprintf("origin %s is not admitted; run nmhost install --extension-id", o)
			}
		}
	}
	checks = append(checks, c)
	st := manifest.Check{Name: "store " + filepath.Join(dir, "nmhost.db"), OK: true, Detail: "opens"}
	if s, err := store.Open(dir, store.Options{}); err != nil {
		st.OK, st.Detail = false, err.Error()
	} else {
		if _, err := s.ListAgents(ctx); err != nil {
			st.OK, st.Detail = false, err.Error()
		}
		s.Close()
	}
	checks = append(checks, st)
	ok := true
	for _, c := range checks {
		mark := "ok  "
		if !c.OK {
			mark, ok = "FAIL", false
		}
		fmt.Fprintf(env.Stdout, "%s %s: %s\n", mark, c.Name, c.Detail)
	}
	return ok, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
