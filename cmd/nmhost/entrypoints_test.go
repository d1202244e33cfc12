package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/store"
	"github.com/agentgate/nmhost/mediator"
)

// entryAgent logs three lines and then fetches a host its profile does
// not list: every entry point must record the same aggregate of the
// three log calls and the same refused fetch.
var entryAgent = []wasmCall{
	{"log", []string{"one"}}, {"log", []string{"two"}}, {"log", []string{"three"}},
	{"fetch", []string{`{"url":"http://blocked.test/"}`}},
}

var entryProfile = map[string]any{"agentId": "entry", "permissions": map[string]any{"required": []string{"console.log", "network.fetch"}},
	"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{"allowed.test"}}}

// TestSameAgentSameRecordsEveryEntryPoint runs one agent through each
// entry point (the native host's run-agent, nmhost run, the viewer's /ws
// run, a workflow task) on a data dir of its own and asserts the same
// audit records: kinds, operations, codes, decidedBy, and the aggregate's
// count and hash. The cost per call of each is BenchmarkLogCallEntryPoints.
func TestSameAgentSameRecordsEveryEntryPoint(t *testing.T) {
	module := assemble(entryAgent)
	files := t.TempDir()
	modPath, profPath := filepath.Join(files, "entry.wasm"), filepath.Join(files, "entry.json")
	prof, _ := json.Marshal(entryProfile)
	if os.WriteFile(modPath, module, 0o600) != nil || os.WriteFile(profPath, prof, 0o600) != nil {
		t.Fatal("cannot write the agent")
	}
	install := func(t *testing.T, dir string) {
		p := start(t, dir)
		if r := call(t, p.Client, "install-agent", map[string]any{"module": base64.StdEncoding.EncodeToString(module), "profile": entryProfile}); !r.Success {
			t.Fatalf("install: %+v", r)
		}
		p.Cmd.Process.Kill()
		p.Cmd.Wait()
	}
	cases := []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"native host run-agent", func(t *testing.T, dir string) {
			p := start(t, dir)
			r := call(t, p.Client, "run-agent", map[string]any{"agentId": "entry"})
			var res struct{ Status string }
			if !r.Success || r.Decode(&res) != nil || res.Status != "ok" {
				t.Fatalf("run-agent: %+v", r)
			}
		}},
		{"nmhost run", func(t *testing.T, dir string) {
			cmd := exec.Command(nmhostBin, "run", "--profile", profPath, modPath)
			cmd.Env = hostEnv(dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("nmhost run: %v\n%s", err, out)
			}
		}},
		{"/ws run", func(t *testing.T, dir string) {
			c := dialServeWS(t, dir)
			if err := c.WriteJSON(map[string]any{"type": "run", "runId": "r", "agentId": "entry"}); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			for {
				var msg struct {
					Type   string
					Result *struct{ Status string }
					Error  string
				}
				if err := c.ReadJSON(&msg); err != nil {
					t.Fatal(err)
				}
				switch msg.Type {
				case "result":
					if msg.Result == nil || msg.Result.Status != "ok" {
						t.Fatalf("/ws result %+v", msg)
					}
					return
				case "error":
					t.Fatal(msg.Error)
				}
			}
		}},
		{"workflow task", func(t *testing.T, dir string) {
			p := start(t, dir)
			r := call(t, p.Client, "run-workflow", map[string]any{"workflow": json.RawMessage(`{"id": "entry", "tasks": [{"id": "t", "run": {"agentId": "entry"}}]}`)})
			var sum struct{ Status string }
			if !r.Success || r.Decode(&sum) != nil || sum.Status != "ok" {
				t.Fatalf("run-workflow: %+v", r)
			}
		}},
	}
	want := []string{ // sorted, as agentRecordShapes lists them
		fmt.Sprintf("aggregate log allowed class:ALWAYS_SAFE allowed=true count=3 bytes=11 sha256=%s", mediator.AggregateHash("one", "two", "three")),
		fmt.Sprintf("decision network.fetch %s allowed=false", mediator.CodeHostNotAllowed),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := newDataDir(t)
			install(t, dir)
			c.run(t, dir)
			got := agentRecordShapes(t, dir, "entry")
			if !slices.Equal(got, want) {
				t.Fatalf("records of the run\n got %q\nwant %q", got, want)
			}
		})
	}
}

// agentRecordShapes lists the agent's log and fetch records as
// "kind operation code [decidedBy] allowed=..." lines, sorted: what must
// not depend on the entry point. A fetch the ACL refused names its rule
// in decidedBy with the host's text, so only its code is compared.
func agentRecordShapes(t *testing.T, dir, agent string) []string {
	t.Helper()
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.ListAudit(context.Background(), 0, store.MaxDenialPage, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range page.Records {
		if r.Operation.AgentID != agent || (r.Operation.Name != mediator.OpLog && r.Operation.Name != mediator.OpNetworkFetch) {
			continue
		}
		line := fmt.Sprintf("%s %s %s", r.Kind, r.Operation.Name, r.Code)
		if r.Operation.Name == mediator.OpLog {
			line += " " + r.DecidedBy
		}
		line += fmt.Sprintf(" allowed=%v", r.Allowed)
		if a := r.Aggregate; a != nil {
			line += fmt.Sprintf(" count=%d bytes=%d sha256=%s", a.Count, a.Bytes, a.SHA256)
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}
