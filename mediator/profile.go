package mediator

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Permission names an API family an agent may be granted.
type Permission string

// The permissions the host knows. Anything else is unknown and denied.
const (
	PermConsoleLog     Permission = "console.log"
	PermPageRead       Permission = "page.read"
	PermPageWrite      Permission = "page.write"
	PermClipboardRead  Permission = "clipboard.read"
	PermClipboardWrite Permission = "clipboard.write"
	PermNetworkFetch   Permission = "network.fetch"
	PermNotifications  Permission = "notifications"
	// PermMemory: the session's memory (memory_write, memory_search),
	// further bounded by the session level.
	PermMemory Permission = "memory"
	// PermShell: the session shell (shell), a fixed set of commands
	// written in Go over the workspace; it never starts a process.
	PermShell Permission = "shell"
	// PermWorkspaceRead: read the session's workspace (the WASI file
	// functions that read, the shell's reading commands). Without it no
	// directory is mounted for the module and no shell command runs.
	PermWorkspaceRead Permission = "workspace.read"
	// PermWorkspaceWrite: change the session's workspace (create, write,
	// truncate, rename, remove). It is used together with workspace.read:
	// a workspace is mounted read-write only when both are granted.
	PermWorkspaceWrite Permission = "workspace.write"
)

// knownPermissions lists every permission in a stable order.
var knownPermissions = []Permission{
	PermConsoleLog, PermPageRead, PermPageWrite, PermClipboardRead,
	PermClipboardWrite, PermNetworkFetch, PermNotifications, PermMemory, PermShell,
	PermWorkspaceRead, PermWorkspaceWrite, PermMCPCall,
}

// ParsePermission returns p when it is a known permission. Process spawning
// and foreign-function access ("run", "ffi") are not permissions
// at all, so they are unknown like any other name.
func ParsePermission(s string) (Permission, error) {
	p := Permission(s)
	if slices.Contains(knownPermissions, p) {
		return p, nil
	}
	return "", Errorf(CodeUnknownPermission, "permission %q is not known", Truncate(s, 64))
}

// DOM access levels (capabilities.domAccess).
const (
	DOMNone     = "none"
	DOMReadOnly = "read-only"
	DOMFull     = "full"
)

// Limits that bound what a profile may ask for.
const (
	MaxAgentIDLen       = 128
	MaxAllowedHosts     = 10000
	MaxAllowedHostLen   = 270      // "!https://", a 253-byte name, "*." and ":65535" (netproxy.MaxEntryLen)
	DefaultMaxMemory    = 16 << 20 // bytes; enough for a small Go or Rust guest
	MaxMaxMemory        = 4 << 30  // bytes; wasm32's whole address space
	DefaultTimeoutMS    = 30_000   // ms; long enough for a slow fetch, short enough to notice a hang
	MaxTimeoutMS        = 600_000  // ms; ten minutes
	MaxProfileBytes     = 1 << 20
	maxDescriptionRunes = 1000
)

// Profile is an agent's identity and what it asks for, in the protocol's shape (docs/protocol.md).
// Units: MaxMemory in bytes, ExecutionTimeout in milliseconds.
type Profile struct {
	AgentID      string       `json:"agentId"`
	Name         string       `json:"name,omitempty"`
	Version      string       `json:"version,omitempty"`
	Description  string       `json:"description,omitempty"`
	Author       string       `json:"author,omitempty"`
	ModuleSHA256 string       `json:"moduleSha256,omitempty"` // pins the module; a mismatch is refused
	Permissions  Permissions  `json:"permissions"`
	Capabilities Capabilities `json:"capabilities"`
	// PermissionSet is the ceiling on the agent's grants (permsets.go).
	// A profile may name it (source manual); without one, install infers
	// it and stores the source and the confidence with it.
	PermissionSet PermissionSet `json:"permissionSet,omitempty"`
	// PermissionSource is SetSourceManual or SetSourceInferred.
	PermissionSource string `json:"permissionSource,omitempty"`
	// PermissionConfidence is an inferred set's confidence, 0 to 1.
	PermissionConfidence float64 `json:"permissionConfidence,omitempty"`
	// Runtime is what the agent's code is: "" or "wasm" (a WebAssembly
	// module, run by the host) or "python" (UTF-8 Python source, run by
	// the extension's sandbox, every call still decided by the host).
	Runtime string `json:"runtime,omitempty"`
	// Audit asks the audit trail for more than the host's settings give:
	// a strict durability, a record per call (audit_level.go). It can
	// never ask for less.
	Audit *AuditRequest `json:"audit,omitempty"`
}

