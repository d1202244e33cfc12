package mediator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func yes() *bool { b := true; return &b }
func no() *bool  { b := false; return &b }

// TestClassifyTool: a tool's class comes from the person's rule, else from
// its name, which the server's annotations may only make more careful
// unless the person trusts the server.
func TestClassifyTool(t *testing.T) {
	for _, tc := range []struct {
		name string
		call ToolCall
		want SafetyClass
	}{
		{"a reading name", ToolCall{Tool: "read_file"}, AlwaysSafe},
		{"a listing name in camelCase", ToolCall{Tool: "listItems"}, AlwaysSafe},
		{"a writing name", ToolCall{Tool: "write_file"}, RequiresConfirmation},
		{"a name that says nothing", ToolCall{Tool: "echo"}, RequiresConfirmation},
		{"a deleting name", ToolCall{Tool: "delete_entities"}, AlwaysConfirm},
		{"a deleting name in camelCase", ToolCall{Tool: "deleteFile"}, AlwaysConfirm},
		{"a deleting word inside", ToolCall{Tool: "file-remove"}, AlwaysConfirm},
		{"a word that only contains a deleting one", ToolCall{Tool: "get_dropbox_link"}, AlwaysSafe},
		{"a hostile server calls its destructive tool read-only", ToolCall{Tool: "delete_file", Hints: ToolHints{ReadOnly: yes()}}, AlwaysConfirm},
		{"a hostile server calls a writing tool read-only", ToolCall{Tool: "write_file", Hints: ToolHints{ReadOnly: yes()}}, RequiresConfirmation},
		{"annotations make a reading name more careful", ToolCall{Tool: "get_thing", Hints: ToolHints{ReadOnly: no(), Destructive: yes()}}, AlwaysConfirm},
		{"MCP's default: not read-only is destructive", ToolCall{Tool: "get_thing", Hints: ToolHints{ReadOnly: no()}}, AlwaysConfirm},
		{"not read-only, not destructive", ToolCall{Tool: "get_thing", Hints: ToolHints{ReadOnly: no(), Destructive: no()}}, RequiresConfirmation},
		{"a trusted server's read-only hint lowers", ToolCall{Tool: "write_note", Trusted: true, Hints: ToolHints{ReadOnly: yes()}}, AlwaysSafe},
		{"a trusted server that says nothing", ToolCall{Tool: "write_note", Trusted: true}, RequiresConfirmation},
		{"the person's rule first", ToolCall{Tool: "delete_file", PersonClass: RequiresConfirmation, Hints: ToolHints{Destructive: yes()}}, RequiresConfirmation},
		{"an unknown person class is no rule", ToolCall{Tool: "delete_file", PersonClass: "ALWAYS_FINE"}, AlwaysConfirm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := ClassifyTool(tc.call); got != tc.want || why == "" {
				t.Fatalf("ClassifyTool(%+v) = %s (%q); want %s", tc.call, got, why, tc.want)
			}
		})
	}
}

// TestToolDefinitionHashCoversEveryPart: a change of name, description,
// schema or annotations, or a shift of bytes between them, is another
// definition.
func TestToolDefinitionHashCoversEveryPart(t *testing.T) {
	base := ToolDefinitionHash("t", "d", json.RawMessage(`{"type":"object"}`), nil)
	seen := map[string]string{base: "base"}
	for name, h := range map[string]string{
		"name":        ToolDefinitionHash("u", "d", json.RawMessage(`{"type":"object"}`), nil),
		"description": ToolDefinitionHash("t", "d.", json.RawMessage(`{"type":"object"}`), nil),
		"schema":      ToolDefinitionHash("t", "d", json.RawMessage(`{"type":"object","x":1}`), nil),
		"annotations": ToolDefinitionHash("t", "d", json.RawMessage(`{"type":"object"}`), json.RawMessage(`{"readOnlyHint":true}`)),
		"shifted":     ToolDefinitionHash("td", "", json.RawMessage(`{"type":"object"}`), nil),
	} {
		if prev, dup := seen[h]; dup {
			t.Fatalf("%s hashes as %s", name, prev)
		}
		seen[h] = name
	}
}

func toolOp(server, tool string, hints ToolHints) Operation {
	def := ToolDefinitionHash(tool, "", json.RawMessage(`{"type":"object"}`), nil)
	return Operation{AgentID: "a", Name: OpToolCall, Tool: &ToolCall{Server: server, Tool: tool, Definition: def, ArgsSHA256: ArgsHash([]byte("{}")), Hints: hints}}
}

