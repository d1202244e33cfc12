package mediator

import (
	"encoding/json"
	"net/url"
	"strings"
)

// SafetyClass says how much confirmation an operation needs, by what it
// does (docs/permissions.md): reading is safe, changing or sending asks, destructive
// or sensitive always asks unless the user said "always allow" for exactly
// that operation and target.
type SafetyClass string

const (
	AlwaysSafe           SafetyClass = "ALWAYS_SAFE"
	RequiresConfirmation SafetyClass = "REQUIRES_CONFIRMATION"
	AlwaysConfirm        SafetyClass = "ALWAYS_CONFIRM"
)

// OperationRule is one row of the classification table.
type OperationRule struct {
	Name       string      // operation name (Operation.Name)
	Method     string      // for network.fetch: the HTTP method, exactly one per row
	Permission Permission  // the grant the operation needs
	Class      SafetyClass // how much confirmation it needs
	// Target names the part of the operation a remembered answer is
	// keyed by: "origin" (the canonical scheme://host:port of the URL a
	// fetch goes to, or of the page a write touches; see TargetKey),
	// "outside" (the outside paths a shell command reads) or "" (the
	// operation as a whole).
	Target string
	// StaysLocal is true when nothing leaves the machine: the only
	// operations a "low" session may run.
	StaysLocal bool
	// Workspace is the access to the session's workspace the operation
	// needs from the agent's permission set, for operations that need no
	// grant (Permission "").
	Workspace WorkspaceAccess
	// MinLevel is the lowest session level that may run the operation
	// ("" any): the session matrix's memory rows and the shell's
	// information commands. Below it the decision is session_level.
	MinLevel string
	// Aggregate: an allowed call that only the safety class decided is
	// recorded in the run's one aggregate record (AuditAggregated), not
	// one record per call, unless the host or the profile asks for each
	// call (AuditCallsPerCall). Only for operations whose calls are the
	// agent's own business: log writes to the run's own output.
	Aggregate bool
	// MCP tool annotations an MCP client would see for this operation.
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	Why                                          string // the sentence a prompt shows
}

