package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agentgate/nmhost/internal/app/selfcheck"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/mediator"
)

// errCheckFailed: nmhost check printed a rule that did not fire.
var errCheckFailed = errors.New("a rule did not fire")

// runCheck is `nmhost check AGENT`: the self-check (internal/app/selfcheck)
// of an installed agent, one line per rule. The options page's self-test
// runs the same check through the host.
func runCheck(ctx context.Context, env Env) error {
	var level string
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.StringVar(&level, "level", mediator.LevelMedium, "the session `LEVEL` operations are decided at: low, medium or high")
	args, err := parse(specFor("check"), fs, env)
	if err != nil {
		return err
	}
	if _, err := mediator.ParseLevel(level); err != nil {
		return usagef("check", "%s", mediator.MessageOf(err))
	}
	agentID := args[0]
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return err
	}
	if err := datadir.CheckPrivate(dir); err != nil {
		return err
	}
	rep, err := selfcheck.Run(ctx, dir, agentID, level)
	if err != nil {
		return explainAgentErr(err, agentID)
	}
	return printCheck(env.Stdout, agentID, level, rep.Results)
}

// printCheck prints one line per rule and the summary, and fails when a
// rule did not fire.
func printCheck(w io.Writer, agentID, level string, results []selfcheck.Result) error {
	for _, r := range results {
		mark := "ok  "
		switch {
		case r.Skip != "":
			mark = "skip"
		case !r.OK:
			mark = "FAIL"
		}
		line := fmt.Sprintf("%s %-9s %s: want %s; got %s", mark, r.Class, r.Tried, r.Want, r.Got)
		if r.Skip != "" {
			line = fmt.Sprintf("%s %-9s %s: %s", mark, r.Class, r.Tried, r.Skip)
		}
		fmt.Fprintln(w, mediator.EscapeTerminal(line))
	}
	rep := selfcheck.Summarise(agentID, level, results)
	fmt.Fprintf(w, "%s: %d rules fired, %d did not, %d skipped (level %s; nothing of yours was written)\n",
		mediator.EscapeTerminal(agentID), rep.Fired, rep.Failed, rep.Skipped, level)
	if !rep.Pass {
		return errCheckFailed
	}
	return nil
}
