package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// errAuditBroken makes `nmhost audit verify` exit non-zero after it has
// printed what it found.
var errAuditBroken = errors.New("the audit chain is broken")

// openStore opens the store in the data directory env names: the one way
// every command that reads or writes records opens it.
func openStore(env Env) (*store.Store, error) {
	dir, err := datadir.Resolve(env.Getenv)
	if err != nil {
		return nil, err
	}
	return store.Open(dir, store.Options{})
}

// runPrefs: nmhost prefs list [--agent A] [--json] | nmhost prefs revoke ID
func runPrefs(ctx context.Context, env Env) error {
	if len(env.Args) == 0 {
		fmt.Fprintln(env.Stderr, "usage: nmhost prefs list [--agent A] [--json] | nmhost prefs revoke ID")
		return errUsage
	}
	sub := env
	sub.Args = env.Args[1:]
	switch env.Args[0] {
	case "list":
		var agent string
		var jsonOutput bool
		fs := flag.NewFlagSet("prefs list", flag.ContinueOnError)
		fs.StringVar(&agent, "agent", "", "only this agent")
		fs.BoolVar(&jsonOutput, "json", false, "print JSON lines")
		if err := parseFlags(fs, sub); err != nil {
			return err
		}
		st, err := openStore(env)
		if err != nil {
			return err
		}
		defer st.Close()
		prefs, err := st.ListPreferences(ctx, agent)
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
		fmt.Fprintln(tw, "ID\tAGENT\tOPERATION\tTARGET\tANSWER\tSINCE")
		for _, p := range prefs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.AgentID, p.Operation, orDash(p.Target), p.Answer,
				time.UnixMilli(p.CreatedAt).UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	case "revoke":
		if len(sub.Args) != 1 {
			fmt.Fprintln(env.Stderr, "usage: nmhost prefs revoke ID (from nmhost prefs list)")
			return errUsage
		}
		id, err := strconv.ParseInt(sub.Args[0], 10, 64)
		if err != nil || id <= 0 {
			return fmt.Errorf("%q is not a preference id", sub.Args[0])
		}
		st, err := openStore(env)
		if err != nil {
			return err
		}
		defer st.Close()
		ok, err := st.RevokePreference(ctx, id)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("no preference %d", id)
		}
		fmt.Fprintf(env.Stdout, "preference %d revoked: the next such operation asks again\n", id)
		return nil
	}
	fmt.Fprintf(env.Stderr, "nmhost prefs: unknown subcommand %q (list, revoke)\n", env.Args[0])
	return errUsage
}

// runAudit: nmhost audit verify | nmhost audit tail [-n N] [--follow] [--json]
func runAudit(ctx context.Context, env Env) error {
	if len(env.Args) == 0 {
		fmt.Fprintln(env.Stderr, "usage: nmhost audit verify | nmhost audit tail [-n N] [--follow] [--json]")
		return errUsage
	}
	sub := env
	sub.Args = env.Args[1:]
	switch env.Args[0] {
	case "verify":
		st, err := openStore(env)
		if err != nil {
			return err
		}
		defer st.Close()
		rep, err := st.VerifyAudit(ctx)
		if err != nil {
			return err
		}
		if !rep.OK {
			fmt.Fprintf(env.Stdout, "BROKEN at record %d: %s\n%d records before it are intact.\n", rep.BadSeq, rep.Problem, rep.Records)
			return errAuditBroken
		}
		fmt.Fprintf(env.Stdout, "ok: %d records, chain intact; last hash %s\n", rep.Records, rep.LastHash)
		return nil
	case "tail":
		var n int
		var follow, jsonOutput bool
		fs := flag.NewFlagSet("audit tail", flag.ContinueOnError)
		fs.IntVar(&n, "n", 20, "print the last N records, 1-1000")
		fs.BoolVar(&follow, "follow", false, "keep printing new records as they are appended")
		fs.BoolVar(&jsonOutput, "json", false, "print JSON lines")
		if err := parseFlags(fs, sub); err != nil {
			return err
		}
		st, err := openStore(env)
		if err != nil {
			return err
		}
		defer st.Close()
		page, err := st.ListAudit(ctx, 0, n, true)
		if err != nil {
			return err
		}
		print := func(r mediator.AuditRecord) {
			if jsonOutput {
				b, _ := json.Marshal(r)
				fmt.Fprintf(env.Stdout, "%s\n", b)
				return
			}
			verdict := "allowed"
			switch {
			case r.Kind == mediator.AuditExecuted && r.Code == "":
				verdict = "done"
			case r.Kind == mediator.AuditExecuted:
				verdict = "failed " + string(r.Code)
			case !r.Allowed:
				verdict = "denied " + string(r.Code)
			}
			fmt.Fprintf(env.Stdout, "%6d %s %-8s %-20s %-32s %-28s %s\n", r.Seq, time.UnixMilli(r.TS).UTC().Format(time.RFC3339),
				r.Kind, r.Operation.AgentID, r.Operation.Name+" "+r.Operation.Method, verdict, orDash(r.DecidedBy))
		}
		var last int64
		for _, r := range page.Records {
			print(r)
			last = r.Seq
		}
		for follow {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(followInterval):
			}
			page, err := st.ListAudit(ctx, last, store.MaxDenialPage, false)
			if err != nil {
				return err
			}
			for _, r := range page.Records {
				print(r)
				last = r.Seq
			}
		}
		return nil
	}
	fmt.Fprintf(env.Stderr, "nmhost audit: unknown subcommand %q (verify, tail)\n", env.Args[0])
	return errUsage
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
