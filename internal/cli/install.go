package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentgate/nmhost/internal/datadir"
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

// register adds the flags install, uninstall and doctor share, each
// described for what that command does with it.
func (mf *manifestFlags) register(fs *flag.FlagSet, cmd string) {
	ids := map[string]string{
		"install":   "the `ID` of the extension to admit: a Chrome id (32 letters a-p) or a Firefox add-on id; repeatable",
		"uninstall": "no longer admit the extension with this `ID` in the data dir's config; repeatable",
		"doctor":    "check that the extension with this `ID` is admitted; repeatable",
	}[cmd]
	verb := map[string]string{"install": "write", "uninstall": "remove", "doctor": "check"}[cmd]
	fs.Var(&mf.ids, "extension-id", ids)
	fs.Var(&mf.browsers, "browser", "the browser `B`: chrome, chromium, brave, edge, vivaldi, firefox or all (default chrome); repeatable")
	fs.BoolVar(&mf.system, "system", false, verb+" the manifests for every user of the machine (needs root)")
	fs.StringVar(&mf.userDataDir, "user-data-dir", "", verb+" the manifest in this Chromium --user-data-dir profile `DIR` instead of the browser's default one")
}

// checkIDs refuses an origin where an id belongs: the manifest module
// would refuse it too, but only the command line knows the flag to name.
func (mf *manifestFlags) checkIDs(cmd string) error {
	for _, id := range mf.ids {
		if rest, ok := strings.CutPrefix(id, "chrome-extension://"); ok {
			bare := strings.TrimSuffix(rest, "/")
			if !manifest.ValidChromeID(bare) {
				bare = "ID"
			}
			return usagef(cmd, "--extension-id wants the extension's 32-letter id, not its origin: --extension-id %s", bare)
		}
	}
	return nil
}

func (mf *manifestFlags) options(env Env) (manifest.Options, error) {
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
		BuildCache: goBuildCache(env), TempDirs: manifest.DefaultTempDirs(),
	}, nil
}

// goBuildCache is Go's build cache, where `go run` leaves the binary it
// runs: $GOCACHE, or what `go env GOCACHE` says when Go is installed, or
// "" (a path element named go-build is recognised without it).
func goBuildCache(env Env) string {
	if d := env.Getenv("GOCACHE"); d != "" && d != "off" {
		return d
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, goBin, "env", "GOCACHE").Output()
	if err != nil {
		return ""
	}
	if d := strings.TrimSpace(string(out)); d != "off" {
		return d
	}
	return ""
}

func runInstall(env Env) error {
	var mf manifestFlags
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	mf.register(fs, "install")
	if _, err := parse(specFor("install"), fs, env); err != nil {
		return err
	}
	if len(mf.ids) == 0 {
		return usagef("install", "needs --extension-id ID (your extension's id: 32 letters a-p, shown on chrome://extensions)")
	}
	if err := mf.checkIDs("install"); err != nil {
		return err
	}
	opts, err := mf.options(env)
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
	mf.register(fs, "uninstall")
	if _, err := parse(specFor("uninstall"), fs, env); err != nil {
		return err
	}
	if err := mf.checkIDs("uninstall"); err != nil {
		return err
	}
	opts, err := mf.options(env)
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
	if len(removed) == 0 {
		fmt.Fprintf(env.Stdout, "nothing to remove: no manifest nmhost wrote at %s\n", strings.Join(manifestPaths(opts), ", "))
	}
	if len(mf.ids) == 0 {
		return nil
	}
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return err
	}
	cfg, err := datadir.LoadConfig(dir)
	if err != nil {
		return err
	}
	origins := originsFor(opts)
	var gone []string
	for _, o := range origins {
		if slices.Contains(cfg.AllowedOrigins, o) {
			gone = append(gone, o)
		}
	}
	if len(gone) == 0 {
		fmt.Fprintf(env.Stdout, "data dir %s did not admit %s: nothing to change\n", dir, strings.Join(origins, ", "))
		return nil
	}
	cfg.RemoveOrigins(origins...)
	if err := datadir.SaveConfig(dir, cfg); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "data dir %s no longer admits %s\n", dir, strings.Join(gone, ", "))
	return nil
}

// manifestPaths lists where the browsers in opts look for the manifest.
func manifestPaths(opts manifest.Options) []string {
	browsers := opts.Browsers
	if len(browsers) == 0 {
		browsers = []string{manifest.Chrome}
	}
	if slices.Contains(browsers, manifest.All) {
		browsers = manifest.Browsers
	}
	var out []string
	for _, b := range browsers {
		if p, err := manifest.ManifestPath(opts, b); err == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
