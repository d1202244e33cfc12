package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/app/runs"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/pagefile"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy/agentfetch"
	"github.com/agentgate/nmhost/wasmhost"
)

// runAgent: nmhost run --profile P.json [--input TEXT] [--page FILE.html]
// [--level L] [--yes-to OP]... MODULE.wasm. The agent is installed in the
// data dir's store (grants, denials and audit are real) and run under the
// same mediation as from the browser.
func runAgent(ctx context.Context, env Env) error {
	var profilePath, input, page, level string
	var yesTo multiFlag
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&profilePath, "profile", "", "the agent's profile, a JSON file `P.json` (required), e.g. examples/agents/fetcher/profile.json")
	fs.StringVar(&input, "input", "", "the `TEXT` the agent gets as its input")
	fs.StringVar(&page, "page", "", "answer page.read and page.write from the HTML file `FILE.html`")
	fs.StringVar(&level, "level", "", "the run's permission level `L`: low, medium (default) or high; never above its session's")
	var session string
	fs.StringVar(&session, "session", "", "run in session `ID` (its level and workspace); default: a fresh session, removed when the run ends")
	fs.Var(&yesTo, "yes-to", "answer prompts for this operation `OP` with allow-once (repeatable), e.g. clipboard.write")
	args, err := parse(specFor("run"), fs, env)
	if err != nil {
		return err
	}
	if profilePath == "" {
		return usagef("run", "--profile is required: the agent's profile, a JSON file such as examples/agents/fetcher/profile.json")
	}
	modulePath := args[0]
	prof, err := readProfile(profilePath)
	if err != nil {
		return err
	}
	if prof.IsPython() {
		return pythonRunsInTheBrowser(prof, profilePath, modulePath)
	}
	module, err := readModule(modulePath)
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

	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	m, err := newMediation(core, prompter)
	if err != nil {
		return err
	}
	rec, err := install(ctx, env, core, prof, module, modulePath)
	if err != nil {
		return err
	}
	// The core's runtime, with the data dir's bounds (maxGuestMemory) as
	// in host mode and the viewer.
	rt, err := core.Runtime(ctx)
	if err != nil {
		return err
	}

	terminal := writesToTerminal(env.Stdout)
	// The same run as from the browser (internal/app/runs): the session, the
	// durability (log records trail their calls; the run reports once
	// they are on disk) and the records, whoever asks.
	deps := core.Runs(runs.Deps{Runtime: rt, Authorizer: m.policy, Fetch: m.fetch, LogDenial: m.logDenial})
	out, err := deps.Run(ctx, runs.Request{AgentID: prof.AgentID, Input: input, SessionID: session, Level: level, Module: module, Browser: browser,
		Events: func(e wasmhost.Event) {
			switch {
			case e.Kind == "output" && terminal:
				// The agent's output is its text; on a terminal, its lines
				// stay and its escape sequences are shown, not obeyed.
				fmt.Fprint(env.Stdout, mediator.EscapeTerminalText(e.Text))
			case e.Kind == "output":
				fmt.Fprint(env.Stdout, e.Text)
			case e.Kind == "denial" && e.Denial.Context.Layer != "link":
				// A link-time refusal ends the run; the closing line says it once.
				target := denialTarget(*e.Denial)
				fmt.Fprintf(env.Stderr, "nmhost: denied %s (%s): %s: %s\n", mediator.EscapeTerminal(e.Denial.Permission), orDash(target), e.Denial.Code,
					mediator.EscapeTerminal(e.Denial.Context.Reason))
			}
		},
	})
	if err != nil {
		return err
	}
	res, session := out.Result, out.SessionID
	status, msg := res.Status, res.Error
	for _, d := range res.Denials {
		if d.Context.Layer != "link" {
			continue
		}
		if fix := linkFix(prof, profilePath, mediator.Permission(d.Permission)); fix != "" && d.Code == mediator.CodeImportNotGranted {
			msg += "; " + fix
		}
	}
	fmt.Fprintf(env.Stderr, "nmhost: %s ran %s in %d ms: %s, %s, %s (session %s)\n", prof.AgentID, shortHash(rec.ModuleSHA256), res.Millis, status,
		plural(res.Calls, "call"), plural(len(res.Denials), "denial"), session)
	if page == "" && (holds(rec, mediator.PermPageRead) || holds(rec, mediator.PermPageWrite)) {
		fmt.Fprintf(env.Stderr, "nmhost: no --page was given, so the agent's page calls were answered no_browser; --page FILE.html answers them from an HTML file\n")
	}
	if res.Code == "" {
		return nil
	}
	fmt.Fprintf(env.Stderr, "nmhost: %s: %s\n", status, msg)
	return errRunFailed
}

