package host

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/norace"
	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/wasmhost"
)

// busy keeps every core busy until the test ends: a loaded laptop.
func busy(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1e6; i++ {
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// TestInstalledAgentsFirstRunDoesNotCompile: compiling is not running. A
// Go agent installed through install-agent is compiled at install, in the
// background, into the on-disk cache; its first run, on a machine whose
// cores are all busy, with an executionTimeout far shorter than a compile
// takes there, runs without compiling and succeeds. A later host process
// finds the module in the disk cache.
//
// Under the race detector it runs in a copy of this test binary built
// without it (norace.Moved): its cost there was wazero compiling the Go
// agent, 22 s of CPU of the test's 23, code that is not this project's
// and that nothing else runs beside. The same install, background compile
// and runs stay under the detector in TestInstallCompilesInTheBackground,
// with a module that compiles in milliseconds.
func TestInstalledAgentsFirstRunDoesNotCompile(t *testing.T) {
	if norace.Moved(t, "1") {
		return
	}
	module, err := fsprobe()
	if err != nil {
		t.Fatal(err)
	}
	installedRunsDoNotCompile(t, module, map[string]any{
		"agentId": "fresh-go", "permissionSet": "filesystem", "permissions": map[string]any{"required": []string{"workspace.read", "workspace.write"}},
		"capabilities": map[string]any{"executionTimeout": 2000}}, "write /workspace/a.txt hi")
}

// TestInstallCompilesInTheBackground is TestInstalledAgentsFirstRunDoesNotCompile
// with a module of one empty function, under the race detector when the
// suite has it: the install's background compile, the check that it is
// done, and the runs in this process and another.
func TestInstallCompilesInTheBackground(t *testing.T) {
	types := testwasm.Section(1, testwasm.Vec([][]byte{{0x60, 0x00, 0x00}}))
	funcs := testwasm.Section(3, testwasm.Vec([][]byte{{0x00}}))
	exports := testwasm.Section(7, testwasm.Vec([][]byte{append(testwasm.Name("_start"), 0x00, 0x00)}))
	code := testwasm.Section(10, testwasm.Vec([][]byte{{0x02, 0x00, 0x0b}}))
	module := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range [][]byte{types, funcs, exports, code} {
		module = append(module, s...)
	}
	installedRunsDoNotCompile(t, module, map[string]any{
		"agentId": "fresh-go", "permissions": map[string]any{"required": []string{"console.log"}},
		"capabilities": map[string]any{"executionTimeout": 2000}}, "")
}

// installedRunsDoNotCompile installs module with profile through
// install-agent, waits for the install's compile, and runs it with input
// (agent "fresh-go") on a machine whose cores are busy: the run must not
// compile; then a run in another host process over the same cache finds
// it on disk.
func installedRunsDoNotCompile(t *testing.T, module []byte, profile map[string]any, input string) {
	t.Helper()
	cache := t.TempDir()
	rt, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	h := newHarness(t, true, func(o *Options) { o.Runtime = rt })
	var rec mediator.AgentRecord
	h.mustOK("install-agent", map[string]any{"module": base64.StdEncoding.EncodeToString(module), "profile": profile}, &rec)
	deadline := time.Now().Add(5 * time.Minute)
	for !rt.Compiled(rec) {
		if time.Now().After(deadline) {
			t.Fatal("the module was not compiled at install")
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	// The cores go busy for the runs, not for the compile at install: what
	// is checked is that a run on a loaded machine does not compile. Busy
	// loops beside the install's compile under the race detector made it
	// take 60 to 130 s and took both cores from the packages testing
	// beside this one.
	busy(t)
	run := func(h *harness) wasmhost.Result {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		r, err := h.client.Call(ctx, "run-agent", map[string]any{"agentId": "fresh-go", "input": input})
		if err != nil || !r.Success {
			t.Fatalf("run-agent: %v %+v", err, r)
		}
		var res wasmhost.Result
		if err := json.Unmarshal(r.Data, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(h); res.Status != "ok" || res.Compile != wasmhost.CompileMemory {
		t.Fatalf("first run after install: %s (%s), compile %q", res.Status, res.Error, res.Compile)
	}

	// Another host process: a new runtime over the same cache.
	rt2, err := wasmhost.New(context.Background(), wasmhost.Config{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close(context.Background())
	h2 := newHarnessOn(t, h, rt2)
	if res := run(h2); res.Status != "ok" || res.Compile != wasmhost.CompileDisk {
		t.Fatalf("a run in another process: %s (%s), compile %q", res.Status, res.Error, res.Compile)
	}

	// That a run with the cache removed compiles fresh, says so and still
	// runs is wasmhost's TestRunSaysWhereItsCompileCameFrom, with a module
	// that compiles in milliseconds: a third compile of this Go agent under
	// the race detector would cost the suite a minute and show nothing more.
}