// operationTable is the classification, in one place. RuleFor looks
// operations up here; anything not listed is ALWAYS_CONFIRM. The order is
// the documentation's order (docs/permissions.md).
var operationTable = []OperationRule{
	{Name: OpLog, Permission: PermConsoleLog, Class: AlwaysSafe, StaysLocal: true, Aggregate: true,
		ReadOnly: true, Idempotent: true, Why: "writes to the agent's own output"},
	{Name: OpPageQuerySelector, Permission: PermPageRead, Class: AlwaysSafe, StaysLocal: true,
		ReadOnly: true, Idempotent: true, Why: "reads one element of the page"},
	{Name: OpPageQuerySelectorAll, Permission: PermPageRead, Class: AlwaysSafe, StaysLocal: true,
		ReadOnly: true, Idempotent: true, Why: "reads elements of the page"},
	{Name: OpPageGetPageText, Permission: PermPageRead, Class: AlwaysSafe, StaysLocal: true,
		ReadOnly: true, Idempotent: true, Why: "reads the page's text"},
	{Name: OpPageSetElementText, Permission: PermPageWrite, Class: RequiresConfirmation, Target: "origin", StaysLocal: true,
		Idempotent: true, Why: "changes what the page shows"},
	{Name: OpClipboardWrite, Permission: PermClipboardWrite, Class: RequiresConfirmation, StaysLocal: true,
		Idempotent: true, Why: "replaces what you paste next"},
	{Name: OpClipboardRead, Permission: PermClipboardRead, Class: AlwaysConfirm, StaysLocal: true,
		ReadOnly: true, Idempotent: true, Why: "reads your clipboard, which may hold passwords or private text"},
	{Name: OpNotificationsShow, Permission: PermNotifications, Class: RequiresConfirmation, StaysLocal: true,
		Why: "shows you a system notification"},
	{Name: OpNetworkFetch, Method: "GET", Permission: PermNetworkFetch, Class: AlwaysSafe, Target: "origin",
		ReadOnly: true, Idempotent: true, OpenWorld: true, Why: "reads from an allowed host"},
	{Name: OpNetworkFetch, Method: "HEAD", Permission: PermNetworkFetch, Class: AlwaysSafe, Target: "origin",
		ReadOnly: true, Idempotent: true, OpenWorld: true, Why: "reads from an allowed host"},
	{Name: OpNetworkFetch, Method: "OPTIONS", Permission: PermNetworkFetch, Class: AlwaysSafe, Target: "origin",
		ReadOnly: true, Idempotent: true, OpenWorld: true, Why: "reads from an allowed host"},
	{Name: OpNetworkFetch, Method: "POST", Permission: PermNetworkFetch, Class: RequiresConfirmation, Target: "origin",
		OpenWorld: true, Why: "sends data to a server"},
	{Name: OpNetworkFetch, Method: "PUT", Permission: PermNetworkFetch, Class: RequiresConfirmation, Target: "origin",
		Idempotent: true, OpenWorld: true, Why: "sends data to a server"},
	{Name: OpNetworkFetch, Method: "PATCH", Permission: PermNetworkFetch, Class: RequiresConfirmation, Target: "origin",
		OpenWorld: true, Why: "sends data to a server"},
	{Name: OpNetworkFetch, Method: "DELETE", Permission: PermNetworkFetch, Class: AlwaysConfirm, Target: "origin",
		Destructive: true, Idempotent: true, OpenWorld: true, Why: "asks a server to delete something"},
	// The workspace: reached only through the workspace.read and
	// workspace.write grants, under a set whose workspace column covers
	// them. Each open for reading and each change is decided and recorded.
	{Name: OpWorkspaceRead, Permission: PermWorkspaceRead, Workspace: WorkspaceRead, Class: AlwaysSafe, StaysLocal: true,
		ReadOnly: true, Idempotent: true, Why: "reads a file in the session's own workspace"},
	{Name: OpWorkspaceWrite, Permission: PermWorkspaceWrite, Workspace: WorkspaceReadWrite, Class: AlwaysSafe, StaysLocal: true,
		Idempotent: true, Why: "writes a file in the session's own workspace"},
	// The session's memory: searching needs a medium session, writing a
	// high one (the session matrix, docs/permissions.md). A write changes
	// what later runs read, so it is REQUIRES_CONFIRMATION like any
	// change; a high session, the only one that may write, runs those
	// without asking.
	{Name: OpMemorySearch, Permission: PermMemory, Class: AlwaysSafe, StaysLocal: true, MinLevel: LevelMedium,
		ReadOnly: true, Idempotent: true, Why: "searches the session's memory"},
	{Name: OpMemoryWrite, Permission: PermMemory, Class: RequiresConfirmation, StaysLocal: true, MinLevel: LevelHigh,
		Why: "adds an entry to the session's memory"},
	// MCP tools: each call's class comes from the tool (ClassifyTool);
	// this row is what a call that names no tool exactly gets.
	{Name: OpToolCall, Permission: PermMCPCall, Class: AlwaysConfirm, Target: "tool", OpenWorld: true,
		Why: "calls a tool of an MCP server you configured; its class comes from the tool (docs/mcp.md)"},
}

func init() {
	// The shell's rows come from its command set, so the two cannot
	// disagree.
	operationTable = append(operationTable, shellRules()...)
}

// LocalOnly reports that the operation has no effect outside the host: it
// stays on this machine and only reads, and what it reads goes back to the
// agent alone ("log" writes to the agent's own output, which the run
// returns). Its decision record may become durable after it runs, provided
// it is durable before the run's result is reported (docs/permissions.md,
// "Durability"); every other operation runs only after its decision is on
// disk.
func (r OperationRule) LocalOnly() bool { return r.StaysLocal && r.ReadOnly }

// unknownRule is what an operation outside the table gets.
var unknownRule = OperationRule{Class: AlwaysConfirm, Why: "is not a known operation"}

// RuleFor returns the table row for op and whether there is one. For a
// fetch the method decides the row; an empty method is GET, and a method
// the table does not list (CONNECT, TRACE, PROPFIND...) has no row: it is
// refused, never asked about (see FetchMethods).
func RuleFor(op Operation) (OperationRule, bool) {
	if op.Name == OpToolCall {
		return toolRule(op), true
	}
	method := strings.ToUpper(op.Method)
	if op.Name == OpNetworkFetch && method == "" {
		method = "GET"
	}
	var fallback *OperationRule
	for i := range operationTable {
		r := &operationTable[i]
		if r.Name != op.Name {
			continue
		}
		if r.Method == method {
			return adjustRule(*r, op), true
		}
		if r.Method == "" {
			fallback = r
		}
	}
	if fallback != nil {
		return adjustRule(*fallback, op), true
	}
	r := unknownRule
	r.Name = op.Name
	return r, false
}

