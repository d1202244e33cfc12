package mediator

import (
	"fmt"
	"slices"
	"strconv"
)

// PermissionSet names the ceiling an agent runs under. A run links the
// intersection of its set and its grants: the set never grants anything by
// itself, it bounds what may be granted, so a reviewer reads one word and
// knows the most the agent can ever reach.
type PermissionSet string

// The six sets, from least to most (PermissionSets keeps this order).
const (
	SetMinimal     PermissionSet = "minimal"
	SetReadonly    PermissionSet = "readonly"
	SetFilesystem  PermissionSet = "filesystem"
	SetNetworkAPI  PermissionSet = "network-api"
	SetMCPStandard PermissionSet = "mcp-standard"
	SetTrusted     PermissionSet = "trusted"
)

// Where a profile's permissionSet came from.
const (
	// SetSourceManual: the profile named the set; it is used as written.
	SetSourceManual = "manual"
	// SetSourceInferred: the host read it off the module (or, without a
	// module, off the permissions the profile asks for) with a confidence.
	SetSourceInferred = "inferred"
)

// PermissionConfidenceThreshold is the confidence an inferred set needs to
// be used; below it the agent runs under SetMinimal. 0.7 lets through the
// cases the inspector reads in full (1.0) and through a function table it
// can see (0.8), and drops the ones it cannot read or where the module asks
// for more than its code uses (0.5 and below).
const PermissionConfidenceThreshold = 0.7

// WorkspaceAccess is what a set allows of a session's workspace.
type WorkspaceAccess string

const (
	WorkspaceNone      WorkspaceAccess = "none"
	WorkspaceRead      WorkspaceAccess = "read"
	WorkspaceReadWrite WorkspaceAccess = "read-write"
)

// WorkspaceCovers reports whether having access has covers needing need.
func WorkspaceCovers(has, need WorkspaceAccess) bool {
	rank := map[WorkspaceAccess]int{WorkspaceNone: 0, "": 0, WorkspaceRead: 1, WorkspaceReadWrite: 2}
	return rank[has] >= rank[need]
}

// Environment names a module may see. A set lists some of these; their
// values come from the run, never from the host's own environment.
const (
	EnvAgentID      = "NMHOST_AGENT_ID"
	EnvSessionLevel = "NMHOST_SESSION_LEVEL"
)

// PermissionSetRule is one row of the permission set table.
type PermissionSetRule struct {
	Set PermissionSet
	// Permissions are those the set lets an agent be granted, and so the
	// restricted API functions that may be linked (docs/abi.md names the
	// permission of each). input, result and abi_version need none and
	// every set links them, with the compute-only WASI subset.
	Permissions []Permission
	// Workspace is how the session's workspace is mounted for the module.
	Workspace WorkspaceAccess
	// Env lists the environment names the module sees.
	Env []string
	// Why is the one line docs and `nmhost inspect` show.
	Why string
}

// Fetch reports whether network.fetch may be granted under the set.
func (r PermissionSetRule) Fetch() bool { return r.Allows(PermNetworkFetch) }

// Allows reports whether the set lets p be granted and linked.
func (r PermissionSetRule) Allows(p Permission) bool { return slices.Contains(r.Permissions, p) }

