package mcpserve_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/app/mcpgw"
	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/mediator"
)

func reference(t *testing.T, bin string, args ...string) mcpgw.Server {
	return mcpgw.Server{Command: testkit.MCPServer(t, bin), Args: args}
}

// TestReferenceFilesystemServer: the reference filesystem server's real
// destructive tools, through the gateway: nothing before the grant, reads
// without a prompt, a write only when the person allows it, a move the
// administrator blocks never made; every call on the record, the
// arguments by hash.
func TestReferenceFilesystemServer(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	canary := filepath.Join(root, "canary.txt")
	if err := os.WriteFile(canary, []byte("untouched"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello from the workspace"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, setup{servers: map[string]mcpgw.Server{"fs": reference(t, "mcp-server-filesystem", ws)},
		admin: `{"blockedMcpTools": ["fs/move_file"]}`})
	names := g.toolNames(t)
	for _, want := range []string{"fs.read_text_file", "fs.write_file", "fs.move_file", "fs.list_directory"} {
		if !slices.Contains(names, want) {
			t.Fatalf("the gateway lists %q; %s missing", names, want)
		}
	}
	target := filepath.Join(ws, "new.txt")
	write := map[string]any{"path": target, "content": "written through the gateway"}

	if _, code := g.call(t, "fs.write_file", write); code != mediator.CodePermissionNotGranted {
		t.Fatalf("before the grant: %s; want permission_not_granted", code)
	}
	if _, err := g.core.Grant(t.Context(), "mcp-client", mediator.PermMCPCall); err != nil {
		t.Fatal(err)
	}
	if text, code := g.call(t, "fs.read_text_file", map[string]any{"path": filepath.Join(ws, "hello.txt")}); code != "" || !strings.Contains(text, "hello from the workspace") {
		t.Fatalf("read: %s %q", code, text)
	}
	if n := len(g.person.prompts()); n != 0 {
		t.Fatalf("a read asked the person (%d prompts)", n)
	}

	g.person.set(mediator.AnswerDeny)
	if _, code := g.call(t, "fs.write_file", write); code != mediator.CodeUserDenied {
		t.Fatalf("denied write: %s", code)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the denied write made the file: %v", err)
	}
	p := g.person.prompts()
	if len(p) != 1 || p[0].Op.Tool.Server != "fs" || p[0].Op.Tool.Tool != "write_file" || p[0].Target == "" {
		t.Fatalf("prompts %+v", p)
	}

	g.person.set(mediator.AnswerAllowOnce)
	if _, code := g.call(t, "fs.write_file", write); code != "" {
		t.Fatalf("allowed write: %s", code)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "written through the gateway" {
		t.Fatalf("the allowed write: %q %v", b, err)
	}

	if _, code := g.call(t, "fs.move_file", map[string]any{"source": target, "destination": canary}); code != mediator.CodeAdminPolicy {
		t.Fatalf("blocked move: %s", code)
	}
	if b, _ := os.ReadFile(canary); string(b) != "untouched" {
		t.Fatalf("the canary was touched: %q", b)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the blocked move moved the file: %v", err)
	}

	// The trail: a decision before each call that ran, its outcome after,
	// the arguments as a hash only.
	var decided, executed int
	for _, r := range g.toolRecords(t) {
		if r.Operation.Tool == nil || r.Operation.Tool.ArgsSHA256 == "" || r.Operation.Tool.Args != "" {
			t.Fatalf("record %d does not carry the arguments by hash alone: %+v", r.Seq, r.Operation.Tool)
		}
		switch r.Kind {
		case mediator.AuditDecision:
			decided++
		case mediator.AuditExecuted:
			executed++
		}
	}
	if decided != 5 || executed != 2 { // not granted, read, denied, allowed, blocked; read and write ran
		t.Fatalf("%d decisions and %d outcomes recorded; want 5 and 2", decided, executed)
	}
	for _, code := range []mediator.Code{mediator.CodePermissionNotGranted, mediator.CodeUserDenied, mediator.CodeAdminPolicy} {
		g.hasDenial(t, code)
	}
	if rep, err := g.core.Audit().VerifyAudit(t.Context()); err != nil || !rep.OK {
		t.Fatalf("audit verify: %+v %v", rep, err)
	}
}

// TestReferenceMemoryAndEverythingServers: the other reference servers
// list and answer through the gateway: a knowledge-graph read runs, a
// change asks; the everything server's echo answers once allowed.
func TestReferenceMemoryAndEverythingServers(t *testing.T) {
	mem := reference(t, "mcp-server-memory")
	mem.Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}
	g := newGateway(t, setup{servers: map[string]mcpgw.Server{"memory": mem, "everything": reference(t, "mcp-server-everything")}, grant: true})
	if _, code := g.call(t, "memory.read_graph", map[string]any{}); code != "" {
		t.Fatalf("read_graph: %s", code)
	}
	g.person.set(mediator.AnswerDeny)
	if _, code := g.call(t, "memory.create_entities", map[string]any{"entities": []any{map[string]any{"name": "x", "entityType": "t", "observations": []string{}}}}); code != mediator.CodeUserDenied {
		t.Fatalf("create_entities: %s", code)
	}
	g.person.set(mediator.AnswerAllowOnce)
	if text, code := g.call(t, "everything.echo", map[string]any{"message": "hi there"}); code != "" || !strings.Contains(text, "hi there") {
		t.Fatalf("echo: %s %q", code, text)
	}
}
