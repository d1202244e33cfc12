package wasmhost

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/agentgate/nmhost/workspace"

	"github.com/agentgate/nmhost/mediator"
)

// runSet is the permission set a run links under and what follows from it.
type runSet struct {
	choice mediator.SetChoice
	rule   mediator.PermissionSetRule
	// pure: every import is one minimal links, so the module runs under
	// minimal with the shorter default timeout.
	pure bool
}

// chooseSet decides the set of a run. A profile installed with a set (all
// of them since install infers one) carries it; an older profile without
// one is inferred from the module here, once per module. A pure module
// runs under minimal whatever the profile says: its imports cannot use
// more, and saying so keeps the audit trail honest about what it could do.
func (ru *run) chooseSet(sha string, imports []moduleImport) runSet {
	p := ru.spec.Agent.Profile
	var inf mediator.SetInference
	if p.PermissionSet == "" {
		inf = inferCached(sha, ru.spec.Module)
	}
	rs := runSet{choice: mediator.DeterminePermissionSet(p, inf), pure: pureImports(imports)}
	if rs.pure {
		rs.choice.Set = mediator.SetMinimal
	}
	rs.rule, _ = mediator.SetRule(rs.choice.Set)
	return rs
}

// timeout is the run's executionTimeout: pure work that kept the default
// gets the shorter pure default instead.
func (rs runSet) timeout(c mediator.Capabilities) int64 {
	if rs.pure && c.ExecutionTimeout == mediator.DefaultTimeoutMS {
		return mediator.PureTimeoutMS
	}
	return c.ExecutionTimeout
}

// env is the environment the set lets the module see: names from the
// set's fixed list with values from the run, never the host's own.
func (rs runSet) env(agentID, level string) [][2]string {
	var out [][2]string
	for _, name := range rs.rule.Env {
		switch name {
		case mediator.EnvAgentID:
			out = append(out, [2]string{name, agentID})
		case mediator.EnvSessionLevel:
			out = append(out, [2]string{name, level})
		}
	}
	return out
}

// outside explains a link refusal of a granted permission the set does
// not allow. When the set is minimal because an inference was not trusted,
// the refusal is recorded as that fallback (permission_set_fallback), with
// the confidence, so the person sees why an agent lost a right it seemed
// to have.
func (rs runSet) outside(imp string, perm mediator.Permission, details map[string]string) (mediator.Code, string) {
	msg := fmt.Sprintf("the module imports %s: %s", imp, mediator.OutsideSetMessage(rs.choice.Set, perm))
	details["permissionSet"] = string(rs.choice.Set)
	if !rs.choice.Fallback {
		return mediator.CodePermissionOutsideSet, msg
	}
	details["confidence"] = strconv.FormatFloat(rs.choice.Confidence, 'f', 2, 64)
	return mediator.CodeSetFallback, msg + " (" + rs.choice.Warning + ")"
}

// inferences remembers Inspect's answer per module: an older profile
// without a set would otherwise read its whole module on every run.
var inferences struct {
	sync.Mutex
	bySHA map[string]mediator.SetInference
}

const maxCachedInferences = 256

func inferCached(sha string, module []byte) mediator.SetInference {
	inferences.Lock()
	inf, ok := inferences.bySHA[sha]
	inferences.Unlock()
	if ok {
		return inf
	}
	in, err := Inspect(module)
	if err != nil {
		// validate refuses the module before anything runs anyway.
		in.Set, in.Confidence = mediator.SetMinimal, 0
	}
	inferences.Lock()
	if inferences.bySHA == nil || len(inferences.bySHA) >= maxCachedInferences {
		inferences.bySHA = map[string]mediator.SetInference{}
	}
	inferences.bySHA[sha] = in.SetInference
	inferences.Unlock()
	return in.SetInference
}

// outsideWorkspace explains a link refusal of a WASI file function the
// set's workspace access does not cover.
func (rs runSet) outsideWorkspace(imp string, need mediator.WorkspaceAccess, details map[string]string) (mediator.Code, string) {
	msg := fmt.Sprintf("the module imports %s, which needs %s access to the session's workspace; the permission set %s gives %s",
		imp, need, rs.choice.Set, rs.rule.Workspace)
	details["permissionSet"] = string(rs.choice.Set)
	if !rs.choice.Fallback {
		return mediator.CodePermissionOutsideSet, msg
	}
	details["confidence"] = strconv.FormatFloat(rs.choice.Confidence, 'f', 2, 64)
	return mediator.CodeSetFallback, msg + " (" + rs.choice.Warning + ")"
}