// Clone returns a copy of p that shares no memory with it: a profile kept
// for decisions can be handed out without a caller's edit reaching the
// next decision. TestProfileCloneSharesNothing fails when a field that
// refers to memory is added and not copied here.
func (p Profile) Clone() Profile {
	c := p
	c.Permissions.Required = slices.Clone(p.Permissions.Required)
	c.Permissions.Optional = slices.Clone(p.Permissions.Optional)
	c.Capabilities.AllowedHosts = slices.Clone(p.Capabilities.AllowedHosts)
	c.Capabilities.MCPTools = slices.Clone(p.Capabilities.MCPTools)
	if p.Audit != nil {
		a := *p.Audit
		c.Audit = &a
	}
	return c
}

// The runtimes a profile may name.
const (
	RuntimeWasm   = "wasm"
	RuntimePython = "python"
)

// IsPython reports whether the agent's code is Python source.
func (p Profile) IsPython() bool { return p.Runtime == RuntimePython }

// Permissions is the profile's permission request.
type Permissions struct {
	Required []Permission `json:"required"`
	Optional []Permission `json:"optional,omitempty"`
}

// Capabilities are execution limits and ACLs. The zero value is the most
// restrictive: no network, no hosts, default memory and time, no DOM.
type Capabilities struct {
	NetworkAccess    bool     `json:"networkAccess"`
	AllowedHosts     []string `json:"allowedHosts"`
	MaxMemory        int64    `json:"maxMemory"`
	ExecutionTimeout int64    `json:"executionTimeout"`
	DOMAccess        string   `json:"domAccess"`
	// MCPTools names the MCP tools an agent granted mcp.call may call:
	// "server" (each tool of the server the person configured under that
	// name) or "server/tool". Empty: none.
	MCPTools []string `json:"mcpTools,omitempty"`
}

// Timeout returns the execution timeout as a duration.
func (c Capabilities) Timeout() time.Duration {
	return time.Duration(c.ExecutionTimeout) * time.Millisecond
}

// plainID reports whether id matches ^[A-Za-z0-9][A-Za-z0-9._-]*$. A
// loop rather than a regexp: every decision checks the id, and the
// regexp cost a third of a log call's decision.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return id != ""
}

// ValidAgentID reports whether id may name an agent: 1 to 128 characters of
// ASCII letters, digits, '.', '_' and '-', starting with a letter or digit.
// The id reaches file names, log lines and SQL parameters, so it is kept plain.
// A loop, not a regular expression: a fetch checks its agent's id more than
// once, and matching one cost microseconds.
func ValidAgentID(id string) error {
	if id == "" || len(id) > MaxAgentIDLen || !plainID(id) {
		return Errorf(CodeInvalidProfile, "agentId %q must be 1-%d characters of letters, digits, '.', '_' or '-', starting with a letter or digit", Truncate(id, 64), MaxAgentIDLen)
	}
	return nil
}

