package wasmhost

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
)

// memprobeWasm is testdata/memprobe: it writes and searches the session's
// memory and imports nothing else of the restricted API but input.
var memprobeWasm = sync.OnceValues(func() ([]byte, error) {
	return testwasm.Build("./" + filepath.Join("testdata", "memprobe"))
})

// memAgent installs memprobe under set, with memory required (granted)
// or only optional (not granted).
func memAgent(t *testing.T, f *fixture, id string, set mediator.PermissionSet, granted bool) mediator.AgentRecord {
	t.Helper()
	p := mediator.Profile{AgentID: id, PermissionSet: set, PermissionSource: mediator.SetSourceManual}
	if granted {
		p.Permissions.Required = []mediator.Permission{mediator.PermMemory}
	} else {
		p.Permissions.Optional = []mediator.Permission{mediator.PermMemory}
	}
	if err := p.Normalize(); err != nil {
		t.Fatal(err)
	}
	rec, err := f.st.InstallAgent(context.Background(), p, "")
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// memRun runs memprobe as rec in session at level with the store's memory.
func memRun(t *testing.T, f *fixture, rec mediator.AgentRecord, session, level, input string) Result {
	t.Helper()
	module, err := memprobeWasm()
	if err != nil {
		t.Fatal(err)
	}
	spec := f.spec(rec, module, input)
	spec.SessionID, spec.SessionLevel, spec.Memory = session, level, f.st
	res, err := sharedRuntime().Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestMemoryUnderTheSessionMatrix: memory_write needs a high session and
// memory_search a medium one; below, the call is refused with
// session_level, the agent's output says "permission denied" for the
// function, and the denial is the run's. Each row is a fresh session.
func TestMemoryUnderTheSessionMatrix(t *testing.T) {
	f := newFixture(t)
	rec := memAgent(t, f, "mem", mediator.SetFilesystem, true)
	if res := memRun(t, f, rec, "seeded", mediator.LevelHigh, "write notes,ops the deploy key rotates on mondays"); !strings.Contains(res.Output, "memory_write: id 1\n") {
		t.Fatalf("seeding: %s %s\n%s", res.Status, res.Error, res.Output)
	}
	for _, tc := range []struct {
		name, level, input string
		want               []string
		code               mediator.Code // the denial's, "" none
	}{
		{"search at high", mediator.LevelHigh, "search 0 deploy", []string{"memory_search: 1 results", "hit 1 id 1 tags notes,ops: the [deploy] key"}, ""},
		{"search at medium", mediator.LevelMedium, "search 5 MONDAYS key", []string{"memory_search: 1 results", "rotates on [mondays]"}, ""},
		{"search at low", mediator.LevelLow, "search 0 deploy", []string{"memory_search: error session_level: permission denied: memory.search needs a medium"}, mediator.CodeSessionLevel},
		{"write at high", mediator.LevelHigh, "write - second note", []string{"memory_write: id 2"}, ""},
		{"write at medium", mediator.LevelMedium, "write - third note", []string{"memory_write: error session_level: permission denied: memory.write needs a high"}, mediator.CodeSessionLevel},
		{"write at low", mediator.LevelLow, "write - third note", []string{"memory_write: error session_level: permission denied"}, mediator.CodeSessionLevel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := memRun(t, f, rec, "seeded", tc.level, tc.input)
			if res.Status != "ok" {
				t.Fatalf("%s %s\n%s", res.Status, res.Error, res.Output)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, res.Output)
				}
			}
			if tc.code == "" {
				if len(res.Denials) != 0 {
					t.Fatalf("denials %+v", res.Denials)
				}
				return
			}
			if len(res.Denials) != 1 || res.Denials[0].Code != tc.code || res.Denials[0].Permission != string(mediator.PermMemory) {
				t.Fatalf("denials %+v; want one %s of memory", res.Denials, tc.code)
			}
		})
	}
	if n, _ := f.st.MemoryEntries(context.Background(), "seeded"); n != 2 {
		t.Fatalf("the session holds %d entries; want the 2 allowed writes", n)
	}
}

// TestMemoryLinking: memory_* link only when memory is granted and inside
// the run's permission set; otherwise the run is refused at link time
// with the code that says which.
func TestMemoryLinking(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name    string
		set     mediator.PermissionSet
		granted bool
		code    mediator.Code
	}{
		{"granted, filesystem", mediator.SetFilesystem, true, ""},
		{"granted, mcp-standard", mediator.SetMCPStandard, true, ""},
		{"not granted", mediator.SetFilesystem, false, mediator.CodeImportNotGranted},
		{"outside readonly", mediator.SetReadonly, true, mediator.CodePermissionOutsideSet},
		{"outside network-api", mediator.SetNetworkAPI, true, mediator.CodePermissionOutsideSet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec mediator.AgentRecord
			if tc.set == mediator.SetFilesystem || tc.set == mediator.SetMCPStandard {
				rec = memAgent(t, f, "link-"+string(tc.set)+map[bool]string{true: "-g"}[tc.granted], tc.set, tc.granted)
			} else {
				// A profile cannot require what its set leaves out; the
				// record holds the grant anyway, as one granted before the
				// set was narrowed would.
				rec = underSet("link-"+string(tc.set), tc.set, mediator.Capabilities{})
			}
			res := memRun(t, f, rec, "linking", mediator.LevelHigh, "search 0 anything")
			if res.Code != tc.code {
				t.Fatalf("code %q (%s); want %q\n%s", res.Code, res.Error, tc.code, res.Output)
			}
			if tc.code != "" && (len(res.Denials) != 1 || res.Denials[0].Context.Layer != "link" || !strings.Contains(res.Error, "memory_")) {
				t.Fatalf("denials %+v, error %s", res.Denials, res.Error)
			}
		})
	}
}