// install installs the agent as the run's first step and says on stderr
// what the user should know: a revocation kept, or, when the profile or
// module changed, what was granted again although they had revoked it.
func install(ctx context.Context, env Env, core *app.App, prof mediator.Profile, module []byte, modulePath string) (mediator.AgentRecord, error) {
	before, err := core.Agents().Revocations(ctx, prof.AgentID)
	if err != nil {
		return mediator.AgentRecord{}, err
	}
	rec, err := core.Install(ctx, prof, module)
	if err != nil {
		return mediator.AgentRecord{}, err
	}
	var regranted, kept []string
	for _, p := range before {
		if holds(rec, p) {
			regranted = append(regranted, string(p))
		} else if prof.Requires(p) {
			kept = append(kept, string(p))
		}
	}
	id := prof.AgentID
	if len(regranted) > 0 {
		fmt.Fprintf(env.Stderr, "nmhost: %s: its profile or module (%s) changed, so installing it granted again what you had revoked: %s (take it back: nmhost revoke %s PERMISSION)\n",
			id, modulePath, strings.Join(regranted, ", "), id)
	}
	if len(kept) > 0 {
		fmt.Fprintf(env.Stderr, "nmhost: %s: you revoked %s; it stays revoked (give it back: nmhost grant %s %s)\n",
			id, strings.Join(kept, ", "), id, kept[0])
	}
	return rec, nil
}

func holds(rec mediator.AgentRecord, p mediator.Permission) bool {
	return slices.ContainsFunc(rec.Grants, func(g mediator.Grant) bool { return g.Permission == p })
}

func shortHash(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// pythonRunsInTheBrowser is what `nmhost run` says of a Python agent:
// Pyodide lives in the extension, so that is where the agent runs, and
// this is how to get it there and run it.
func pythonRunsInTheBrowser(prof mediator.Profile, profilePath, sourcePath string) error {
	return fmt.Errorf(`%s is a Python agent (runtime "python"): Python agents run in the browser, in the extension's sandbox where Pyodide lives, not in nmhost run. `+
		`To run it: install it with its source (the install-agent message, "module" = the text of %s; the extension installs the bundled ones from examples/agents/python itself), `+
		`then open the extension's options page (right-click the agentgate icon, Options), find %s under "Python agents" and click Run, `+
		`or click the agentgate icon on the page it should read, pick %s and click Run. `+
		`nmhost inspect %s shows the permission set it needs; every call it makes is decided by this host as for a WebAssembly agent`,
		prof.AgentID, sourcePath, prof.AgentID, prof.AgentID, sourcePath)
}

// mediation is what the commands that run agents without a browser share:
// the core's policy asking on the terminal, the denial log (layer "cli")
// and the mediated fetch configured from the data dir.
type mediation struct {
	cfg       datadir.Config
	policy    *mediator.Policy
	logDenial func(ctx context.Context, d mediator.Denial)
	fetch     *agentfetch.Service
}

func newMediation(core *app.App, prompter mediator.Prompter) (*mediation, error) {
	// A run needs its config: an unreadable one stops it, rather than
	// run without the bounds it sets.
	if err := core.ConfigErr(); err != nil {
		return nil, err
	}
	m := &mediation{cfg: core.Config(), policy: core.Policy(mediator.PolicyOptions{Prompter: prompter})}
	m.logDenial = func(ctx context.Context, d mediator.Denial) { core.LogDenial(ctx, "cli", d) }
	var err error
	m.fetch, err = core.FetchService(m.policy, m.logDenial)
	return m, err
}