// ParseProfile decodes and normalises an untrusted profile. Unknown,
// repeated and case-variant fields are refused (DecodeExact), so a misspelt
// "allowedhosts" cannot silently mean "none" and a second "NetworkAccess"
// cannot override what a reader sees.
// The allowedHosts entries are only bounded here; their syntax belongs to
// netproxy, which the caller must also run.
func ParseProfile(data []byte) (Profile, error) {
	if len(data) > MaxProfileBytes {
		return Profile{}, Errorf(CodeTooLarge, "profile is %d bytes; the limit is %d", len(data), MaxProfileBytes)
	}
	var p Profile
	if err := DecodeExact(data, &p); err != nil {
		return Profile{}, &Error{Code: CodeInvalidProfile, Msg: "profile is not valid JSON of the expected shape (names match exactly; no unknown, repeated or case-variant members)", Err: err}
	}
	// Only the host infers: a profile that claims an inferred set, or a
	// confidence, would be vouching for itself.
	if p.PermissionSource != "" && p.PermissionSource != SetSourceManual || p.PermissionConfidence != 0 {
		return Profile{}, Errorf(CodeInvalidProfile, "permissionSource and permissionConfidence are set by the host; a profile may only name a permissionSet")
	}
	if err := p.Normalize(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

// Normalize validates p and fills defaults in place: duplicate permissions
// are dropped and sorted, domAccess defaults to "none", zero limits become the
// defaults. It is idempotent.
func (p *Profile) Normalize() error {
	if err := ValidAgentID(p.AgentID); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"name", p.Name}, {"version", p.Version}, {"description", p.Description}, {"author", p.Author},
	} {
		if len([]rune(f.v)) > maxDescriptionRunes || strings.ContainsFunc(f.v, isControl) {
			return Errorf(CodeInvalidProfile, "%s is longer than %d characters or holds control characters", f.name, maxDescriptionRunes)
		}
	}
	switch p.Runtime {
	case "", RuntimeWasm, RuntimePython:
	default:
		return Errorf(CodeInvalidProfile, "runtime %q must be wasm or python", Truncate(p.Runtime, 32))
	}
	if err := p.Audit.validate(); err != nil {
		return err
	}
	if p.Audit != nil && *p.Audit == (AuditRequest{}) {
		p.Audit = nil // asks nothing: one normal form
	}
	if p.ModuleSHA256 != "" && !IsHexSHA256(p.ModuleSHA256) {
		return Errorf(CodeInvalidProfile, "moduleSha256 must be 64 lowercase hex digits")
	}
	var err error
	if p.Permissions.Required, err = normalizePermissions(p.Permissions.Required); err != nil {
		return fmt.Errorf("permissions.required: %w", err)
	}
	if p.Permissions.Optional, err = normalizePermissions(p.Permissions.Optional); err != nil {
		return fmt.Errorf("permissions.optional: %w", err)
	}
	if err := p.normalizeSet(); err != nil {
		return err
	}
	c := &p.Capabilities
	if len(c.AllowedHosts) > MaxAllowedHosts {
		return Errorf(CodeInvalidProfile, "allowedHosts has %d entries; the limit is %d", len(c.AllowedHosts), MaxAllowedHosts)
	}
	if c.AllowedHosts == nil {
		c.AllowedHosts = []string{}
	}
	for _, h := range c.AllowedHosts {
		if len(h) == 0 || len(h) > MaxAllowedHostLen {
			return Errorf(CodeInvalidAllowedHost, "allowedHosts entry %q is empty or longer than %d bytes", Truncate(h, 64), MaxAllowedHostLen)
		}
	}
	if len(c.MCPTools) > MaxMCPToolsRules {
		return Errorf(CodeInvalidProfile, "mcpTools has %d entries; the limit is %d", len(c.MCPTools), MaxMCPToolsRules)
	}
	for _, t := range c.MCPTools {
		if err := ParseMCPToolRule(t); err != nil {
			return err
		}
	}
	switch {
	case c.MaxMemory == 0:
		c.MaxMemory = DefaultMaxMemory
	case c.MaxMemory < 0 || c.MaxMemory > MaxMaxMemory:
		return Errorf(CodeInvalidProfile, "maxMemory %d is outside 1..%d bytes", c.MaxMemory, int64(MaxMaxMemory))
	}
	switch {
	case c.ExecutionTimeout == 0:
		c.ExecutionTimeout = DefaultTimeoutMS
	case c.ExecutionTimeout < 0 || c.ExecutionTimeout > MaxTimeoutMS:
		return Errorf(CodeInvalidProfile, "executionTimeout %d is outside 1..%d ms", c.ExecutionTimeout, MaxTimeoutMS)
	}
	switch c.DOMAccess {
	case "":
		c.DOMAccess = DOMNone
	case DOMNone, DOMReadOnly, DOMFull:
	default:
		return Errorf(CodeInvalidProfile, "domAccess %q must be none, read-only or full", Truncate(c.DOMAccess, 32))
	}
	return nil
}

// Requires reports whether perm is in permissions.required.
func (p Profile) Requires(perm Permission) bool {
	return slices.Contains(p.Permissions.Required, perm)
}

func normalizePermissions(in []Permission) ([]Permission, error) {
	out := make([]Permission, 0, len(in))
	for _, p := range in {
		if _, err := ParsePermission(string(p)); err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// IsHexSHA256 reports whether s is a SHA-256 in lowercase hex, the form
// module hashes take everywhere.
func IsHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

func isControl(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }

// normalizeSet checks the permission set fields: a named set is one of
// the six, a manual set says so, an inferred one carries its confidence,
// and a set bounds the permissions the profile requires.
func (p *Profile) normalizeSet() error {
	switch {
	case p.PermissionSet == "" && (p.PermissionSource != "" || p.PermissionConfidence != 0):
		return Errorf(CodeInvalidProfile, "permissionSource and permissionConfidence need a permissionSet")
	case p.PermissionSet == "":
		return nil
	}
	if _, err := ParsePermissionSet(string(p.PermissionSet)); err != nil {
		return err
	}
	switch p.PermissionSource {
	case "":
		p.PermissionSource = SetSourceManual
	case SetSourceManual, SetSourceInferred:
	default:
		return Errorf(CodeInvalidProfile, "permissionSource %q must be manual or inferred", Truncate(p.PermissionSource, 32))
	}
	if p.PermissionSource == SetSourceManual && p.PermissionConfidence != 0 {
		return Errorf(CodeInvalidProfile, "a manual permissionSet carries no confidence")
	}
	if !(p.PermissionConfidence >= 0 && p.PermissionConfidence <= 1) {
		return Errorf(CodeInvalidProfile, "permissionConfidence must be between 0 and 1")
	}
	if perm, out := OutsideSet(p.PermissionSet, p.Permissions.Required); out {
		return Errorf(CodePermissionOutsideSet, "permissions.required: %s", OutsideSetMessage(p.PermissionSet, perm))
	}
	return nil
}
