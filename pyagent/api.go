package pyagent

import (
	"slices"

	"github.com/agentgate/nmhost/mediator"
)

// Function is one restricted_api function: the name Python code calls,
// the mediator operation it becomes and the permission that operation needs.
type Function struct {
	Name       string              `json:"name"`
	Operation  string              `json:"operation"`
	Permission mediator.Permission `json:"permission"`
}

// functions is every restricted_api function, in the order docs/python.md
// lists them. A name not here is no function at all.
var functions = []Function{
	fn("log", mediator.OpLog),
	fn("querySelector", mediator.OpPageQuerySelector),
	fn("querySelectorAll", mediator.OpPageQuerySelectorAll),
	fn("getPageText", mediator.OpPageGetPageText),
	fn("setElementText", mediator.OpPageSetElementText),
	fn("writeToClipboard", mediator.OpClipboardWrite),
	fn("readFromClipboard", mediator.OpClipboardRead),
	fn("fetch", mediator.OpNetworkFetch),
	fn("showNotification", mediator.OpNotificationsShow),
	fn("memory_write", mediator.OpMemoryWrite),
	fn("memory_search", mediator.OpMemorySearch),
	// Each command of a shell line is decided as its own operation,
	// "shell.CMD" (mediator.ShellOp); the function needs the grant they
	// all need.
	{Name: "shell", Operation: "shell", Permission: mediator.PermShell},
	// A tool of an MCP server the person configured (docs/mcp.md),
	// among those the profile's mcpTools lists.
	fn("mcp_call", mediator.OpToolCall),
}

// fn takes the permission from the policy's own table, so a Python call
// and a module's import of the same operation can never need different
// grants.
func fn(name, op string) Function {
	rule, _ := mediator.RuleFor(mediator.Operation{Name: op})
	return Function{Name: name, Operation: op, Permission: rule.Permission}
}

// Lookup returns the function called name; false for any other name,
// case variants included.
func Lookup(name string) (Function, bool) {
	i := slices.IndexFunc(functions, func(f Function) bool { return f.Name == name })
	if i < 0 {
		return Function{}, false
	}
	return functions[i], true
}

// Present lists the functions an agent holding grants finds on
// restricted_api: those whose permission it is granted. Everything else is
// absent from the object, as an ungranted import is never linked.
func Present(granted []mediator.Permission) []string {
	var out []string
	for _, f := range functions {
		if slices.Contains(granted, f.Permission) {
			out = append(out, f.Name)
		}
	}
	return out
}

// Functions returns every restricted_api function (a copy: the table is
// the policy's, not an importer's to change).
func Functions() []Function { return slices.Clone(functions) }
