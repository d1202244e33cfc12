package mediator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// A call of a tool of an MCP server is one more operation: decided by the
// same policy, remembered with the same answers, recorded in the same
// trail. What is particular to it is where its safety class comes from,
// because the table below cannot list tools nobody has written yet.

// OpToolCall is a call of one tool of one MCP server the person
// configured (docs/mcp.md).
const OpToolCall = "mcp.call"

// PermMCPCall lets an agent call MCP tools: only those its profile's
// capabilities.mcpTools names ("server" or "server/tool").
const PermMCPCall Permission = "mcp.call"

// Limits on what names a tool call (the server and tool names reach
// prompts, records and file-free keys; MCP itself bounds neither).
const (
	MaxToolServerLen = 64
	MaxToolNameLen   = 128
	MaxMCPToolsRules = 256
)

// ToolCall is what an MCP tool call reaches. It carries the arguments by
// hash: their content is recorded only when the person's configuration
// asks for it (Args).
type ToolCall struct {
	// Server is the name the person gave the server in their
	// configuration; Tool the tool's name as that server lists it.
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Definition is the sha256 of the tool's definition as the server
	// listed it (ToolDefinitionHash): an answer is bound to it, so a
	// changed definition is asked about again.
	Definition string `json:"definition"`
	// ArgsSHA256 is the sha256 of the call's arguments as sent.
	ArgsSHA256 string `json:"argsSha256"`
	// Args is the arguments' content, only when the person's
	// configuration records content for this server.
	Args string `json:"args,omitempty"`
	// Hints are the tool's annotations as the server gave them:
	// untrusted (ClassifyTool).
	Hints ToolHints `json:"hints"`
	// Trusted: the person marked the server trusted, so its annotations
	// may lower a class as well as raise it.
	Trusted bool `json:"trusted,omitempty"`
	// PersonClass is the person's own rule for this tool ("" none).
	PersonClass SafetyClass `json:"personClass,omitempty"`
	// Description is the tool's description, shown (escaped) in a
	// prompt; the definition's hash covers it, the record does not
	// repeat it.
	Description string `json:"-"`
	// Changed says what changed in the tool's definition since the
	// gateway saw it before ("" nothing), for the prompt.
	Changed string `json:"-"`
}

// ToolHints are MCP's tool annotations. Nil is "not said": MCP's own
// defaults then apply where they are the careful reading.
type ToolHints struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

func (h ToolHints) said() bool {
	return h.ReadOnly != nil || h.Destructive != nil || h.Idempotent != nil || h.OpenWorld != nil
}

// ToolDefinitionHash is the hash an answer about a tool is bound to: its
// name, description, input schema and annotations, each as the server
// sent them (raw JSON, so no re-encoding can make two definitions equal).
func ToolDefinitionHash(name, description string, inputSchema, annotations json.RawMessage) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(name), []byte(description), inputSchema, annotations} {
		// Length-prefixed: no shift of bytes between fields hashes the same.
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ArgsHash is the sha256 of a call's arguments, as recorded.
func ArgsHash(args []byte) string {
	s := sha256.Sum256(args)
	return hex.EncodeToString(s[:])
}

// ValidToolName reports whether s may name an MCP server (in the person's
// configuration) or a tool: printable ASCII letters, digits, '_', '-' and
// '.', as MCP advises for tool names. Anything else (control characters,
// bidi overrides, spaces, '/') is refused rather than escaped: a name is
// a key, and a key the person cannot read exactly is no key.
func ValidToolName(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// The checker's name patterns: what a tool's name says it does, read by
// words ("delete_file", "listItems", "get-user"). Compiled on first use:
// host mode starts with no tool call to decide, and its start is kept
// small (cmd/nmhost TestHostModeInitStaysSmall).
var (
	confirmWords = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(^|[^a-z])(delete|del|remove|rm|destroy|drop|kill|trash|purge|erase|wipe|reset|format|uninstall|revoke|truncate|quit|shutdown|terminate|overwrite)([^a-z]|$)|^(delete|remove|destroy|drop|kill|trash|purge|erase|wipe|reset|uninstall|revoke|truncate|quit|terminate|overwrite)[A-Z]`)
	})
	safeWords = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(get|list|read|search|find|count|query|show|describe|view|stat|lookup|fetch|info|head|tail|directory_tree|open_nodes)([^a-z]|$)|^(get|list|read|search|find|count|query|show|describe|view|lookup|fetch)[A-Z]`)
	})
)

// classByName is the checker's reading of a tool's name: destructive
// words always confirm, reading words are safe, anything else asks.
func classByName(tool string) (SafetyClass, string) {
	switch {
	case confirmWords().MatchString(tool):
		return AlwaysConfirm, "its name says it deletes or destroys something"
	case safeWords().MatchString(tool):
		return AlwaysSafe, "its name says it only reads"
	}
	return RequiresConfirmation, "its name does not say it only reads"
}

