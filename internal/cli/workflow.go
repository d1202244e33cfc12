package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentgate/nmhost/internal/app/flows"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow"
)

// runWorkflowCmd: nmhost workflow run [--session ID] [--level L]
// [--yes-to-layers] [--json] FILE.json. The workflow runs in a session
// like every run (store.RunSession: a fresh ephemeral one without
// --session). The agents must be installed; the whole plan is decided
// before anything runs, and its tasks that need a person are asked about
// once on the terminal (or once per layer, with the "layer" approval
// setting); refused when stdin is not one, unless --yes-to-layers.
func runWorkflowCmd(ctx context.Context, env Env) error {
	var level, session, agent string
	var yes, jsonOutput bool
	fs := flag.NewFlagSet("workflow run", flag.ContinueOnError)
	fs.StringVar(&agent, "agent", "script", "a script's tool calls are made for agent `ID`")
	fs.StringVar(&level, "level", "", "the run's permission level `L`: low, medium (default) or high; never above its session's")
	fs.StringVar(&session, "session", "", "run in session `ID` (its level and workspace); default: a fresh session, removed when the run ends")
	fs.BoolVar(&yes, "yes-to-layers", false, "answer the plan's prompt and every layer prompt with allow-once (for scripts; each task is still decided and recorded)")
	fs.BoolVar(&jsonOutput, "json", false, "print each task-result and the summary as JSON lines")
	args, err := parse(specFor("workflow run"), fs, env)
	if err != nil {
		return err
	}
	if _, err := mediator.ParseLevel(level); err != nil {
		return err
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	spec, parseErr := readWorkflow(args[0], raw, agent)
	if parseErr != nil && !mediator.IsRefusal(mediator.CodeOf(parseErr)) {
		return fmt.Errorf("%s: %w", args[0], parseErr)
	}
	if spec.ID == "" {
		spec.ID = strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
		if mediator.ValidAgentID(spec.ID) != nil {
			spec.ID = "workflow"
		}
	}
	core, err := openApp(env)
	if err != nil {
		return err
	}
	defer core.Close(context.WithoutCancel(ctx))
	prompter, err := newCLIPrompter(env.Stdin, env.Stderr, nil)
	if err != nil {
		return err
	}
	m, err := newMediation(core, prompter)
	if err != nil {
		return err
	}
	policy, logDenial, fetch, cfg := m.policy, m.logDenial, m.fetch, m.cfg
	if parseErr != nil {
		// A refused graph (invalid, unsafe) is a refusal like any other:
		// in the denial log, once.
		logDenial(ctx, mediator.Denial{Code: mediator.CodeOf(parseErr), Context: mediator.DenialContext{Reason: mediator.MessageOf(parseErr),
			Details: map[string]string{"operation": "workflow run", "decidedBy": "request:" + readAs(args[0])}}})
		return fmt.Errorf("%s: %w", args[0], parseErr)
	}
	rt, err := core.Runtime(ctx)
	if err != nil {
		return err
	}
	in, err := core.Sessions().OpenRun(ctx, session, level)
	if err != nil {
		return err
	}
	defer in.Close()
	session, level, ws := in.Session, in.Level, in.Workspace
	h := core.Flows(&flows.Host{Policy: policy, Runtime: rt, Fetch: fetch, LogDenial: logDenial, SessionLevel: level, Workspace: ws, SessionID: session})
	enc := json.NewEncoder(env.Stdout)
	events := func(r workflow.TaskResult) {
		if jsonOutput {
			enc.Encode(map[string]any{"event": "task-result", "data": r})
			return
		}
		line := fmt.Sprintf("layer %d  %-20s %s", r.Layer, mediator.EscapeTerminal(r.Task), r.Status)
		if r.Error != "" {
			line += ": " + mediator.EscapeTerminal(r.Error)
		} else if v, err := json.Marshal(r.Value); err == nil {
			// JSON escapes control characters but not bidi controls.
			line += "  " + mediator.Truncate(mediator.EscapeTerminalText(string(v)), 200)
		}
		fmt.Fprintln(env.Stdout, line)
	}
	sum, err := workflow.Run(ctx, spec, h.Env(flows.Settings(cfg), &layerCLIPrompter{p: prompter, yes: yes}, events))
	if err != nil {
		return err
	}
	if jsonOutput {
		enc.Encode(map[string]any{"event": "summary", "data": sum, "sessionId": session})
	} else {
		fmt.Fprintf(env.Stderr, "nmhost: workflow %s: %s, %s, %s (session %s)\n", sum.Workflow, sum.Status, plural(sum.Layers, "layer"), plural(sum.Prompts, "prompt"), session)
	}
	if sum.Status != "ok" {
		return errRunFailed
	}
	return nil
}

// PromptPlan asks about the whole plan on the terminal, before anything
// runs: every task that needs a person, by layer. --yes-to-layers answers
// allow-once; "always" is the extension's to offer, not a script's.
func (l *layerCLIPrompter) PromptPlan(ctx context.Context, pp mediator.PlanPrompt) (mediator.Answer, error) {
	p := l.p
	fmt.Fprintf(p.out, "\nWorkflow %q, plan of %d layer(s) (%.12s), needs your confirmation for %d task(s) before anything runs:\n",
		pp.Workflow, pp.Layers, pp.Hash, len(pp.Tasks))
	for _, t := range pp.Tasks {
		op := t.Op
		target := strings.TrimSpace(op.Method + " " + op.URL)
		fmt.Fprintf(p.out, "  layer %d %s: agent %q, %s (%s) %s\n", op.Layer, mediator.EscapeTerminal(op.Task), op.AgentID, mediator.EscapeTerminal(op.Name), t.Class, mediator.EscapeTerminal(target))
	}
	if l.yes {
		fmt.Fprintf(p.out, "allowed once by --yes-to-layers\n")
		return mediator.AnswerAllowOnce, nil
	}
	if !p.interactive {
		return "", mediator.Errorf(mediator.CodeConfirmRequired, "the plan needs confirmation and stdin is not a terminal (pre-answer with --yes-to-layers)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "Allow this plan once? [o]nce, [d]eny (default): ")
	a, err := p.readAnswer(ctx)
	if err != nil || a != mediator.AnswerAllowOnce {
		return mediator.AnswerDeny, err
	}
	return a, nil
}

// layerCLIPrompter asks about a whole layer on the terminal.
type layerCLIPrompter struct {
	p   *cliPrompter
	yes bool
}

func (l *layerCLIPrompter) PromptLayer(ctx context.Context, lp mediator.LayerPrompt) (mediator.Answer, error) {
	p := l.p
	fmt.Fprintf(p.out, "\nWorkflow %q, layer %d, needs your confirmation for %d task(s):\n", lp.Workflow, lp.Layer, len(lp.Tasks))
	for _, t := range lp.Tasks {
		op := t.Op
		target := strings.TrimSpace(op.Method + " " + op.URL)
		fmt.Fprintf(p.out, "  %s: agent %q, %s (%s) %s\n", mediator.EscapeTerminal(op.Task), op.AgentID, mediator.EscapeTerminal(op.Name), t.Class, mediator.EscapeTerminal(target))
	}
	if l.yes {
		fmt.Fprintf(p.out, "allowed once by --yes-to-layers\n")
		return mediator.AnswerAllowOnce, nil
	}
	if !p.interactive {
		return "", mediator.Errorf(mediator.CodeConfirmRequired, "layer %d needs confirmation and stdin is not a terminal (pre-answer with --yes-to-layers)", lp.Layer)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "Allow this layer once? [o]nce, [d]eny (default): ")
	a, err := p.readAnswer(ctx)
	if err != nil || a != mediator.AnswerAllowOnce {
		return mediator.AnswerDeny, err
	}
	return a, nil
}
