package wasmhost

import (
	"context"
	"encoding/json"

	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/shell"
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
// policy, audit trail and prompts as every other call. Only a high
// session's program (RunSpec.Programs) starts a process, in the sandbox.
func (ru *run) shell(mod api.Module, stack []uint64) ([]byte, error) {
	line, err := arg(mod, stack[0], stack[1])
	if err != nil {
		return nil, err
	}
	out, err := shell.Agent{AgentID: ru.spec.Agent.Profile.AgentID, Level: ru.spec.SessionLevel, Session: ru.spec.SessionID, WS: ru.spec.Workspace,
		Auth: runAuthorizer{ru}, Refused: ru.deny, Programs: ru.spec.Programs, More: func() error {
			if ru.calls++; ru.calls > ru.rt.cfg.MaxCallsPerRun {
				ru.cancel(errCallLimit)
				return errCallLimit
			}
			return nil
		}}.Run(ru.ctx, string(line))
	if err != nil {
		return nil, err
	}
	return json.Marshal(shellReply{Output: out})
}

// runAuthorizer decides for the run: its agent, its level, its denial
// events (run.authorize).
type runAuthorizer struct{ ru *run }

func (a runAuthorizer) Authorize(_ context.Context, op mediator.Operation) (func(error), error) {
	return a.ru.authorize(op)
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
