package mediator

import "context"

// Operation is one thing an agent asks to do: a restricted API call made by
// its WebAssembly module, or a network-fetch request from the extension. It
// is what the policy classifies and decides, what a prompt shows, and what
// the audit trail records. It carries targets, never contents: page text and
// clipboard data appear only as a length.
type Operation struct {
	AgentID    string     `json:"agentId"`
	Permission Permission `json:"permission"` // the grant the operation needs
	// Name is the operation in the restricted API's terms, the key of the
	// classification table: "log", "page.read.querySelector",
	// "page.read.querySelectorAll", "page.read.getPageText",
	// "page.write.setElementText", "clipboard.read", "clipboard.write",
	// "notifications.showNotification", "network.fetch".
	Name string `json:"operation"`

	// Targets, as far as the operation has one. URL and Host are canonical
	// (netproxy's normal form); Origin is the page's origin for page calls.
	Method   string `json:"method,omitempty"`
	URL      string `json:"url,omitempty"`
	Host     string `json:"host,omitempty"`
	Origin   string `json:"origin,omitempty"`
	Selector string `json:"selector,omitempty"`
	// Path is a workspace name, relative to the workspace.
	Path       string `json:"path,omitempty"`
	TextLength int    `json:"textLength,omitempty"` // bytes written or read; never the text
	// Content is what an aggregated call carries (a log line): hashed
	// into the run's aggregate record, never written anywhere.
	Content string `json:"-"`
	// Preview is the start of what a write carries (a page write's text,
	// a notification, text for the clipboard), for a prompt to show the
	// person what they allow: the agent's own text, never the person's.
	// Never recorded; PreviewOf makes it.
	Preview string `json:"-"`
	// Hop is, for a fetch, the redirect this request follows (1 for the
	// first); 0 for the request as the agent made it. Each hop is decided
	// and recorded on its own.
	Hop int `json:"hop,omitempty"`

	// SessionLevel is the permission level of the session the run belongs
	// to ("low", "medium", "high"); empty means the default,
	// medium. A level can only narrow what the grants allow, never widen it.
	SessionLevel string `json:"sessionLevel,omitempty"`
	// SessionID is the run's session, when the caller knows it: an
	// "allow for this session" answer is bound to it, and offered only
	// when it is set. Not part of the audit record's body.
	SessionID string `json:"-"`

	// Workflow, Layer and Task tie a workflow task's decision to the
	// workflow, the layer it ran in (1 for the first) and the task's id,
	// so the audit trail reads like the workflow. Empty outside one.
	Workflow string `json:"workflow,omitempty"`
	Layer    int    `json:"layer,omitempty"`
	Task     string `json:"task,omitempty"`

	// Shell is, for a shell command (Name "shell.CMD"), where the command
	// reaches: the policy applies the session matrix (DecideShell) to it.
	// It names paths, never what a command writes.
	Shell *ShellStep `json:"shell,omitempty"`

	// Tool is, for an MCP tool call (Name "mcp.call"), the server, the
	// tool, its pinned definition and the arguments' hash.
	Tool *ToolCall `json:"tool,omitempty"`
}

// Operation names: the restricted API (docs/abi.md) plus the extension's
// network-fetch, which is the same operation as the module's fetch.
const (
	OpLog                  = "log"
	OpPageQuerySelector    = "page.read.querySelector"
	OpPageQuerySelectorAll = "page.read.querySelectorAll"
	OpPageGetPageText      = "page.read.getPageText"
	OpPageSetElementText   = "page.write.setElementText"
	OpClipboardRead        = "clipboard.read"
	OpClipboardWrite       = "clipboard.write"
	OpNotificationsShow    = "notifications.showNotification"
	OpNetworkFetch         = "network.fetch"
	OpWorkspaceRead        = "workspace.read"
	OpWorkspaceWrite       = "workspace.write"
	OpMemoryWrite          = "memory.write"
	OpMemorySearch         = "memory.search"
	// OpToolCall ("mcp.call") is a call of an MCP tool (toolcall.go).
	// OpShellPrefix + a command name ("shell.cp") is one command of the
	// session shell; ShellOp builds it.
	OpShellPrefix = "shell."
)

// Authorizer decides an operation before it runs. A nil error allows it:
// the caller runs the operation and then calls done with its outcome (nil
// on success), so the decision and its execution are both on record. A
// non-nil error denies; it carries the reason code (CodeOf) and the
// Authorizer has already recorded the denial. done is never nil when the
// error is nil.
type Authorizer interface {
	Authorize(ctx context.Context, op Operation) (done func(result error), err error)
}

// MaxPreviewBytes bounds Operation.Preview.
const MaxPreviewBytes = 200

// PreviewOf is the preview of text a prompt shows: its first
// MaxPreviewBytes, cut on a rune, with "…" when there is more. Shown
// escaped, as every text an agent chose.
func PreviewOf(text string) string {
	if len(text) <= MaxPreviewBytes {
		return text
	}
	return Truncate(text, MaxPreviewBytes) + "…"
}
