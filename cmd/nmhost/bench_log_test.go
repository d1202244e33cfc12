package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/agentgate/nmhost/internal/cli"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/testkit"
)

// entryLogCalls is how many log calls the entry-point benchmark's agent
// makes in one run: enough that a run's fixed cost (a round trip, a
// store opened, a module instantiated) is spread thin, as issue 23 asks.
const entryLogCalls = 9000

// logAgent is an agent whose _start logs "x" calls times (at least once)
// in a loop. A loop, not assemble's unrolled calls: 9,000 calls in one
// body would be past the compiler's body limit and run interpreted, which
// is not what a real agent's log call costs.
func logAgent(calls int32) []byte {
	body := []byte{0x01, 0x01, 0x7f} // one i32 local
	body = append(body, 0x41)
	body = append(body, sleb(calls)...)
	body = append(body, 0x21, 0x00, // local.set 0
		0x03, 0x40, // loop
		0x41, 0x00, 0x41, 0x01, 0x10, 0x00, 0x1a, // log(0, 1); drop
		0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, // local.get 0; i32.const 1; i32.sub; local.tee 0
		0x0d, 0x00, // br_if 0
		0x0b, 0x0b) // end loop, end
	types := [][]byte{{0x60, 2, 0x7f, 0x7f, 1, 0x7f}, {0x60, 0, 0}}
	imp := append(append(name("restricted_api"), name("log")...), 0x00, 0x00)
	exports := [][]byte{append(name("_start"), 0x00, 0x01), append(name("memory"), 0x02, 0x00)}
	seg := []byte{0x00, 0x41, 0x00, 0x0b, 0x01, 'x'}
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, vec(types))...)
	out = append(out, section(2, vec([][]byte{imp}))...)
	out = append(out, section(3, vec([][]byte{{0x01}}))...)
	out = append(out, section(5, vec([][]byte{{0x00, 0x01}}))...)
	out = append(out, section(7, vec(exports))...)
	out = append(out, section(10, vec([][]byte{append(uleb(uint32(len(body))), body...)}))...)
	out = append(out, section(11, vec([][]byte{seg}))...)
	return out
}

var logProfile = map[string]any{"agentId": "logger", "permissions": map[string]any{"required": []string{"console.log"}}}

