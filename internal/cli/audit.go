package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/mediator"
)

// maxTail is the most records audit tail prints at once.
const maxTail = 1000

// runAuditTail: nmhost audit tail [-n N] [--follow] [--json]
func runAuditTail(ctx context.Context, env Env) error {
	var n int
	var follow, jsonOutput bool
	fs := flag.NewFlagSet("audit tail", flag.ContinueOnError)
	fs.IntVar(&n, "n", 20, fmt.Sprintf("print the last `N` records, 1-%d", maxTail))
	fs.BoolVar(&follow, "follow", false, "keep printing new records as they are appended (Ctrl-C stops)")
	fs.BoolVar(&jsonOutput, "json", false, "print JSON lines")
	if _, err := parse(specFor("audit tail"), fs, env); err != nil {
		return err
	}
	if n < 1 || n > maxTail {
		return usagef("audit tail", "-n %d is out of range: 1-%d", n, maxTail)
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	page, err := core.Audit().ListAudit(ctx, 0, n, true)
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
		case r.Kind == mediator.AuditAggregated && r.Aggregate != nil:
			// One record for a run's calls: how many, and their bytes.
			verdict = fmt.Sprintf("allowed %dx %dB", r.Aggregate.Count, r.Aggregate.Bytes)
		case !r.Allowed:
			verdict = "denied " + string(r.Code)
		}
		fmt.Fprintf(env.Stdout, "%6d %s %-8s %-20s %-32s %-28s %s\n", r.Seq, time.UnixMilli(r.TS).UTC().Format(time.RFC3339),
			r.Kind, cell(r.Operation.AgentID), cell(r.Operation.Name+" "+r.Operation.Method), verdict, orDash(r.DecidedBy))
	}
	var last int64
	for _, r := range page.Records {
		print(r)
		last = r.Seq
	}
	if len(page.Records) == 0 && !jsonOutput {
		fmt.Fprintln(env.Stdout, "no audit records yet")
	}
	if !follow {
		return nil
	}
	following(env)
	t := newFollowTicker()
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		page, err := core.Audit().ListAudit(ctx, last, app.MaxDenialPage, false)
		if err != nil {
			return err
		}
		for _, r := range page.Records {
			print(r)
			last = r.Seq
		}
	}
}

// orDash is s escaped for the terminal (mediator.EscapeTerminal), or "-".
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return mediator.EscapeTerminal(s)
}

// plural is "1 denial", "2 denials".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
