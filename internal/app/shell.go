package app

import (
	"context"
	"fmt"
	"os"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/shell"
)

// PersonShell is a person's own session shell (nmhost shell) over
// session's workspace at the session's level. Each command is decided
// by the session matrix under the administrator's rules, the same rules
// an agent's shell is decided under, and recorded (audit trail; a
// refusal in the denial log) before it runs. names escapes the names
// the shell prints. close releases the workspace.
func (a *App) PersonShell(ctx context.Context, session string, names func(string) string) (sh *shell.Shell, level string, close func(), err error) {
	set, err := a.st.SessionSettings(ctx, session)
	if err != nil {
		return nil, "", nil, err
	}
	level = set.PermissionLevel
	admin := a.Admin()
	// A session above the administrator's maximum is refused whole, as
	// a run in it is: nothing is opened for it.
	if err := admin.RefuseLevel(level); err != nil {
		return nil, "", nil, a.refusedSession(ctx, session, err)
	}
	ws, err := a.st.OpenWorkspace(session)
	if err != nil {
		return nil, "", nil, err
	}
	sh = &shell.Shell{WS: ws, Names: names, Decide: shell.Deciding(
		func(step mediator.ShellStep) mediator.Decision { return admin.DecidePersonShell(level, step) },
		a.recordShell(session, level))}
	close = func() { ws.Close() }
	if level == mediator.LevelHigh {
		// Only a high session reads outside its workspace, and then
		// through an os.Root too.
		if sh.Outside, err = os.OpenRoot("/"); err != nil {
			ws.Close()
			return nil, "", nil, fmt.Errorf("shell: %w", err)
		}
		close = func() { sh.Outside.Close(); ws.Close() }
		// And only a high session runs programs of the system, in the
		// sandbox, which hides the host's data directory. The person's
		// shell has no allowedHosts: its programs have no network.
		sh.Programs = &shell.Programs{Hide: []string{a.st.Dir()}}
	}
	return sh, level, close, nil
}

// recordShell appends each decision of a person's shell to the audit
// trail and each refusal to the denial log: a person's shell is decided
// and recorded like an agent's.
func (a *App) recordShell(session, level string) func(context.Context, mediator.ShellStep, mediator.Decision) error {
	return func(ctx context.Context, step mediator.ShellStep, d mediator.Decision) error {
		step.Command = mediator.Truncate(step.Command, 32)
		op := mediator.ShellOp("", level, step) // with the paths it names
		by := "level:" + level
		if d.Code == mediator.CodeAdminPolicy {
			by = "admin"
		}
		rec, err := a.st.AppendAudit(ctx, mediator.AuditEntry{Kind: mediator.AuditDecision, Operation: op, Allowed: d.Allowed,
			Code: d.Code, DecidedBy: by, Reason: d.Reason})
		if err != nil {
			return err
		}
		if !d.Allowed {
			// The denial points at the decision's record: one record per
			// decision.
			a.LogDenial(ctx, a.layer, mediator.Denial{AgentID: "shell", Permission: "shell", Code: d.Code, AuditSeq: rec.Seq,
				Context: mediator.DenialContext{Reason: d.Reason, Details: map[string]string{"session": session, "command": step.Command}}})
		}
		return nil
	}
}
