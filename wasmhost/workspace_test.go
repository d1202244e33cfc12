package wasmhost

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// fsprobeWasm is testdata/fsprobe: it reads and writes files through WASI
// and imports nothing of the restricted API but input.
var fsprobeWasm = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("./" + filepath.Join("testdata", "fsprobe"))
})

// wsRun runs fsprobe under set with a workspace at dir, the agent's
// record installed in the store so the policy sees its set.
func wsRun(t *testing.T, f *fixture, set mediator.PermissionSet, dir, input string) Result {
	t.Helper()
	module, err := fsprobeWasm()
	if err != nil {
		t.Fatal(err)
	}
	rec := underSet("fsprobe", set, mediator.Capabilities{})
	if _, err := f.st.InstallAgent(context.Background(), rec.Profile, ""); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir, workspace.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	spec := f.spec(rec, module, input)
	spec.Workspace = ws
	res, err := sharedRuntime().Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestGuestWorkspace: a Go guest's os.ReadFile and os.WriteFile work on
// /workspace and nowhere else: the host's files, "..", and a link planted
// inside that points out all fail, and the canary outside is untouched.
// Each change is a workspace.write decision in the audit trail.
func TestGuestWorkspace(t *testing.T) {
	f := newFixture(t)
	base := t.TempDir()
	canary := filepath.Join(base, "canary.txt")
	os.WriteFile(canary, []byte("secret"), 0o600)
	dir := filepath.Join(base, "ws")
	os.MkdirAll(dir, 0o700)
	os.Symlink(canary, filepath.Join(dir, "planted"))
	res := wsRun(t, f, mediator.SetFilesystem, dir, strings.Join([]string{
		"write /workspace/a.txt hello", "read /workspace/a.txt", "ls /workspace",
		"read /etc/hostname", "read /workspace/../canary.txt", "read /workspace/../../" + canary,
		"read /workspace/planted", "write /workspace/planted owned", "write /workspace/../canary.txt owned",
		"write /tmp/x owned", "read " + canary,
	}, "\n"))
	if res.Status != "ok" {
		t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
	}
	for _, want := range []string{
		"write /workspace/a.txt: ok", `read /workspace/a.txt: "hello"`, "ls /workspace: a.txt,planted",
		"read /etc/hostname: error", "read /workspace/../canary.txt: error", "read /workspace/planted: error",
		"write /workspace/planted: error", "write /workspace/../canary.txt: error", "write /tmp/x: error",
		"read " + canary + ": error",
	} {
		if !strings.Contains(res.Output, want) {
			t.Errorf("output lacks %q:\n%s", want, res.Output)
		}
	}
	if b, _ := os.ReadFile(canary); string(b) != "secret" {
		t.Fatalf("the canary became %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "hello" {
		t.Fatalf("a.txt holds %q", b)
	}
	page, err := f.st.ListAudit(context.Background(), 0, 100, false)
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, r := range page.Records {
		if r.Operation.Name == mediator.OpWorkspaceWrite && r.Kind == mediator.AuditDecision {
			writes = append(writes, r.Operation.Method+" "+r.Operation.Path)
		}
	}
	if !strings.Contains(strings.Join(writes, ","), "create a.txt") || !strings.Contains(strings.Join(writes, ","), "write a.txt") {
		t.Fatalf("workspace.write records: %v", writes)
	}
	// Reads are decided and recorded too, one per open.
	var reads []string
	for _, r := range page.Records {
		if r.Operation.Name == mediator.OpWorkspaceRead && r.Kind == mediator.AuditDecision && r.Allowed {
			reads = append(reads, r.Operation.Path)
		}
	}
	if !slices.Contains(reads, "a.txt") {
		t.Fatalf("workspace.read records: %v", reads)
	}
	// The planted link the guest tried to read and write through was
	// refused by the workspace: each is a denial with its audit record.
	dp, err := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: "fsprobe", Code: mediator.CodePathNotAllowed})
	if err != nil {
		t.Fatal(err)
	}
	var planted int
	for _, d := range dp.Denials {
		if d.Context.Layer == "workspace" && d.Context.Details["path"] == "planted" && d.AuditSeq > 0 {
			planted++
		}
	}
	if planted < 2 {
		t.Fatalf("denials of the planted link: %+v", dp.Denials)
	}
}