// BenchmarkLogCallEntryPoints is one run of a 9,000-call log agent through
// each entry point, reported per call (ns/call) and as a multiple of the
// baseline: raw wazero running the same module with a host function that
// does nothing. "native host" is run-agent over the pipes of the real
// binary (the extension's path, the reply included); "ws run" is the
// viewer's /ws run through `nmhost serve` (output and result messages
// over the websocket); "nmhost run" is the
// command, in this process (the store opened, the agent installed, the
// module loaded from the data dir's compile cache, the run, the store
// closed and synced), without the cost of starting a process, which
// BenchmarkColdStart measures.
//
// Each entry point also runs the same agent making one call ("... 1
// call"), and the 9,000-call run reports its marginal cost per call,
// (ns/op - the one-call run's ns/op) / 8,999: what a call costs once the
// run's fixed cost (a store opened and an agent installed, for `nmhost
// run`) is set apart. The calls themselves take the same path through
// every entry point (internal/app/runs), so their marginal costs agree.
func BenchmarkLogCallEntryPoints(b *testing.B) {
	module, one := logAgent(entryLogCalls), logAgent(1)
	var base float64
	fixed := map[string]float64{} // an entry point's one-call run, ns
	perCall := func(b *testing.B, entry string) {
		ns := testkit.NsPerOp(b) / entryLogCalls
		b.ReportMetric(ns, "ns/call")
		if base > 0 {
			b.ReportMetric(ns/base, "x-baseline")
		}
		if f, ok := fixed[entry]; ok {
			b.ReportMetric((testkit.NsPerOp(b)-f)/(entryLogCalls-1), "marginal-ns/call")
		}
	}
	b.Run("baseline", func(b *testing.B) {
		ctx := context.Background()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().
			WithCompilationCache(wazero.NewCompilationCache()).WithCloseOnContextDone(true))
		defer rt.Close(ctx)
		_, err := rt.NewHostModuleBuilder("restricted_api").NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) { stack[0] = 0 }),
				[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).
			Export("log").Instantiate(ctx)
		if err != nil {
			b.Fatal(err)
		}
		compiled, err := rt.CompileModule(ctx, module)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			m, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(""))
			if err != nil {
				b.Fatal(err)
			}
			m.Close(ctx)
		}
		base = testkit.NsPerOp(b) / entryLogCalls
		b.ReportMetric(base, "ns/call")
	})
	b.Run("native host, 1 call", func(b *testing.B) {
		nativeHostRuns(b, one)
		fixed["native host"] = testkit.NsPerOp(b)
	})
	b.Run("native host", func(b *testing.B) {
		nativeHostRuns(b, module)
		perCall(b, "native host")
	})
	b.Run("ws run", func(b *testing.B) {
		dir := newDataDir(b)
		p := start(b, dir)
		if r := call(b, p.Client, "install-agent", map[string]any{"module": base64.StdEncoding.EncodeToString(module), "profile": logProfile}); !r.Success {
			b.Fatalf("install: %+v", r)
		}
		c := dialServeWS(b, dir)
		for b.Loop() {
			if err := c.WriteJSON(map[string]any{"type": "run", "runId": "r", "agentId": "logger"}); err != nil {
				b.Fatal(err)
			}
			for done := false; !done; {
				var msg struct {
					Type   string
					Result *struct{ Status string }
					Error  string
				}
				if err := c.ReadJSON(&msg); err != nil {
					b.Fatal(err)
				}
				switch msg.Type {
				case "result":
					if msg.Result == nil || msg.Result.Status != "ok" {
						b.Fatalf("/ws result %+v", msg)
					}
					done = true
				case "error":
					b.Fatal(msg.Error)
				}
			}
		}
		perCall(b, "ws run")
	})
	b.Run("nmhost run, 1 call", func(b *testing.B) {
		nmhostRuns(b, one)
		fixed["nmhost run"] = testkit.NsPerOp(b)
	})
	b.Run("nmhost run", func(b *testing.B) {
		nmhostRuns(b, module)
		perCall(b, "nmhost run")
	})
}

// nativeHostRuns runs module through run-agent of the real binary, b.N times.
func nativeHostRuns(b *testing.B, module []byte) {
	p := start(b, newDataDir(b))
	if r := call(b, p.Client, "install-agent", map[string]any{"module": base64.StdEncoding.EncodeToString(module), "profile": logProfile}); !r.Success {
		b.Fatalf("install: %+v", r)
	}
	ctx := context.Background()
	for b.Loop() {
		r, err := p.Call(ctx, "run-agent", map[string]any{"agentId": "logger"})
		var res struct{ Status string }
		if err != nil || !r.Success || r.Decode(&res) != nil || res.Status != "ok" {
			b.Fatalf("run-agent: %v %+v", err, r)
		}
	}
}

// nmhostRuns runs module through `nmhost run` in this process, b.N times.
func nmhostRuns(b *testing.B, module []byte) {
	dir := newDataDir(b)
	files := b.TempDir()
	modPath, profPath := filepath.Join(files, "logger.wasm"), filepath.Join(files, "profile.json")
	prof, _ := json.Marshal(logProfile)
	if os.WriteFile(modPath, module, 0o600) != nil || os.WriteFile(profPath, prof, 0o600) != nil {
		b.Fatal("cannot write the agent")
	}
	var stderr bytes.Buffer
	env := cli.Env{Args: []string{"run", "--profile", profPath, modPath}, Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr,
		Getenv: func(k string) string {
			if k == datadir.EnvVar {
				return dir
			}
			return os.Getenv(k)
		}}
	for b.Loop() {
		stderr.Reset()
		env.Stdout = &bytes.Buffer{}
		if code := cli.Main(env); code != 0 {
			b.Fatalf("nmhost run: exit %d: %s", code, stderr.String())
		}
	}
}