// classByHints reads MCP's annotations with MCP's defaults: a tool that is
// not read-only is destructive unless it says otherwise.
func classByHints(h ToolHints) (SafetyClass, string) {
	switch {
	case h.ReadOnly != nil && *h.ReadOnly:
		return AlwaysSafe, "its server says it only reads"
	case h.Destructive == nil || *h.Destructive:
		return AlwaysConfirm, "its server says it may delete or overwrite"
	}
	return RequiresConfirmation, "its server says it changes something"
}

var classRank = map[SafetyClass]int{AlwaysSafe: 0, RequiresConfirmation: 1, AlwaysConfirm: 2}

func stricter(a, b SafetyClass) SafetyClass {
	if classRank[b] > classRank[a] {
		return b
	}
	return a
}

// ClassifyTool gives a tool call its safety class and the sentence a
// prompt shows, in order: the person's rule for the tool; else the
// checker's name patterns, which the server's annotations may make more
// careful, never less, unless the person marked the server trusted (then
// the annotations decide where they say anything). The administrator's
// rules (AdminPolicy.MCP) apply on top, in Decide, and only ever refuse.
func ClassifyTool(t ToolCall) (SafetyClass, string) {
	if _, ok := classRank[t.PersonClass]; ok {
		return t.PersonClass, "you set this tool's class to " + string(t.PersonClass)
	}
	class, why := classByName(t.Tool)
	if !t.Hints.said() {
		return class, why
	}
	hinted, hwhy := classByHints(t.Hints)
	if t.Trusted {
		return hinted, hwhy
	}
	if s := stricter(class, hinted); s != class {
		return s, hwhy
	}
	return class, why
}

// namesATool reports whether t names a server, a tool and a definition
// exactly: the only tool call decided on its merits.
func namesATool(t *ToolCall) bool {
	return t != nil && ValidToolName(t.Server, MaxToolServerLen) && ValidToolName(t.Tool, MaxToolNameLen) && len(t.Definition) == 64
}

// toolDenial refuses a tool call that names no tool exactly, and a tool
// on an operation that is not a tool call.
func toolDenial(op Operation, rule OperationRule) (PolicyDecision, bool) {
	switch {
	case op.Name == OpToolCall && !namesATool(op.Tool):
		return denied(rule.Class, CodeBadRequest, "class:"+string(rule.Class),
			"an MCP tool call names its server and tool (letters, digits, '_', '-', '.') and its definition's sha256"), false
	case op.Tool != nil && op.Name != OpToolCall:
		return denied(rule.Class, CodeBadRequest, "class:"+string(rule.Class), fmt.Sprintf("%s is not an MCP tool call", Truncate(op.Name, 64))), false
	}
	return PolicyDecision{}, true
}

// toolRule is the classification row for a tool call: built from the
// call itself, since no table can list every server's tools.
func toolRule(op Operation) OperationRule {
	r := OperationRule{Name: OpToolCall, Permission: PermMCPCall, Class: AlwaysConfirm, Target: "tool",
		Why: "calls a tool that is not named exactly"}
	t := op.Tool
	if !namesATool(t) {
		return r
	}
	r.Class, r.Why = ClassifyTool(*t)
	r.Why = fmt.Sprintf("calls %s of the MCP server %s: %s", t.Tool, t.Server, r.Why)
	r.ReadOnly = r.Class == AlwaysSafe
	r.Destructive = r.Class == AlwaysConfirm
	r.OpenWorld = true
	return r
}

// toolTarget is what a remembered answer about a tool call is keyed by:
// the server, the tool and its definition's hash. An answer never covers
// another tool, nor the same tool once its definition changes.
func toolTarget(op Operation) string {
	t := op.Tool
	if !namesATool(t) {
		return ""
	}
	return t.Server + "/" + t.Tool + "@" + t.Definition
}

// toolLabel names a tool call for a sentence: "the tool T of the MCP
// server S", its names escaped.
func toolLabel(t *ToolCall) string {
	if t == nil {
		return "an MCP tool call naming no tool"
	}
	return fmt.Sprintf("the tool %s of the MCP server %s", EscapeTerminal(Truncate(t.Tool, MaxToolNameLen)), EscapeTerminal(Truncate(t.Server, MaxToolServerLen)))
}

// ParseMCPToolRule checks one entry of capabilities.mcpTools: "server" (every
// tool of it) or "server/tool".
func ParseMCPToolRule(s string) error {
	server, tool, hasTool := strings.Cut(s, "/")
	if !ValidToolName(server, MaxToolServerLen) || hasTool && !ValidToolName(tool, MaxToolNameLen) {
		return Errorf(CodeInvalidProfile, "mcpTools entry %q must be SERVER or SERVER/TOOL, each letters, digits, '_', '-' or '.'", Truncate(s, 64))
	}
	return nil
}

// toolListed reports whether rules ("server", "server/tool") name the
// call's tool.
func toolListed(rules []string, t *ToolCall) bool {
	if t == nil {
		return false
	}
	return slices.Contains(rules, t.Server) || slices.Contains(rules, t.Server+"/"+t.Tool)
}
