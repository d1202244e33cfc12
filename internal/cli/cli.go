package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentgate/nmhost/internal/host"
)

// Version is the host's version, set at build time with -ldflags.
var Version = "dev"

// Env is what a command may touch of the outside world; tests replace it.
type Env struct {
	Args   []string // without the program name
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

const usage = `nmhost: a native-messaging host that runs browser agents under default-deny rules.

Usage:
  nmhost demo [--keep]                 show the host at work, with no browser
  nmhost install --extension-id ID [--browser B] [--system] [--user-data-dir DIR]
  nmhost uninstall [--extension-id ID] [--browser B] [--system] [--user-data-dir DIR]
  nmhost doctor [--extension-id ID] [--browser B] [--system] [--user-data-dir DIR]
  nmhost denials [--agent A] [--permission P] [--code C] [--since T] [--until T]
                 [--limit N] [--follow] [--json]
  nmhost run --profile PROFILE.json [--input TEXT] [--page FILE.html] [--level L]
             [--yes-to OPERATION]... MODULE.wasm
  nmhost prefs list [--agent A] [--json] | nmhost prefs revoke ID
  nmhost audit verify | nmhost audit tail [-n N] [--follow] [--json]
  nmhost serve [--port N] [--open] [--bind ADDR [--unsafe-bind]]
                                       the denial-log viewer and session gateway
  nmhost version

Browsers launch it as: nmhost chrome-extension://ID/ (Firefox: nmhost MANIFEST.json ADDON-ID).
Every file lives in $NMHOST_DATA_DIR, or the per-user data directory when it is unset.
`

// Main runs nmhost and returns its exit status.
func Main(env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if host.LooksLikeLaunch(env.Args) {
		return runHost(ctx, env)
	}
	if len(env.Args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	cmd, rest := env.Args[0], env.Args[1:]
	sub := env
	sub.Args = rest
	var err error
	switch cmd {
	case "demo":
		err = runDemo(ctx, sub)
	case "install":
		err = runInstall(sub)
	case "uninstall":
		err = runUninstall(sub)
	case "doctor":
		var ok bool
		ok, err = runDoctor(ctx, sub)
		if err == nil && !ok {
			return 1
		}
	case "denials":
		err = runDenials(ctx, sub)
	case "run":
		err = runAgent(ctx, sub)
		if errors.Is(err, errRunFailed) {
			return 1
		}
	case "prefs":
		err = runPrefs(ctx, sub)
	case "audit":
		err = runAudit(ctx, sub)
		if err == errAuditBroken {
			return 1
		}
	case "serve":
		err = runServe(ctx, sub)
	case "version", "--version":
		fmt.Fprintf(env.Stdout, "nmhost %s (protocol %d)\n", Version, host.ProtocolVersion)
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
	default:
		fmt.Fprintf(env.Stderr, "nmhost: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(env.Stderr, "nmhost %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// errUsage reports a usage error already printed by the flag package.
var errUsage = errors.New("usage")
