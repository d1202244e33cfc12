//go:build unix

package wasmhost

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// runInWorkspace runs sc's guest in a fresh store, with its workspace at
// base/data/ws, a canary beside it (base/data/escape.txt, where
// "../escape.txt" points) and one two levels up (base/nmhost.db, where
// "../../nmhost.db" points). It returns the run and the agent's denials,
// and fails the test if anything outside the workspace changed or
// appeared.
func runInWorkspace(t *testing.T, sc siteScenario) (Result, []mediator.Denial) {
	t.Helper()
	id, build := "wasinames", wasinamesWasm
	if sc.fsprobe {
		id, build = "fsprobe", fsprobeWasm
	}
	module, err := build()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	base := t.TempDir()
	dir := filepath.Join(base, "data", "ws")
	must(t, os.MkdirAll(dir, 0o700))
	canaries := map[string]string{filepath.Join(base, "data", "escape.txt"): "canary", filepath.Join(base, "nmhost.db"): "the host's store"}
	for p, text := range canaries {
		must(t, os.WriteFile(p, []byte(text), 0o600))
	}
	if sc.plant != nil {
		sc.plant(t, dir)
	}
	set := sc.set
	if set == "" {
		set = mediator.SetFilesystem
	}
	rec := underSet(id, set, mediator.Capabilities{})
	if _, err := f.st.InstallAgent(context.Background(), rec.Profile, ""); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(dir, sc.limits)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	spec := f.spec(rec, module, sc.input)
	spec.Workspace = ws
	rt := sc.rt
	if rt == nil {
		rt = sharedRuntime()
	}
	res, err := rt.Run(context.Background(), spec)
	if err != nil || res.Code != sc.status {
		t.Fatalf("run: %v %s %s; want %q\n%s", err, res.Status, res.Error, sc.status, res.Output)
	}
	for p, text := range canaries {
		if b, err := os.ReadFile(p); err != nil || string(b) != text {
			t.Errorf("%s outside the workspace became %q (%v)", p, b, err)
		}
	}
	for _, p := range []string{filepath.Join(base, "x"), filepath.Join(base, "data", "x"), filepath.Join(base, "data", "d"), "/etc/escape.txt"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was made outside the workspace", p)
		}
	}
	page, err := f.st.ListDenials(context.Background(), store.DenialFilter{AgentID: id, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	audit, err := f.st.ListAudit(context.Background(), 0, 500, false)
	if err != nil {
		t.Fatal(err)
	}
	// Each denial's audit record is in the trail: a refusal with its code.
	for _, d := range page.Denials {
		found := false
		for _, r := range audit.Records {
			found = found || r.Seq == d.AuditSeq && !r.Allowed && r.Code == d.Code
		}
		if !found {
			t.Errorf("denial %d (%s) has no refusal record in the audit trail (seq %d)", d.ID, d.Code, d.AuditSeq)
		}
	}
	return res, page.Denials
}

// TestGuestEscapesLeaveATrace: each way a guest names a file outside its
// workspace, through Go's os package (whose WASI layer cleans the name
// and finds no directory for it) or straight to WASI relative to the
// workspace (which refuses a name that climbs out), is refused, nothing
// outside is read or changed, and the refusal is a path_not_allowed
// denial naming the path, with its audit record.
func TestGuestEscapesLeaveATrace(t *testing.T) {
	for _, tc := range []struct {
		input, path, op string
	}{
		{"create ../escape.txt owned", "/escape.txt", "create"},
		{"create /etc/escape.txt owned", "/etc/escape.txt", "create"},
		{"create a/../../x owned", "/x", "create"},
		{"open ../../nmhost.db", "/nmhost.db", "open"},
		{"open /etc/hostname", "/etc/hostname", "open"},
		{"open /workspace/../escape.txt", "/escape.txt", "open"},
		{"at-create ../escape.txt", "../escape.txt", "create"},
		{"at-create /etc/escape.txt", "/etc/escape.txt", "create"},
		{"at-create a/../../x", "a/../../x", "create"},
		{"at-open ../../nmhost.db", "../../nmhost.db", "open"},
		{"at-open /etc/hostname", "/etc/hostname", "open"},
		{"at-stat ../escape.txt", "../escape.txt", "stat"},
		{"at-mkdir ../d", "../d", "mkdir"},
		{"at-unlink ../escape.txt", "../escape.txt", "unlink"},
		{"at-rmdir ../d", "../d", "rmdir"},
		{"at-rename a ../escape.txt", "../escape.txt", "rename"},
	} {
		t.Run(tc.input, func(t *testing.T) {
			res, denials := runInWorkspace(t, siteScenario{input: tc.input})
			if !strings.Contains(res.Output, ": error ") {
				t.Fatalf("not refused: %s", res.Output)
			}
			if len(denials) != 1 {
				t.Fatalf("%d denials; want 1: %+v\n%s", len(denials), denials, res.Output)
			}
			d := denials[0]
			if d.Code != mediator.CodePathNotAllowed || d.Context.Layer != "workspace" || d.Context.Details["path"] != tc.path ||
				d.Context.Details["operation"] != tc.op || d.AuditSeq == 0 {
				t.Fatalf("denial %+v; want path_not_allowed of %s %q with its audit record", d, tc.op, tc.path)
			}
		})
	}
}

// TestRefusalsInALoopEndAtTheCallLimit: a guest that asks for a name
// outside its workspace again and again gets one denial per refusal up to
// the run's call limit, then its run ends with call_limit: recording each
// refusal gives a loop no way to flood the denial log and the trail.
func TestRefusalsInALoopEndAtTheCallLimit(t *testing.T) {
	const limit = 10
	rt, err := New(context.Background(), Config{MaxCallsPerRun: limit, CacheDir: testwasm.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	for _, input := range []string{"repeat 1000 at-open ../escape.txt", "repeat 1000 open /etc/hostname", "repeat 1000 at-create \"a\\x1bb\""} {
		t.Run(input, func(t *testing.T) {
			_, denials := runInWorkspace(t, siteScenario{input: input, rt: rt, status: mediator.CodeCallLimit})
			// The guest's one call of input counts too.
			if len(denials) != limit-1 {
				t.Fatalf("%d denials; want %d, one per refusal up to the limit", len(denials), limit-1)
			}
		})
	}
}
