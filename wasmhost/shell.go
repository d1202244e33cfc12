package wasmhost

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/internal/shell"
	"github.com/agentgate/nmhost/mediator"
)

// shellReply is what shell returns when the whole line ran: what it
// printed. A line that stops at a refusal or a failure returns the usual
// {"code","error"} instead (docs/abi.md, "shell").
type shellReply struct {
	Output string `json:"output"`
}

// shell runs a command line of the session shell in the run's workspace.
// Each command of the line is an operation of its own ("shell.cp", with
// the paths it names), decided by the run's Authorizer at the run's
// session level before it runs and told its outcome after: the same
// policy, audit trail and prompts as every other call. Nothing here
// starts a process.
func (ru *run) shell(mod api.Module, stack []uint64) ([]byte, error) {
	line, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(line) {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "shell: the command line is not UTF-8")
	}
	if ru.spec.Workspace == nil {
		// link refuses the import first; this holds if that ever changes.
		return nil, mediator.Errorf(mediator.CodePathNotAllowed, "shell: this run has no session workspace")
	}
	commands := 0
	decide := func(ctx context.Context, step mediator.ShellStep) (func(error), error) {
		// Each command after the first counts as a call of its own: a
		// line of a thousand commands is a thousand decisions in the
		// audit trail, and the call limit bounds those.
		if commands++; commands > 1 {
			if ru.calls++; ru.calls > ru.rt.cfg.MaxCallsPerRun {
				ru.cancel(errCallLimit)
				return nil, errCallLimit
			}
		}
		return ru.decideShell(ctx, step)
	}
	sh := &shell.Shell{WS: ru.spec.Workspace, Decide: decide}
	if lvl, err := mediator.ParseLevel(ru.spec.SessionLevel); err == nil && lvl == mediator.LevelHigh {
		// Only a high session may read outside its workspace, each read
		// asked of the person; the shell only ever opens files of this
		// root for reading, and it lives for this one call.
		root, err := os.OpenRoot("/")
		if err != nil {
			return nil, mediator.Errorf(mediator.CodeInternal, "shell: %v", err)
		}
		defer root.Close()
		sh.Outside = root
	}
	var out bytes.Buffer
	if err := sh.Run(ru.ctx, string(line), &out); err != nil {
		return nil, err
	}
	return json.Marshal(shellReply{Output: out.String()})
}

// decideShell is the shell's Decider for an agent: every command, one
// outside the shell's set included, is mediator.ShellOp put to the
// Authorizer, which decides, records and logs a refusal.
func (ru *run) decideShell(_ context.Context, step mediator.ShellStep) (func(error), error) {
	step.Command = mediator.Truncate(step.Command, 32)
	return ru.authorize(mediator.ShellOp(ru.spec.Agent.Profile.AgentID, ru.spec.SessionLevel, step))
}

// shellNeedsWorkspace refuses to link shell into a run with no session
// workspace: the shell works nowhere else.
func (ru *run) shellNeedsWorkspace(imports []moduleImport) *linkDenial {
	if ru.spec.Workspace != nil {
		return nil
	}
	for _, im := range imports {
		if im.module == HostModule && im.name == "shell" {
			return &linkDenial{Import: HostModule + ".shell", Permission: mediator.PermShell,
				Reason: HostModule + ".shell works in the session's workspace, and this run has none"}
		}
	}
	return nil
}
