package mediator

import (
	"net/url"
	"strings"
)

// SafetyClass says how much confirmation an operation needs, by what it
// does (seed 004): reading is safe, changing or sending asks, destructive
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
	Method     string      // for network.fetch: the HTTP method; "" matches any other
	Permission Permission  // the grant the operation needs
	Class      SafetyClass // how much confirmation it needs
	// Target names the part of the operation a remembered answer is
	// keyed by: "host" (fetches: method and host:port), "origin" (page
	// writes) or "" (the operation as a whole).
	Target string
	// StaysLocal is true when nothing leaves the machine: the only
	// operations a "low" session may run.
	StaysLocal bool
	// MCP tool annotations an MCP client would see for this operation.
	ReadOnly, Destructive, Idempotent, OpenWorld bool
	Why                                          string // the sentence a prompt shows
}

// OperationTable is the classification, in one place. RuleFor looks
// operations up here; anything not listed is ALWAYS_CONFIRM. The order is
// the documentation's order (docs/permissions.md).
var OperationTable = []OperationRule{
	{Name: OpLog, Permission: PermConsoleLog, Class: AlwaysSafe, StaysLocal: true,
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
	{Name: OpNetworkFetch, Method: "GET", Permission: PermNetworkFetch, Class: AlwaysSafe, Target: "host",
		ReadOnly: true, Idempotent: true, OpenWorld: true, Why: "reads from an allowed host"},
	{Name: OpNetworkFetch, Method: "HEAD", Permission: PermNetworkFetch, Class: AlwaysSafe, Target: "host",
		ReadOnly: true, Idempotent: true, OpenWorld: true, Why: "reads from an allowed host"},
	{Name: OpNetworkFetch, Method: "OPTIONS", Permission: PermNetworkFetch, Class: AlwaysSafe, Target: "host",
		ReadOnly: true, Idempotent: true, OpenWorld: true, Why: "reads from an allowed host"},
	{Name: OpNetworkFetch, Method: "DELETE", Permission: PermNetworkFetch, Class: AlwaysConfirm, Target: "host",
		Destructive: true, Idempotent: true, OpenWorld: true, Why: "asks a server to delete something"},
	{Name: OpNetworkFetch, Permission: PermNetworkFetch, Class: RequiresConfirmation, Target: "host",
		OpenWorld: true, Why: "sends data to a server"},
}

// unknownRule is what an operation outside the table gets.
var unknownRule = OperationRule{Class: AlwaysConfirm, Why: "is not a known operation"}

// RuleFor returns the table row for op and whether there is one. For a
// fetch the method decides the row; an empty method is GET.
func RuleFor(op Operation) (OperationRule, bool) {
	method := strings.ToUpper(op.Method)
	if op.Name == OpNetworkFetch && method == "" {
		method = "GET"
	}
	var fallback *OperationRule
	for i := range OperationTable {
		r := &OperationTable[i]
		if r.Name != op.Name {
			continue
		}
		if r.Method == method {
			return *r, true
		}
		if r.Method == "" {
			fallback = r
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	r := unknownRule
	r.Name = op.Name
	return r, false
}

// Session levels (seed 001). A level can only narrow what grants allow.
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

// targetKey is the value a remembered answer for op is keyed by. For a
// fetch it is the method and the URL's host:port ("POST api.example.com:8443"):
// "always allow" for a POST must not let a DELETE (always-confirm) or
// another port of the same host through.
func targetKey(r OperationRule, op Operation) string {
	switch r.Target {
	case "host":
		method := strings.ToUpper(op.Method)
		if method == "" {
			method = "GET"
		}
		hostPort := op.Host
		if u, err := url.Parse(op.URL); err == nil && u.Host != "" {
			hostPort = u.Host
		}
		return method + " " + hostPort
	case "origin":
		return op.Origin
	}
	return ""
}