// adjustRule is where an operation's own targets change its row: a shell
// command that reads outside the workspace reads the person's own files,
// so an agent does it only when asked each time, even in a high session,
// and the prompt names the paths.
func adjustRule(r OperationRule, op Operation) OperationRule {
	if op.Shell != nil && op.Shell.ReadsOutside && strings.HasPrefix(r.Name, OpShellPrefix) {
		r.Class, r.Target = AlwaysConfirm, "outside"
		r.Why = "reads a file outside the session's workspace"
	}
	return r
}

// Session levels (docs/permissions.md). A level can only narrow what grants allow.
const (
	LevelLow    = "low"
	LevelMedium = "medium"
	LevelHigh   = "high"
)

// ParseLevel normalises a session level; "" is the default, medium.
func ParseLevel(s string) (string, error) {
	switch s {
	case "", LevelMedium:
		return LevelMedium, nil
	case LevelLow, LevelHigh:
		return s, nil
	}
	return "", Errorf(CodeInvalidLevel, "permission level %q must be low, medium or high", Truncate(s, 32))
}

// TargetKey is the value a remembered answer for op is keyed by, and what
// a prompt shows as the answer's reach. For a fetch it is the method and
// the canonical origin of the URL ("POST https://api.example.com:443"):
// "always allow" for a POST must not let a DELETE (always-confirm), the
// same host over cleartext http, or another port through, and "h",
// "h:443" and "HTTPS://H" are one origin. For a page write it is the
// page's canonical origin. A target that is not a URL with a host keys to
// "", which no remembered answer matches.
func TargetKey(op Operation) string {
	rule, known := RuleFor(op)
	if !known {
		return ""
	}
	return targetKey(rule, op)
}

func targetKey(r OperationRule, op Operation) string {
	if r.Target == "tool" {
		return toolTarget(op)
	}
	if r.Target == "outside" && op.Shell != nil {
		// An "always" answer covers exactly the outside files named.
		var outside []string
		for _, p := range op.Shell.Paths {
			if strings.HasPrefix(p, "/") {
				outside = append(outside, p)
			}
		}
		// JSON, so "/tmp/a /etc/passwd" (one file) and /tmp/a plus
		// /etc/passwd (two) are different answers.
		b, err := json.Marshal(outside)
		if err != nil || len(outside) == 0 {
			return ""
		}
		return string(b)
	}
	if r.Target != "origin" {
		return ""
	}
	if r.Name == OpNetworkFetch {
		origin := CanonicalOrigin(op.URL)
		if origin == "" {
			return ""
		}
		method := strings.ToUpper(op.Method)
		if method == "" {
			method = "GET"
		}
		return method + " " + origin
	}
	return CanonicalOrigin(op.Origin)
}

// CanonicalOrigin returns the origin of rawURL as scheme://host:port with
// the scheme and host in lower case and the port always written (443 for
// https, 80 for http), or "" when rawURL is not an http(s) URL with a host.
func CanonicalOrigin(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return ""
	case port == "" && scheme == "https":
		port = "443"
	case port == "":
		port = "80"
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// FetchMethods are the HTTP methods an agent's fetch may use: the rows of
// operationTable for network.fetch. Anything else is method_not_allowed
// before a prompt could be shown.
func FetchMethods() []string {
	var out []string
	for _, r := range operationTable {
		if r.Name == OpNetworkFetch {
			out = append(out, r.Method)
		}
	}
	return out
}

// FetchCarriesNoBody reports whether method is one of the read-only fetch
// methods (GET, HEAD, OPTIONS), which the policy classes as safe and which
// may therefore carry no request body: a body would ride out on a safe
// method without a prompt.
func FetchCarriesNoBody(method string) bool {
	if method == "" {
		method = "GET"
	}
	r, ok := RuleFor(Operation{Name: OpNetworkFetch, Method: method})
	return ok && r.ReadOnly
}