// permissionSetTable is the one table of what each set allows, in order
// from least to most. No row, trusted included, offers a process, a socket,
// a foreign function or a file outside the workspace: those are not
// permissions at all (ParsePermission refuses "run" and "ffi"), and the
// runtime's WASI subset has no socket or process function to link.
var permissionSetTable = []PermissionSetRule{
	{Set: SetMinimal, Permissions: []Permission{PermConsoleLog},
		Workspace: WorkspaceNone, Why: "computes on its input and logs; touches nothing else"},
	{Set: SetReadonly, Permissions: []Permission{PermConsoleLog, PermPageRead, PermShell, PermWorkspaceRead},
		Workspace: WorkspaceRead, Why: "reads the page and the workspace; changes and sends nothing"},
	{Set: SetFilesystem, Permissions: []Permission{PermConsoleLog, PermPageRead, PermMemory, PermShell, PermWorkspaceRead, PermWorkspaceWrite},
		Workspace: WorkspaceReadWrite, Why: "reads the page, reads and writes the workspace and the session's memory; sends nothing"},
	{Set: SetNetworkAPI, Permissions: []Permission{PermConsoleLog, PermNetworkFetch},
		Workspace: WorkspaceNone, Why: "fetches from its allowed hosts; no page, no workspace"},
	{Set: SetMCPStandard, Permissions: []Permission{PermConsoleLog, PermPageRead, PermPageWrite, PermClipboardWrite, PermNotifications, PermNetworkFetch, PermMemory, PermShell, PermWorkspaceRead, PermWorkspaceWrite, PermMCPCall},
		Workspace: WorkspaceReadWrite, Env: []string{EnvAgentID, EnvSessionLevel},
		Why: "what a tool user needs: the MCP tools it lists, page, workspace, network, notifications; never reads the clipboard"},
	{Set: SetTrusted, Permissions: append([]Permission(nil), knownPermissions...),
		Workspace: WorkspaceReadWrite, Env: []string{EnvAgentID, EnvSessionLevel},
		Why: "every function of the restricted API, each still granted and decided one by one"},
}

// PermissionSets lists the set names from least to most.
func PermissionSets() []PermissionSet {
	out := make([]PermissionSet, len(permissionSetTable))
	for i, r := range permissionSetTable {
		out[i] = r.Set
	}
	return out
}

// SetRule returns the table row of s; an unknown name has none.
func SetRule(s PermissionSet) (PermissionSetRule, bool) {
	for _, r := range permissionSetTable {
		if r.Set == s {
			// A copy, slices too: the caller may not change the table.
			r.Permissions, r.Env = slices.Clone(r.Permissions), slices.Clone(r.Env)
			return r, true
		}
	}
	return PermissionSetRule{}, false
}

// ParsePermissionSet accepts exactly one of the six names.
func ParsePermissionSet(s string) (PermissionSet, error) {
	if _, ok := SetRule(PermissionSet(s)); ok {
		return PermissionSet(s), nil
	}
	return "", Errorf(CodeInvalidProfile, "permissionSet %q is not one of %v", Truncate(s, 32), PermissionSets())
}

// SmallestSet returns the first set, from least to most, that allows every
// permission in perms.
func SmallestSet(perms []Permission) PermissionSet { return SmallestSetFor(perms, WorkspaceNone) }

// SmallestSetFor is SmallestSet of a module that also needs ws access to
// the workspace.
func SmallestSetFor(perms []Permission, ws WorkspaceAccess) PermissionSet {
	for _, r := range permissionSetTable {
		if WorkspaceCovers(r.Workspace, ws) && !slices.ContainsFunc(perms, func(p Permission) bool { return !r.Allows(p) }) {
			return r.Set
		}
	}
	return SetTrusted
}

// SetInference is what reading a module (or a profile) says about its set.
type SetInference struct {
	Set        PermissionSet `json:"permissionSet"`
	Confidence float64       `json:"confidence"`
	// Pure: every import is free of side effects (log, input, result and
	// compute-only WASI), so the module runs under minimal and never asks.
	Pure    bool     `json:"pure"`
	Reasons []string `json:"reasons"`
}

// SetChoice is the set a run uses and how it was chosen.
type SetChoice struct {
	Set        PermissionSet `json:"permissionSet"`
	Source     string        `json:"permissionSource"`
	Confidence float64       `json:"confidence"`
	// Fallback is true when an inferred set was not trusted (confidence
	// below the threshold, or an unknown name) and minimal is used.
	Fallback bool `json:"fallback,omitempty"`
	// Warning says why, for the denial log and the audit trail.
	Warning string `json:"warning,omitempty"`
}

