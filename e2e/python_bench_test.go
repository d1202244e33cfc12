//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/testwasm"
)

// pyCalls makes n awaited page calls and prints the mean time of one, as
// Python sees it: worker, sandbox, extension page, service worker, host
// (policy, audit record), browser-call to the page, and back.
const pyCalls = `import time
n = int(agent_input)
t = time.perf_counter()
for _ in range(n):
    await restricted_api.getPageText()
print(f"per-call-ms {(time.perf_counter() - t) * 1000 / n:.3f}")
`

var perCall = regexp.MustCompile(`per-call-ms ([0-9.]+)`)

// pySyncCalls is pyCalls without await: each call suspends Python
// through JSPI until the host's answer comes.
const pySyncCalls = `import time
n = int(agent_input)
t = time.perf_counter()
for _ in range(n):
    restricted_api.getPageText()
print(f"per-call-ms {(time.perf_counter() - t) * 1000 / n:.3f}")
`

// bareLoad is a bare Pyodide load, nothing of ours in it, in the sandbox
// page (opened as a tab) where the runs' workers live: a blob worker
// imports pyodide.mjs and calls loadPyodide. It is what every run paid
// before issue 25, and what a cold run pays still.
const bareLoad = `new Promise((resolve) => {
  const base = location.href.replace(/sandbox\.html.*$/, '');
  const src = "const t0 = performance.now(); import(" + JSON.stringify(base + 'pyodide/pyodide.mjs') + ").then(m => m.loadPyodide({indexURL: " +
    JSON.stringify(base + 'pyodide/') + ", jsglobals: {}})).then(() => postMessage(performance.now() - t0), (e) => postMessage(-1))";
  const w = new Worker(URL.createObjectURL(new Blob([src], {type: 'text/javascript'})));
  w.onmessage = (e) => { w.terminate(); resolve(e.data); };
})`

// BenchmarkPythonAgent: run with -run '^$' -bench PythonAgent -benchtime 1x
// for a browser whose first Python run is the first of its life. It
// reports, from the click on Run to the agent's first line (askedMs): the
// first run (its Pyodide loaded in the popup's warm-up or for the run),
// and a warm run (the pool's loaded Pyodide; a fresh worker all the same);
// beside them a bare Pyodide load in the sandbox page; and one mediated
// getPageText from Python (awaited and not) and from a WebAssembly module
// on the same page.
func BenchmarkPythonAgent(b *testing.B) {
	ext := extensionPage(b)
	installPython(b, ext, pythonProfile("bench-py", "read-only", []string{"page.read"}), pyCalls)
	installPython(b, ext, pythonProfile("bench-py-sync", "read-only", []string{"page.read"}), pySyncCalls)
	_, tabID := openTestPage(b, ext)
	run := func(agent, input string) (askedMs, runMs float64, out string) {
		status, out, timings := runPythonInPopup(b, tabID, agent, input, nil)
		if status != "ok" {
			b.Fatalf("%s:\n%s", status, out)
		}
		var tm struct{ AskedMs, RunMs float64 }
		json.Unmarshal([]byte(timings), &tm)
		b.Logf("%s %s: %s", agent, input, timings)
		return tm.AskedMs, tm.RunMs, out
	}
	callMs := func(out string) float64 {
		m := perCall.FindStringSubmatch(out)
		if m == nil {
			b.Fatalf("no per-call time:\n%s", out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	for range b.N {
		asked, runMs, _ := run("bench-py", "1")
		b.ReportMetric(asked, "first-start-ms")
		b.ReportMetric(runMs, "first-run-ms")
		waitPoolReady(b, ext)
		asked, runMs, out := run("bench-py", "50")
		b.ReportMetric(asked, "warm-start-ms")
		b.ReportMetric(runMs, "warm-run-ms")
		b.ReportMetric(callMs(out), "python-call-ms")
		waitPoolReady(b, ext)
		_, _, out = run("bench-py-sync", "50")
		b.ReportMetric(callMs(out), "python-sync-call-ms")
		// After the runs: the bare load competes with nothing of ours.
		waitPoolReady(b, ext)
		b.ReportMetric(bareLoadMs(b), "bare-pyodide-load-ms")
		b.ReportMetric(wasmCallMs(b, tabID), "wasm-call-ms")
	}
}

// wasmCallMs is one getPageText of a WebAssembly module through the
// popup's run: the difference between 51 calls and 1, over 50.
func wasmCallMs(b *testing.B, tabID int) float64 {
	module, err := testwasm.Probe()
	if err != nil {
		b.Fatal(err)
	}
	ext := page(b, extURL("options.html"))
	installAgent(b, ext, map[string]any{"agentId": "bench-wasm", "permissions": map[string]any{"required": []string{"console.log", "page.read", "page.write", "clipboard.read", "clipboard.write", "network.fetch"}},
		"capabilities": map[string]any{"domAccess": "read-only", "executionTimeout": 60000}}, module)
	dur := func(n int) float64 {
		r := hostCall(b, ext, "run-agent", map[string]any{"agentId": "bench-wasm", "tabId": tabID,
			"input": strings.TrimSuffix(strings.Repeat("text\n", n), "\n")})
		var d struct {
			Status     string
			DurationMs float64
		}
		if err := json.Unmarshal(r.Data, &d); err != nil || d.Status != "ok" {
			b.Fatalf("run-agent: %s %s %s", r.Code, r.Error, r.Data)
		}
		return d.DurationMs
	}
	dur(1) // compile and cache the module
	return (dur(51) - dur(1)) / 50
}

// bareLoadMs measures bareLoad in a sandbox page of its own. A sandboxed
// page opened as a tab may not have its execution context yet when the
// first evaluation comes: that evaluation is made again.
func bareLoadMs(b *testing.B) float64 {
	sb := page(b, extURL("sandbox.html"))
	for attempt := 0; ; attempt++ {
		c, cancel := context.WithTimeout(sb, 60*time.Second)
		ms, err := evalErr[float64](c, bareLoad)
		cancel()
		if err == nil {
			return ms
		}
		if attempt == 5 || !strings.Contains(err.Error(), "execution context") {
			b.Fatalf("bare load: %v", err)
		}
	}
}

// extensionPage opens the options page once the extension answers there:
// in a browser this young the first load may come before the extension's.
func extensionPage(b *testing.B) context.Context {
	for range 20 {
		ext := page(b, extURL("options.html"))
		if ok, _ := evalErr[bool](ext, `typeof chrome !== 'undefined' && !!chrome.runtime?.sendMessage`); ok {
			return ext
		}
		time.Sleep(250 * time.Millisecond)
	}
	b.Fatal("the options page never became an extension page")
	return nil
}
