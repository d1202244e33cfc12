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

// BenchmarkPythonAgent: run with -run '^$' -bench PythonAgent -benchtime 1x
// for a browser whose first Python run is the first of its life. It
// reports the first run (Pyodide's load included), a warm run (a new
// sandbox frame and worker per run: nothing is reused but the browser's
// caches), and one mediated getPageText from Python and from a
// WebAssembly module on the same page.
func BenchmarkPythonAgent(b *testing.B) {
	ext := extensionPage(b)
	installPython(b, ext, pythonProfile("bench-py", "read-only", []string{"page.read"}), pyCalls)
	_, tabID := openTestPage(b, ext)
	run := func(input string) (loadMs, runMs float64, out string) {
		status, out, timings := runPythonInPopup(b, tabID, "bench-py", input, nil)
		if status != "ok" {
			b.Fatalf("%s:\n%s", status, out)
		}
		var tm struct{ LoadMs, RunMs float64 }
		json.Unmarshal([]byte(timings), &tm)
		return tm.LoadMs, tm.RunMs, out
	}
	for range b.N {
		load, runMs, _ := run("1")
		b.ReportMetric(load, "first-load-ms")
		b.ReportMetric(runMs, "first-run-ms")
		load, runMs, out := run("50")
		b.ReportMetric(load, "warm-load-ms")
		b.ReportMetric(runMs, "warm-run-ms")
		m := perCall.FindStringSubmatch(out)
		if m == nil {
			b.Fatalf("no per-call time:\n%s", out)
		}
		py, _ := strconv.ParseFloat(m[1], 64)
		b.ReportMetric(py, "python-call-ms")
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
