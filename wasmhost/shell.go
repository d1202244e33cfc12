package wasmhost

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"unicode"
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

// decideShell is the shell's Decider for an agent: a command outside the
// shell's set is refused here (shell_not_allowed, in the denial log);
// every other is mediator.ShellOp put to the Authorizer.
func (ru *run) decideShell(ctx context.Context, step mediator.ShellStep) (func(error), error) {
	step.Command = mediator.Truncate(step.Command, 32)
	if _, known := mediator.ShellCommands[step.Command]; !known {
		err := mediator.DecideShell(ru.spec.SessionLevel, step).Err()
		ru.deny(ctx, mediator.Denial{AgentID: ru.spec.Agent.Profile.AgentID, Permission: string(mediator.PermShell), Code: mediator.CodeOf(err),
			Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Layer: "shell", Details: map[string]string{"command": step.Command}}})
		return nil, err
	}
	if err := outsideShown(step); err != nil {
		ru.deny(ctx, mediator.Denial{AgentID: ru.spec.Agent.Profile.AgentID, Permission: string(mediator.PermShell), Code: mediator.CodeOf(err),
			Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Layer: "shell", Details: map[string]string{"command": step.Command}}})
		return nil, err
	}
	return ru.authorize(mediator.ShellOp(ru.spec.Agent.Profile.AgentID, ru.spec.SessionLevel, step))
}

// outsideShown refuses a step that reads outside the workspace unless
// the person can be shown every outside name whole: the prompt and an
// "always" answer name the step's paths as the audit trail keeps them
// (at most mediator.MaxShellPaths, each at most 256 bytes), and a name cut
// short or left off would be read without being asked about. A control
// character in a name could make the prompt show something else.
func outsideShown(step mediator.ShellStep) error {
	if !step.ReadsOutside {
		return nil
	}
	if len(step.Paths) > mediator.MaxShellPaths {
		return mediator.Errorf(mediator.CodePathNotAllowed, "%s reads outside the workspace and names %d paths; such a command may name at most %d, so each is shown to you", step.Command, len(step.Paths), mediator.MaxShellPaths)
	}
	for _, p := range step.Paths {
		if len(p) > 256 || strings.ContainsFunc(p, unicode.IsControl) {
			return mediator.Errorf(mediator.CodePathNotAllowed, "%s reads outside the workspace through a name over 256 bytes or with a control character, which a prompt cannot show whole", step.Command)
		}
	}
	return nil
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
