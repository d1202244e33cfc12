package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/agentgate/nmhost/internal/app/export"
	"github.com/agentgate/nmhost/mediator"
)

// runExport: nmhost export --otlp-endpoint URL [--follow]. The exporter
// is its own package, imported here only: host mode never links it.
func runExport(ctx context.Context, env Env) error {
	var (
		endpoint       string
		follow         bool
		unsafeInsecure bool
		retryFor       time.Duration
	)
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.StringVar(&endpoint, "otlp-endpoint", "", "the collector's OTLP/HTTP `URL`; without a path, /v1/logs is added (required)")
	fs.BoolVar(&follow, "follow", false, "keep exporting records as they are made, by any host process (Ctrl-C stops)")
	fs.BoolVar(&unsafeInsecure, "unsafe-insecure", false, "allow plain http to a host that is not a loopback address: every decision crosses the network unencrypted")
	fs.DurationVar(&retryFor, "retry-for", export.DefaultRetryFor, "give up on an unreachable collector after `D` of retries (without --follow; --follow retries for ever)")
	if _, err := parse(specFor("export"), fs, env); err != nil {
		return err
	}
	if endpoint == "" {
		return usagef("export", "needs --otlp-endpoint URL")
	}
	u, err := export.ParseEndpoint(endpoint, unsafeInsecure)
	if err != nil {
		return usagef("export", "--otlp-endpoint %s", mediator.EscapeTerminal(err.Error()))
	}
	if retryFor <= 0 {
		return usagef("export", "--retry-for %s must be positive", retryFor)
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	o := export.Options{Endpoint: u, Follow: follow, RetryFor: retryFor, Version: Version,
		Notify:    func(msg string) { fmt.Fprintf(env.Stderr, "nmhost export: %s\n", mediator.EscapeTerminal(msg)) },
		Following: func() { following(env) }}
	res, err := export.Run(ctx, core.Export(), o)
	fmt.Fprintf(env.Stdout, "exported %d audit records, %d denials, %d checkpoints in %d requests to %s; acknowledged through record %d, denial %d\n",
		res.Records, res.Denials, res.Checkpoints, res.Batches, u, res.Cursor.AuditSeq, res.Cursor.DenialID)
	return err
}
