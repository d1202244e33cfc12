package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/shell"
)

// runSessionSet: nmhost session set ID --level L. It creates the session
// (medium unless --level says otherwise) or changes its level, through the
// store the viewer's PUT /api/sessions/:id/settings uses.
func runSessionSet(ctx context.Context, env Env) error {
	var level string
	fs := flag.NewFlagSet("session set", flag.ContinueOnError)
	fs.StringVar(&level, "level", "", "the session's permission level `L`: low, medium or high")
	args, err := parse(specFor("session set"), fs, env)
	if err != nil {
		return err
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	set, err := core.SetSessionLevel(ctx, args[0], level)
	if err != nil {
		return err
	}
	return printSession(env.Stdout, args[0], set)
}

// runSessionShow: nmhost session show ID.
func runSessionShow(ctx context.Context, env Env) error {
	args, err := parse(specFor("session show"), flag.NewFlagSet("session show", flag.ContinueOnError), env)
	if err != nil {
		return err
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	set, err := core.Sessions().SessionSettings(ctx, args[0])
	if err != nil {
		return err
	}
	return printSession(env.Stdout, args[0], set)
}

// runSessionList: nmhost session list [--json]. The sessions of the
// store PUT /api/sessions/:id/settings and the extension's set-session
// write, the most recently changed first.
func runSessionList(ctx context.Context, env Env) error {
	var jsonOutput bool
	fs := flag.NewFlagSet("session list", flag.ContinueOnError)
	fs.BoolVar(&jsonOutput, "json", false, "print one JSON object per session")
	if _, err := parse(specFor("session list"), fs, env); err != nil {
		return err
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	list, err := core.Sessions().ListSessions(ctx)
	if err != nil {
		return err
	}
	if jsonOutput {
		enc := json.NewEncoder(env.Stdout)
		for _, si := range list {
			if err := enc.Encode(si); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tLEVEL\tCREATED\tUPDATED\tWORKSPACE")
	ts := func(ms int64) string { return time.UnixMilli(ms).Local().Format("2006-01-02 15:04:05") }
	for _, si := range list {
		// An id holds no control or format character
		// (mediator.ValidSessionID), but one stored before that rule
		// may: every cell is escaped.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mediator.EscapeTerminal(si.ID), mediator.EscapeTerminal(si.Settings.PermissionLevel),
			ts(si.CreatedAt), ts(si.UpdatedAt), mediator.EscapeTerminal(si.Settings.Workspace.RootDir))
	}
	return tw.Flush()
}

func printSession(w io.Writer, id string, set mediator.SessionSettings) error {
	_, err := fmt.Fprintf(w, "session %s\n  level      %s\n  workspace  %s\n", mediator.EscapeTerminal(id), set.PermissionLevel, mediator.EscapeTerminal(set.Workspace.RootDir))
	return err
}

// runShell: nmhost shell --session ID [-c COMMAND]. The session shell at
// the session's level, over its workspace: one command with -c (its
// output on stdout; a refusal's code on stderr and exit 1), otherwise a
// line at a time from stdin. Every command is decided and recorded.
func runShell(ctx context.Context, env Env) error {
	var session, command string
	fs := flag.NewFlagSet("shell", flag.ContinueOnError)
	fs.StringVar(&session, "session", "", "the session `ID` whose workspace and level the shell has (required)")
	fs.StringVar(&command, "c", "", "run this one `COMMAND` and exit")
	if _, err := parse(specFor("shell"), fs, env); err != nil {
		return err
	}
	if session == "" {
		return usagef("shell", "--session is required: the session whose workspace and level the shell has")
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	// The workspace's names were chosen by agents: they are printed
	// escaped (mediator.EscapeTerminal), always, so "ls | wc -l" counts
	// names and a name can never fake a line. A file's contents are its
	// bytes, except on a terminal (shellOutput). Each command is decided
	// by the core, under the administrator's rules, and recorded.
	sh, level, closeShell, err := core.PersonShell(ctx, session, mediator.EscapeTerminal)
	if err != nil {
		return err
	}
	defer closeShell()
	terminal := writesToTerminal(env.Stdout)
	if command != "" {
		if err := shellOutput(ctx, sh, command, env.Stdout, terminal); err != nil {
			fmt.Fprintf(env.Stderr, "nmhost shell: %s: %s\n", mediator.CodeOf(err), mediator.EscapeTerminal(mediator.MessageOf(err)))
			return errRunFailed
		}
		return nil
	}
	interactive := isTerminal(env.Stdin)
	in := bufio.NewScanner(env.Stdin)
	in.Buffer(make([]byte, 4096), shell.MaxCommandBytes+1)
	failed := false
	for {
		if interactive {
			fmt.Fprintf(env.Stderr, "%s (%s)$ ", session, level)
		}
		if !in.Scan() {
			break
		}
		line := strings.TrimSpace(in.Text())
		if line == "" || line == "exit" {
			if line == "exit" {
				break
			}
			continue
		}
		if err := shellOutput(ctx, sh, line, env.Stdout, terminal); err != nil {
			fmt.Fprintf(env.Stderr, "nmhost shell: %s: %s\n", mediator.CodeOf(err), mediator.EscapeTerminal(mediator.MessageOf(err)))
			failed = true
		}
	}
	if failed && !interactive {
		return errRunFailed
	}
	return nil
}

// shellOutput runs one command line of the person's shell and writes
// what it printed to out. To a terminal, the output (a file's contents
// from cat, head, tail, grep) goes through mediator.EscapeTerminalText:
// its lines and tabs stay, but no escape sequence, carriage return or
// bidi control of a file an agent wrote reaches the terminal. To a pipe
// or a file, the contents are the file's bytes, so "cat f > copy" copies
// f. The names in it are escaped already (Shell.Names), and
// EscapeTerminalText leaves escaped names as they are.
func shellOutput(ctx context.Context, sh *shell.Shell, line string, out io.Writer, terminal bool) error {
	if !terminal {
		return sh.Run(ctx, line, out)
	}
	var buf bytes.Buffer
	err := sh.Run(ctx, line, &buf)
	if _, werr := io.WriteString(out, mediator.EscapeTerminalText(buf.String())); err == nil {
		err = werr
	}
	return err
}

// writesToTerminal reports whether w is a terminal.
func writesToTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