// workspaceFS mounts the run's workspace at /workspace when its grants
// give workspace access and its set allows it (workspaceAccess). The mount is the workspace's own os.Root file system,
// never wazero's directory mount, and each change goes through the
// policy as workspace.write with its path and size.
func (ru *run) workspaceFS() (wazero.FSConfig, bool) {
	access := ru.workspaceAccess()
	if ru.spec.Workspace == nil || access == mediator.WorkspaceNone || access == "" {
		return nil, false
	}
	hooks := workspace.Hooks{Change: func(op, name string, n int64, do func() error) error {
		_, err := ru.authorized(mediator.Operation{Name: mediator.OpWorkspaceWrite, Method: op, Path: name, TextLength: int(n)},
			func() ([]byte, error) { return nil, do() })
		return err
	}, Read: func(name string) error {
		_, err := ru.authorized(mediator.Operation{Name: mediator.OpWorkspaceRead, Path: name},
			func() ([]byte, error) { return nil, nil })
		return err
	}, Refused: ru.workspaceRefused}
	fsys := ru.spec.Workspace.SysFS(access != mediator.WorkspaceReadWrite, hooks)
	return wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(fsys, WorkspaceGuestPath), true
}

// WorkspaceGuestPath is where a guest finds its workspace.
const WorkspaceGuestPath = "/workspace"

// granted is the set of the agent's grants as the run was given them.
func (ru *run) granted() map[mediator.Permission]bool {
	granted := make(map[mediator.Permission]bool, len(ru.spec.Agent.Grants))
	for _, g := range ru.spec.Agent.Grants {
		granted[g.Permission] = true
	}
	return granted
}

// workspaceAccess is what the run may do with its session's workspace:
// what the workspace grants give, bounded by the set. A set alone mounts
// nothing, so an agent whose profile asks for nothing reaches nothing,
// whatever its module imports.
func (ru *run) workspaceAccess() mediator.WorkspaceAccess {
	g := ru.granted()
	return mediator.WorkspaceAccessOf(ru.set.rule, func(p mediator.Permission) bool { return g[p] })
}

// workspaceRefused records a refusal the workspace's file system made to
// the guest (a name that climbs out, a link out, a special file, the
// depth bound, the quota, a write under a read-only mount): the guest
// sees only an errno, and the person sees a denial with its audit record.
// A write under a read-only mount is refused by the grants when the set
// would allow it (workspace.write not granted), by the set otherwise.
func (ru *run) workspaceRefused(op, name string, err error) {
	code, perm, by := mediator.CodeOf(err), mediator.PermWorkspaceRead, "workspace"
	reason := mediator.MessageOf(err)
	if op != "open" && op != "stat" {
		perm = mediator.PermWorkspaceWrite
	}
	if code == mediator.CodePermissionOutsideSet {
		perm, by = mediator.PermWorkspaceWrite, "set:"+string(ru.set.choice.Set)
		if mediator.WorkspaceCovers(ru.set.rule.Workspace, mediator.WorkspaceReadWrite) {
			code, by = mediator.CodePermissionNotGranted, "grant:"+string(mediator.PermWorkspaceWrite)
			reason = fmt.Sprintf("%s: the agent has not been granted %s", mediator.Truncate(name, 80), mediator.PermWorkspaceWrite)
		}
	}
	// Each recorded refusal counts as a call of the run: a guest that
	// refuses itself in a loop writes at most MaxCallsPerRun denials, then
	// ends with call_limit, as a loop of restricted API calls does.
	if ru.calls++; ru.calls > ru.rt.cfg.MaxCallsPerRun {
		ru.cancel(errCallLimit)
		return
	}
	ru.deny(context.WithoutCancel(ru.ctx), mediator.Denial{AgentID: ru.spec.Agent.Profile.AgentID, Permission: string(perm), Code: code,
		Context: mediator.DenialContext{Reason: reason, Layer: "workspace",
			Details: map[string]string{"operation": op, "path": mediator.Truncate(name, 256), "decidedBy": by}}})
}