// TestMemorySessionsApartAtRunTime: a run reaches its own session's memory
// only; the same agent in another session finds nothing of the first.
func TestMemorySessionsApartAtRunTime(t *testing.T) {
	f := newFixture(t)
	rec := memAgent(t, f, "mem", mediator.SetFilesystem, true)
	memRun(t, f, rec, "one", mediator.LevelHigh, "write - the secret is tangerine")
	memRun(t, f, rec, "two", mediator.LevelHigh, "write - the public word is lemon")
	for _, tc := range []struct{ session, query, want string }{
		{"one", "tangerine", "memory_search: 1 results"},
		{"two", "tangerine", "memory_search: 0 results"},
		{"two", "secret", "memory_search: 0 results"},
		{"one", "lemon", "memory_search: 0 results"},
	} {
		t.Run(tc.session+"/"+tc.query, func(t *testing.T) {
			res := memRun(t, f, rec, tc.session, mediator.LevelMedium, "search 0 "+tc.query)
			if !strings.Contains(res.Output, tc.want+"\n") {
				t.Fatalf("output %q; want %q", res.Output, tc.want)
			}
		})
	}
	// A run with no session has no memory: the policy allows the call,
	// and the call itself says why it cannot go on.
	module, _ := memprobeWasm()
	spec := f.spec(rec, module, "search 0 tangerine")
	spec.SessionLevel, spec.Memory = mediator.LevelMedium, f.st
	res, err := sharedRuntime().Run(context.Background(), spec)
	if err != nil || !strings.Contains(res.Output, "memory_search: error unknown_session") {
		t.Fatalf("%v %q", err, res.Output)
	}
}

// TestInspectMemoryAgent: a module that imports memory_* alone infers
// the smallest set that allows memory, filesystem, with full confidence.
func TestInspectMemoryAgent(t *testing.T) {
	module, err := memprobeWasm()
	if err != nil {
		t.Fatal(err)
	}
	in, err := Inspect(module)
	if err != nil {
		t.Fatal(err)
	}
	if in.Set != mediator.SetFilesystem || in.Confidence != 1 || in.Pure {
		t.Fatalf("inspection %+v", in.SetInference)
	}
}

// TestMemoryHostileRequests: a memory call's JSON is read exactly, and
// what the store's bounds refuse is refused after the policy allowed the
// call: bad_request or too_large for the guest, nothing written.
func TestMemoryHostileRequests(t *testing.T) {
	f := newFixture(t)
	rec := memAgent(t, f, "mem", mediator.SetFilesystem, true)
	for _, tc := range []struct {
		name, input string
		code        mediator.Code
	}{
		{"not JSON", `rawwrite text=hello`, mediator.CodeBadRequest},
		{"empty", `rawwrite `, mediator.CodeBadRequest},
		{"unknown member", `rawwrite {"text":"x","session":"other"}`, mediator.CodeBadRequest},
		{"member named otherwise", `rawwrite {"Text":"x"}`, mediator.CodeBadRequest},
		{"member twice", `rawwrite {"text":"x","text":"y"}`, mediator.CodeBadRequest},
		{"trailing data", `rawwrite {"text":"x"} {}`, mediator.CodeBadRequest},
		{"tags not strings", `rawwrite {"text":"x","tags":[1]}`, mediator.CodeBadRequest},
		{"hostile tag", `rawwrite {"text":"x","tags":["a\" OR \"b"]}`, mediator.CodeBadRequest},
		{"text too large", `rawwrite {"text":"` + strings.Repeat("a", 4097) + `"}`, mediator.CodeTooLarge},
		{"search for another session", `rawsearch {"query":"x","session_id":"other"}`, mediator.CodeBadRequest},
		{"fractional limit", `rawsearch {"query":"x","limit":1.5}`, mediator.CodeBadRequest},
		{"limit too high", `rawsearch {"query":"x","limit":51}`, mediator.CodeBadRequest},
		{"negative limit", `rawsearch {"query":"x","limit":-1}`, mediator.CodeBadRequest},
		{"hostile query", `rawsearch {"query":"\" OR NEAR(x* col:y"}`, ""},
		{"good write", `rawwrite {"text":"fine","tags":["a"]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := f.st.MemoryEntries(context.Background(), "hostile")
			res := memRun(t, f, rec, "hostile", mediator.LevelHigh, tc.input)
			if res.Status != "ok" {
				t.Fatalf("%s %s", res.Status, res.Error)
			}
			if tc.code == "" {
				if !strings.Contains(res.Output, ": status ") || strings.Contains(res.Output, "status -") {
					t.Fatalf("output %q", res.Output)
				}
				return
			}
			if !strings.Contains(res.Output, `status -`) || !strings.Contains(res.Output, `"code":"`+string(tc.code)+`"`) {
				t.Fatalf("output %q; want a %s failure", res.Output, tc.code)
			}
			if after, _ := f.st.MemoryEntries(context.Background(), "hostile"); after != before {
				t.Fatalf("a refused request wrote: %d -> %d", before, after)
			}
		})
	}
}
