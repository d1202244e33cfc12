package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentgate/nmhost/internal/host"
	"github.com/agentgate/nmhost/mediator"
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

// Main runs nmhost and returns its exit status: 0 done (and for --help),
// 1 failed, 2 a command line that cannot be run.
func Main(env Env) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal asks for a clean stop; a second one ends the
	// process at once, as it would without a handler.
	context.AfterFunc(ctx, stop)
	if host.LooksLikeLaunch(env.Args) {
		return runHost(ctx, env)
	}
	if len(env.Args) == 0 {
		fmt.Fprint(env.Stderr, topUsage())
		return 2
	}
	return exitCode(env, commandName(env.Args), route(ctx, env))
}

// Errors after which the command has already said everything: exit 1.
var (
	errRunFailed    = errors.New("the run failed")
	errAuditBroken  = errors.New("the audit chain is broken")
	errDoctorFailed = errors.New("a check failed")
)

func exitCode(env Env, name string, err error) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		if ue.cmd == "" {
			fmt.Fprintf(env.Stderr, "nmhost: %s\nRun 'nmhost --help' for the commands.\n", ue.msg)
		} else {
			fmt.Fprintf(env.Stderr, "nmhost %s: %s\nRun 'nmhost %s --help' for usage.\n", ue.cmd, ue.msg, ue.cmd)
		}
		return 2
	case errors.Is(err, errRunFailed), errors.Is(err, errAuditBroken), errors.Is(err, errDoctorFailed), errors.Is(err, errCheckFailed):
		return 1
	}
	// An error may quote what an agent chose (a file name, a session's
	// text): it reaches the person's terminal inert (no escape sequence,
	// carriage return or reordering), keeping the lines of the host's own
	// messages; agent-chosen names in them are quoted (%q) where they are
	// made, so a newline of theirs is already "\n".
	fmt.Fprintf(env.Stderr, "nmhost %s: %s\n", name, mediator.EscapeTerminalText(err.Error()))
	return 1
}

// commandName is the command (and subcommand) args name, for messages.
func commandName(args []string) string {
	if len(args) > 1 && groups[args[0]] != "" && !isHelpArg(args[1]) {
		return args[0] + " " + args[1]
	}
	return args[0]
}

// route runs the command env.Args names.
func route(ctx context.Context, env Env) error {
	cmd := env.Args[0]
	sub := env
	sub.Args = env.Args[1:]
	switch cmd {
	case "demo":
		return runDemo(ctx, sub)
	case "install":
		return runInstall(sub)
	case "uninstall":
		return runUninstall(sub)
	case "doctor":
		return runDoctor(ctx, sub)
	case "check":
		return runCheck(ctx, sub)
	case "denials":
		return runDenials(ctx, sub)
	case "run":
		return runAgent(ctx, sub)
	case "inspect":
		return runInspect(sub)
	case "grant":
		return runGrant(ctx, sub, true)
	case "revoke":
		return runGrant(ctx, sub, false)
	case "shell":
		return runShell(ctx, sub)
	case "prefs", "audit", "workflow", "session", "policy":
		return routeGroup(ctx, cmd, sub)
	case "serve":
		return runServe(ctx, sub)
	case "mcp":
		return runMCP(ctx, sub)
	case "export":
		return runExport(ctx, sub)
	case "version", "--version":
		if _, err := parse(specFor("version"), flag.NewFlagSet("version", flag.ContinueOnError), sub); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "nmhost %s (protocol %d)\n", Version, host.ProtocolVersion)
		return nil
	case "help", "-h", "--help", "-help":
		return runHelp(ctx, sub)
	}
	return usagef("", "unknown command %q", cmd)
}

// routeGroup runs a subcommand of prefs or audit.
func routeGroup(ctx context.Context, group string, env Env) error {
	if len(env.Args) == 0 {
		return usagef(group, "needs a subcommand: %s", subcommands(group))
	}
	if isHelpArg(env.Args[0]) {
		fmt.Fprint(env.Stdout, groupUsage(group))
		return errHelp
	}
	sub := env
	sub.Args = env.Args[1:]
	switch group + " " + env.Args[0] {
	case "prefs list":
		return runPrefsList(ctx, sub)
	case "prefs revoke":
		return runPrefsRevoke(ctx, sub)
	case "workflow run":
		return runWorkflowCmd(ctx, sub)
	case "workflow plan":
		return runWorkflowPlan(sub)
	case "session set":
		return runSessionSet(ctx, sub)
	case "session show":
		return runSessionShow(ctx, sub)
	case "session list":
		return runSessionList(ctx, sub)
	case "policy list":
		return runPolicyList(ctx, sub)
	case "audit verify":
		return runAuditVerifyCheckpoint(ctx, sub)
	case "audit tail":
		return runAuditTail(ctx, sub)
	case "audit key":
		return runAuditKey(ctx, sub)
	case "audit checkpoint":
		return runAuditCheckpoint(ctx, sub)
	case "audit prove":
		return runAuditProve(ctx, sub)
	case "audit check-proof":
		return runAuditCheckProof(ctx, sub)
	}
	return usagef(group, "unknown subcommand %q (%s)", env.Args[0], subcommands(group))
}

func subcommands(group string) string {
	out := ""
	for _, s := range specs {
		if len(s.name) > len(group)+1 && s.name[:len(group)+1] == group+" " {
			if out != "" {
				out += ", "
			}
			out += s.name[len(group)+1:]
		}
	}
	return out
}
