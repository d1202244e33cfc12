package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/agentgate/nmhost/internal/app"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/mediator"
)

// openApp opens the application core over the data directory env
// names: the one way every command reaches the data (a config that
// cannot be read keeps the most records, the most carefully; an admin
// policy that cannot be trusted stops the command).
func openApp(env Env) (*app.App, error) {
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return nil, err
	}
	return app.Open(dir, app.Options{AdminPolicyPath: adminPolicyPath(), TolerateBadConfig: true, Door: app.Door{Layer: "cli"}})
}

// runPrefsList: nmhost prefs list [--agent A] [--json]
func runPrefsList(ctx context.Context, env Env) error {
	var agent string
	var jsonOutput bool
	fs := flag.NewFlagSet("prefs list", flag.ContinueOnError)
	fs.StringVar(&agent, "agent", "", "only the agent with this id `A`")
	fs.BoolVar(&jsonOutput, "json", false, "print JSON lines")
	if _, err := parse(specFor("prefs list"), fs, env); err != nil {
		return err
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	prefs, err := core.Answers().ListPreferences(ctx, agent)
	if err != nil {
		return err
	}
	if jsonOutput {
		enc := json.NewEncoder(env.Stdout)
		for _, p := range prefs {
			enc.Encode(p)
		}
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tOPERATION\tTARGET\tANSWER\tSCOPE\tSINCE (UTC)\tENDS\tLAST USE\tMODULE")
	for _, p := range prefs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, cell(p.AgentID), cell(p.Operation), cell(p.Target), p.Answer, p.Scope,
			utc(p.CreatedAt), prefEnd(p), prefLastUse(p), modulePrefix(p.ModuleSHA256))
	}
	if len(prefs) == 0 {
		fmt.Fprintln(tw, "no remembered answers")
	}
	return tw.Flush()
}

func utc(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// prefEnd says when a remembered answer stops deciding: at its time, with
// its session, or when revoked.
func prefEnd(p mediator.Preference) string {
	switch {
	case p.ExpiresAt > 0:
		return utc(p.ExpiresAt)
	case p.SessionID != "":
		return "with session " + cell(p.SessionID)
	}
	return "when revoked"
}

func prefLastUse(p mediator.Preference) string {
	if p.LastUsed == 0 {
		return "never"
	}
	return fmt.Sprintf("%s (%d uses)", utc(p.LastUsed), p.Uses)
}

// modulePrefix is the start of the agent's code hash the answer is bound
// to: enough to tell two modules apart in a list.
func modulePrefix(sum string) string {
	if sum == "" {
		return "(no code)"
	}
	return sum[:min(12, len(sum))]
}

// runPrefsRevoke: nmhost prefs revoke ID
func runPrefsRevoke(ctx context.Context, env Env) error {
	fs := flag.NewFlagSet("prefs revoke", flag.ContinueOnError)
	args, err := parse(specFor("prefs revoke"), fs, env)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return usagef("prefs revoke", "%q is not a preference id (a number from nmhost prefs list)", args[0])
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	ok, err := core.Answers().RevokePreference(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no preference %d (nmhost prefs list shows them)", id)
	}
	fmt.Fprintf(env.Stdout, "preference %d revoked: the next such operation asks again\n", id)
	return nil
}