// DeterminePermissionSet chooses the set a run uses. A manual set is used
// as stored; an inferred one is used when its confidence reaches
// PermissionConfidenceThreshold, and minimal otherwise. An unknown name,
// from either source, is minimal with a warning: the least is the only
// safe reading of a name this host does not know.
func DeterminePermissionSet(p Profile, inf SetInference) SetChoice {
	name, source, conf := p.PermissionSet, p.PermissionSource, p.PermissionConfidence
	if source == "" && name == "" {
		name, source, conf = inf.Set, SetSourceInferred, inf.Confidence
	}
	if source == "" {
		source = SetSourceManual
	}
	if _, ok := SetRule(name); !ok {
		return SetChoice{Set: SetMinimal, Source: source, Confidence: conf, Fallback: true,
			Warning: fmt.Sprintf("permission set %q is not known; using minimal", Truncate(string(name), 32))}
	}
	if source == SetSourceManual {
		return SetChoice{Set: name, Source: source, Confidence: 1}
	}
	if source != SetSourceInferred {
		return SetChoice{Set: SetMinimal, Source: source, Confidence: conf, Fallback: true,
			Warning: fmt.Sprintf("permission source %q is not known; using minimal", Truncate(source, 32))}
	}
	if !(conf >= PermissionConfidenceThreshold) { // NaN falls back too
		return SetChoice{Set: SetMinimal, Source: source, Confidence: conf, Fallback: true,
			Warning: fmt.Sprintf("inferred %s with confidence %s, below %s; using minimal",
				name, strconv.FormatFloat(conf, 'f', 2, 64), strconv.FormatFloat(PermissionConfidenceThreshold, 'f', 1, 64))}
	}
	return SetChoice{Set: name, Source: source, Confidence: conf}
}

// OutsideSet returns the first of perms the set does not allow, and
// whether there is one: install-agent refuses a required permission outside
// the set, and grant refuses any.
func OutsideSet(set PermissionSet, perms []Permission) (Permission, bool) {
	r, _ := SetRule(set)
	for _, p := range perms {
		if !r.Allows(p) {
			return p, true
		}
	}
	return "", false
}

// OutsideSetMessage is what a refusal of perm under set says.
func OutsideSetMessage(set PermissionSet, perm Permission) string {
	return fmt.Sprintf("%s is outside the agent's permission set %s; a set bounds what may be granted (docs/permissions.md, \"Permission sets\")", perm, set)
}

// Pure work gets a shorter default timeout: a computation with no side
// effect that has not finished in seconds is stuck, not waiting on anything.
const (
	PureTimeoutMS = 5_000
)

// GrantedWorkspace is the workspace access an agent's grants give:
// read with workspace.read, read-write with workspace.read and
// workspace.write together, none otherwise. The permission set bounds it
// again (WorkspaceAccessOf).
func GrantedWorkspace(granted func(Permission) bool) WorkspaceAccess {
	switch {
	case granted(PermWorkspaceRead) && granted(PermWorkspaceWrite):
		return WorkspaceReadWrite
	case granted(PermWorkspaceRead):
		return WorkspaceRead
	}
	return WorkspaceNone
}

// WorkspaceAccessOf is what a run may do with its session's workspace:
// the lesser of what the set allows and what the grants give. The set
// alone never mounts anything.
func WorkspaceAccessOf(set PermissionSetRule, granted func(Permission) bool) WorkspaceAccess {
	g := GrantedWorkspace(granted)
	if WorkspaceCovers(set.Workspace, g) {
		return g
	}
	return set.Workspace
}

// WorkspaceGrantFor is the grant that access need lacks when the grants
// give only has: workspace.read first, then workspace.write.
func WorkspaceGrantFor(need WorkspaceAccess, granted func(Permission) bool) (Permission, bool) {
	if need == WorkspaceNone || need == "" {
		return "", false
	}
	if !granted(PermWorkspaceRead) {
		return PermWorkspaceRead, true
	}
	if need == WorkspaceReadWrite && !granted(PermWorkspaceWrite) {
		return PermWorkspaceWrite, true
	}
	return "", false
}
