package shell

import (
	"bytes"
	"context"
	"os"
	"unicode/utf8"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// Agent is what an agent's shell call runs with: whose call it is, the
// run's session level and workspace, and the one Authorizer that decides
// every command. A module's shell import and a Python agent's shell
// function both run through it, so they cannot differ.
type Agent struct {
	AgentID string
	Level   string
	// Session is the run's session, so an answer "for this session" to
	// one of its commands' prompts is bound to it; "" offers none.
	Session string
	WS      *workspace.Workspace
	Auth    mediator.Authorizer
	// More, when set, is asked before each command after a line's first
	// and may refuse it: a line of a thousand commands is a thousand
	// decisions in the audit trail, and the run's call limit bounds those.
	More func() error
	// Refused records a line, or a command of it, the shell refused
	// before the Authorizer heard of it (Undecided: syntax outside the
	// set, a pattern it will not expand), so every refusal is on record.
	Refused func(ctx context.Context, d mediator.Denial)
	// Programs runs a command that is not built in as a program in the
	// sandbox, at a high session only; nil runs none.
	Programs *Programs
}

// Run runs line for the agent and returns what it printed. Each command is
// mediator.ShellOp put to Auth before it runs and told its outcome after;
// a refusal or failure stops the line and is returned with its code. Only
// a high session gets an outside root (os.Root at "/", used only to open
// files for reading, for this one call); the policy asks the person about
// each outside read.
func (a Agent) Run(ctx context.Context, line string) (string, error) {
	if !utf8.ValidString(line) {
		return "", mediator.Errorf(mediator.CodeBadRequest, "shell: the command line is not UTF-8")
	}
	if a.WS == nil || a.Auth == nil {
		return "", mediator.Errorf(mediator.CodePathNotAllowed, "shell: this run has no session workspace")
	}
	commands := 0
	sh := &Shell{WS: a.WS, Decide: func(_ context.Context, step mediator.ShellStep) (func(error), error) {
		if commands++; commands > 1 && a.More != nil {
			if err := a.More(); err != nil {
				return nil, err
			}
		}
		step.Command = mediator.Truncate(step.Command, 32)
		op := mediator.ShellOp(a.AgentID, a.Level, step)
		op.SessionID = a.Session
		return a.Auth.Authorize(ctx, op)
	}}
	if lvl, err := mediator.ParseLevel(a.Level); err == nil && lvl == mediator.LevelHigh {
		root, err := os.OpenRoot("/")
		if err != nil {
			return "", mediator.Errorf(mediator.CodeInternal, "shell: %v", err)
		}
		defer root.Close()
		sh.Outside = root
		sh.Programs = a.Programs
	}
	var out bytes.Buffer
	if err := sh.Run(ctx, line, &out); err != nil {
		if Undecided(err) && a.Refused != nil {
			a.Refused(ctx, mediator.Denial{AgentID: a.AgentID, Permission: string(mediator.PermShell), Code: mediator.CodeOf(err),
				Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Layer: "shell", Details: map[string]string{"operation": "shell"}}})
			return "", mediator.Recorded(err)
		}
		return "", err
	}
	return out.String(), nil
}
