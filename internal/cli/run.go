package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/host"
	"github.com/agentgate/nmhost/internal/pagefile"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

// errRunFailed makes `nmhost run` exit 1 after printing how the run ended.
var errRunFailed = errors.New("the run failed")

// runAgent: nmhost run --profile P.json [--input TEXT] [--page FILE.html]
// [--level L] [--yes-to OP]... MODULE.wasm. The agent is installed in the
// data dir's store (grants, denials and audit are real) and run under the
// same mediation as from the browser.
func runAgent(ctx context.Context, env Env) error {
	var profilePath, input, page, level string
	var yesTo multiFlag
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&profilePath, "profile", "", "the agent's profile (JSON, required)")
	fs.StringVar(&input, "input", "", "the run's input")
	fs.StringVar(&page, "page", "", "answer page.read and page.write from this HTML file")
	fs.StringVar(&level, "level", "", "session permission level: low, medium (default) or high")
	fs.Var(&yesTo, "yes-to", "answer prompts for this operation with allow-once (repeatable), e.g. clipboard.write")
	fs.SetOutput(env.Stderr)
	if err := fs.Parse(env.Args); err != nil {
		return errUsage
	}
	if profilePath == "" || fs.NArg() != 1 {
		fmt.Fprintln(env.Stderr, "usage: nmhost run --profile PROFILE.json [--input TEXT] [--page FILE.html] [--level L] [--yes-to OP]... MODULE.wasm")
		return errUsage
	}
	rawProfile, err := os.ReadFile(profilePath)
	if err != nil {
		return err
	}
	prof, err := mediator.ParseProfile(rawProfile)
	if err != nil {
		return fmt.Errorf("%s: %w", profilePath, err)
	}
	module, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	if _, err := mediator.ParseLevel(level); err != nil {
		return err
	}
	prompter, err := newCLIPrompter(env.Stdin, env.Stderr, yesTo)
	if err != nil {
		return err
	}
	var browser wasmhost.Browser
	if page != "" {
		f, err := os.Open(page)
		if err != nil {
			return err
		}
		abs, _ := filepath.Abs(page)
		p, err := pagefile.Parse(f, "file://"+abs)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", page, err)
		}
		browser = p
	}

	st, err := openStore(env)
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := host.InstallAgent(ctx, st, prof, module)
	if err != nil {
		return err
	}
	cfg, err := datadir.LoadConfig(st.Dir())
	if err != nil {
		return err
	}
	fetcher, err := newFetcher(cfg)
	if err != nil {
		return err
	}
	policy := mediator.NewPolicy(st, mediator.PolicyOptions{Prompter: prompter})
	logDenial := func(ctx context.Context, d mediator.Denial) {
		if d.Context.Layer == "" {
			d.Context.Layer = "cli"
		}
		_, _ = st.LogDenial(context.WithoutCancel(ctx), d)
	}
	fetch, err := agentfetch.New(agentfetch.Config{Store: st, Fetcher: fetcher, Authorizer: policy, LogDenial: logDenial})
	if err != nil {
		return err
	}
	rt, err := wasmhost.New(ctx, wasmhost.Config{CacheDir: filepath.Join(st.Dir(), "wasm-cache")})
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))

	res, err := rt.Run(ctx, wasmhost.RunSpec{
		Agent: rec, Module: module, Input: []byte(input), SessionLevel: level,
		Authorizer: policy, Browser: browser, LogDenial: logDenial,
		Fetch: func(ctx context.Context, r netproxy.Request) (*netproxy.Response, error) {
			return fetch.Fetch(ctx, agentfetch.Request{AgentID: prof.AgentID, SessionLevel: level, Request: r})
		},
		Events: func(e wasmhost.Event) {
			switch e.Kind {
			case "output":
				fmt.Fprint(env.Stdout, e.Text)
			case "denial":
				target := e.Denial.Context.URL
				if target == "" {
					target = e.Denial.Context.Details["operation"]
				}
				fmt.Fprintf(env.Stderr, "nmhost: denied %s (%s): %s: %s\n", e.Denial.Permission, target, e.Denial.Code, e.Denial.Context.Reason)
			}
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "nmhost: %s ran %s in %d ms: %s, %d calls, %d denials\n", prof.AgentID, shortHash(rec.ModuleSHA256), res.Millis, res.Status, res.Calls, len(res.Denials))
	if res.Code != "" {
		fmt.Fprintf(env.Stderr, "nmhost: %s: %s\n", res.Code, res.Error)
		return errRunFailed
	}
	return nil
}

func shortHash(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