// TestWorkspaceUnderSets: readonly reads and cannot write; a set with no
// workspace cannot even link the file functions.
func TestWorkspaceUnderSets(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("given"), 0o600)
	res := wsRun(t, f, mediator.SetReadonly, dir, "read /workspace/in.txt\nwrite /workspace/out.txt x")
	if res.Status != "ok" || !strings.Contains(res.Output, `read /workspace/in.txt: "given"`) || !strings.Contains(res.Output, "write /workspace/out.txt: error") {
		t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
		t.Fatal("readonly wrote the workspace")
	}
	res = wsRun(t, f, mediator.SetNetworkAPI, dir, "read /workspace/in.txt")
	if res.Code != mediator.CodePermissionOutsideSet || !strings.Contains(res.Error, "needs read access to the session's workspace") {
		t.Fatalf("%s %s", res.Code, res.Error)
	}
}

// TestTwoSessionsApart: two runs at once, in two sessions' workspaces,
// each sees only its own file.
func TestTwoSessionsApart(t *testing.T) {
	f := newFixture(t)
	base := t.TempDir()
	var wg sync.WaitGroup
	out := make([]string, 2)
	for i, name := range []string{"s1", "s2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := wsRun(t, f, mediator.SetFilesystem, filepath.Join(base, name), "write /workspace/"+name+".txt mine\nls /workspace")
			out[i] = res.Output
		}()
	}
	wg.Wait()
	if !strings.Contains(out[0], "ls /workspace: s1.txt\n") || !strings.Contains(out[1], "ls /workspace: s2.txt\n") {
		t.Fatalf("%q\n%q", out[0], out[1])
	}
}

// TestWorkspaceNeedsGrants: the workspace is reached only through the
// workspace.read and workspace.write grants. An agent whose profile asks
// for nothing and names no set (so its set is inferred from its own
// imports, which reach for files) is refused at link time, naming the
// grant it lacks; one granted only workspace.read reads and changes
// nothing. The person's files are untouched either way.
func TestWorkspaceNeedsGrants(t *testing.T) {
	module, err := fsprobeWasm()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		set    mediator.PermissionSet
		grants []mediator.Permission
		code   mediator.Code
		want   []string
	}{
		{"asks for nothing", "", nil, mediator.CodeImportNotGranted, nil},
		{"granted reading only", mediator.SetFilesystem, []mediator.Permission{mediator.PermWorkspaceRead}, "",
			[]string{`read /workspace/mine.txt: "the person's"`, "write /workspace/mine.txt: error", "write /workspace/new.txt: error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			dir := t.TempDir()
			mine := filepath.Join(dir, "mine.txt")
			os.WriteFile(mine, []byte("the person's"), 0o600)
			prof := mediator.Profile{AgentID: "asks-nothing", PermissionSet: tc.set, Permissions: mediator.Permissions{Required: tc.grants}}
			if err := prof.Normalize(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.InstallAgent(context.Background(), prof, ""); err != nil {
				t.Fatal(err)
			}
			rec, err := f.st.Agent(context.Background(), prof.AgentID)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := workspace.Open(dir, workspace.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close()
			spec := f.spec(rec, module, "read /workspace/mine.txt\nwrite /workspace/mine.txt owned\nwrite /workspace/new.txt x")
			spec.Workspace = ws
			res, err := sharedRuntime().Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != tc.code {
				t.Fatalf("code %q (%s); want %q\n%s", res.Code, res.Error, tc.code, res.Output)
			}
			if tc.code != "" {
				if !strings.Contains(res.Error, "the workspace.read grant") {
					t.Fatalf("the refusal does not name the grant: %s", res.Error)
				}
				page, err := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: prof.AgentID})
				if err != nil || len(page.Denials) != 1 || page.Denials[0].Code != tc.code || page.Denials[0].Permission != string(mediator.PermWorkspaceRead) {
					t.Fatalf("denials %+v, %v", page.Denials, err)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			if tc.code == "" {
				// The writes the read-only mount refused are denials of
				// the grant the person did not give.
				page, err := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: prof.AgentID, Code: mediator.CodePermissionNotGranted})
				if err != nil || len(page.Denials) == 0 || page.Denials[0].Context.Details["decidedBy"] != "grant:workspace.write" || page.Denials[0].AuditSeq == 0 {
					t.Fatalf("denials of the writes %+v, %v", page.Denials, err)
				}
			}
			if b, _ := os.ReadFile(mine); string(b) != "the person's" {
				t.Fatalf("the person's file became %q", b)
			}
			if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
				t.Fatal("a file was created")
			}
		})
	}
}