// TestToolCallDecisions: the grant, the profile's mcpTools, the
// administrator's blocked tools, the session level and the class, each
// with its code and what decided it.
func TestToolCallDecisions(t *testing.T) {
	profile := func(tools ...string) string {
		b, err := json.Marshal(Profile{AgentID: "a", PermissionSet: SetMCPStandard, PermissionSource: SetSourceManual,
			Capabilities: Capabilities{MCPTools: tools}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	admin := NewAdmin(AdminPolicy{BlockedMCPTools: []string{"fs/move_file", "shell"}, Source: "admin file P"})
	granted := []Permission{PermMCPCall}
	bad := toolOp("fs", "read_file", ToolHints{})
	bad.Tool.Server = "fs\u202e"
	noDef := toolOp("fs", "read_file", ToolHints{})
	noDef.Tool.Definition = "abc"
	stray := Operation{AgentID: "a", Name: OpLog, Tool: &ToolCall{Server: "fs", Tool: "x"}}
	for _, tc := range []struct {
		name    string
		op      Operation
		profile string
		grants  []Permission
		level   string
		code    Code
		by      string
	}{
		{"a reading tool of a listed server", toolOp("fs", "read_file", ToolHints{}), profile("fs"), granted, "", CodeAllowed, "class:ALWAYS_SAFE"},
		{"a listed tool", toolOp("fs", "read_file", ToolHints{}), profile("fs/read_file"), granted, "", CodeAllowed, "class:ALWAYS_SAFE"},
		{"another tool of that server", toolOp("fs", "list_directory", ToolHints{}), profile("fs/read_file"), granted, "", CodeToolNotAllowed, "capability:mcpTools"},
		{"a server the profile does not list", toolOp("memory", "read_graph", ToolHints{}), profile("fs"), granted, "", CodeToolNotAllowed, "capability:mcpTools"},
		{"no mcpTools at all", toolOp("fs", "read_file", ToolHints{}), profile(), granted, "", CodeToolNotAllowed, "capability:mcpTools"},
		{"no grant", toolOp("fs", "read_file", ToolHints{}), profile("fs"), nil, "", CodePermissionNotGranted, "grant:mcp.call"},
		{"a writing tool asks", toolOp("fs", "write_file", ToolHints{}), profile("fs"), granted, "", CodeConfirmRequired, "class:REQUIRES_CONFIRMATION"},
		{"a destructive tool that says it reads", toolOp("fs", "delete_file", ToolHints{ReadOnly: yes()}), profile("fs"), granted, "", CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"a blocked tool", toolOp("fs", "move_file", ToolHints{}), profile("fs"), granted, "", CodeAdminPolicy, "admin:blockedMcpTools@admin_file_P"},
		{"a blocked server", toolOp("shell", "get_env", ToolHints{}), profile("shell"), granted, "", CodeAdminPolicy, "admin:blockedMcpTools@admin_file_P"},
		{"a low session", toolOp("fs", "read_file", ToolHints{}), profile("fs"), granted, LevelLow, CodeSessionLevel, "level:low"},
		{"a high session runs what asks", toolOp("fs", "write_file", ToolHints{}), profile("fs"), granted, LevelHigh, CodeAllowed, "level:high"},
		{"a high session still asks for what always confirms", toolOp("fs", "delete_file", ToolHints{}), profile("fs"), granted, LevelHigh, CodeConfirmRequired, "class:ALWAYS_CONFIRM"},
		{"a server name with a bidi override", bad, profile("fs"), granted, "", CodeBadRequest, "class:ALWAYS_CONFIRM"},
		{"a definition that is no hash", noDef, profile("fs"), granted, "", CodeBadRequest, "class:ALWAYS_CONFIRM"},
		{"a tool on another operation", stray, profile("fs"), granted, "", CodeBadRequest, "class:ALWAYS_SAFE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPolicy(&factsRecords{profile: tc.profile, grants: tc.grants}, PolicyOptions{Admin: func() Admin { return admin }})
			op := tc.op
			op.SessionLevel = tc.level
			d := p.Decide(context.Background(), op)
			if d.Code != tc.code || d.DecidedBy != tc.by {
				t.Fatalf("Decide = %s by %s: %s; want %s by %s", d.Code, d.DecidedBy, d.Reason, tc.code, tc.by)
			}
		})
	}
}

// TestToolAnswerIsPinnedToItsDefinition: a remembered answer is keyed by
// server, tool and definition, so a changed definition, another tool or
// another server is asked about again.
func TestToolAnswerIsPinnedToItsDefinition(t *testing.T) {
	a := toolOp("fs", "write_file", ToolHints{})
	changed := toolOp("fs", "write_file", ToolHints{})
	changed.Tool.Definition = ToolDefinitionHash("write_file", "now also uploads", json.RawMessage(`{"type":"object"}`), nil)
	other := toolOp("fs2", "write_file", ToolHints{})
	keys := map[string]bool{}
	for _, op := range []Operation{a, changed, other} {
		k := TargetKey(op)
		if k == "" || keys[k] {
			t.Fatalf("target key %q for %+v is empty or shared", k, op.Tool)
		}
		keys[k] = true
	}
	if !strings.HasPrefix(TargetKey(a), "fs/write_file@") {
		t.Fatalf("target key %q does not name the tool", TargetKey(a))
	}
	// The arguments are not part of the key: an answer is about the tool.
	b := a
	tc := *a.Tool
	tc.ArgsSHA256 = ArgsHash([]byte(`{"path":"other"}`))
	b.Tool = &tc
	if TargetKey(a) != TargetKey(b) {
		t.Fatal("the arguments changed the target key")
	}
}

// TestMCPToolRules: the profile's and the administrator's tool lists take
// SERVER or SERVER/TOOL of plain names only.
func TestMCPToolRules(t *testing.T) {
	for _, s := range []string{"fs", "fs/read_file", "a.b-c_d/x.y"} {
		if err := ParseMCPToolRule(s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	for _, s := range []string{"", "/", "fs/", "/x", "fs/a/b", "f s", "fs/\u202ex", "fs\x00", strings.Repeat("a", 65)} {
		if err := ParseMCPToolRule(s); CodeOf(err) != CodeInvalidProfile {
			t.Errorf("%q: %v; want invalid_profile", s, err)
		}
	}
	if err := (AdminPolicy{BlockedMCPTools: []string{"fs/"}}).Check(); err == nil {
		t.Fatal("a malformed blockedMcpTools entry was accepted")
	}
	if (AdminPolicy{BlockedMCPTools: []string{"fs"}}).Empty() {
		t.Fatal("a policy that blocks a server is empty")
	}
}
