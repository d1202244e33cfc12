package main

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/sample.table.md from testdata/sample.txt")

func parseFile(t *testing.T, name string) *Output {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTableOfTheSample: the table and the list of benchmarks it does not
// show, for a sample of bench.sh's output (three runs whose medians' ratio
// differs from the median of the runs' own ratios, a log line, a new
// sub-benchmark, rows the sample lacks), are the committed markdown.
func TestTableOfTheSample(t *testing.T) {
	out := parseFile(t, "testdata/sample.txt")
	got := Table(out) + "\n" + Also(out)
	if *update {
		if err := os.WriteFile("testdata/sample.table.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/sample.table.md")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the sample's table is\n%s\nwant (testdata/sample.table.md)\n%s", got, want)
	}
}

// TestCommittedPageIsGenerated: docs/performance.md is what perfdoc makes
// of docs/performance.bench.txt, so neither the page nor the generator
// can change without the other.
func TestCommittedPageIsGenerated(t *testing.T) {
	got, err := Doc(parseFile(t, "../../docs/performance.bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("docs/performance.md is not what perfdoc makes of docs/performance.bench.txt: edit scripts/perfdoc/template.md or rows.go, then run `go run ./scripts/perfdoc` at the repository's root")
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, in, err string
		key, unit     string
		values        []float64
	}{
		{name: "a result", in: "pkg: github.com/agentgate/nmhost/shell\nBenchmarkShellLsR/shell-2 \t 3\t 45300000 ns/op\t 1.06 x-baseline\n",
			key: "shell ShellLsR/shell", unit: "x-baseline", values: []float64{1.06}},
		{name: "runs gather in order", in: "BenchmarkA-8 1 3 ns/op\nBenchmarkA-8 1 1 ns/op\nBenchmarkA-8 1 2 ns/op\n",
			key: " A", unit: "ns/op", values: []float64{3, 1, 2}},
		{name: "without a GOMAXPROCS suffix", in: "BenchmarkFetch/2B-tmpfs 1 7 ns/op\n", key: " Fetch/2B-tmpfs", unit: "ns/op", values: []float64{7}},
		{name: "a package outside the module keeps its path", in: "pkg: example.com/x\nBenchmarkA-2 1 7 ns/op\n", key: "example.com/x A", unit: "ns/op", values: []float64{7}},
		{name: "log lines and verdicts are skipped", in: "PASS\nok  \tx\t1s\n--- BENCH: BenchmarkA-2\n    a_test.go:1: Benchmark lines look like this\nBenchmark\n", key: ""},
		{name: "a value without its unit", in: "BenchmarkA-2 1 7 ns/op 3\n", err: "value-unit pairs"},
		{name: "no values", in: "BenchmarkA-2 1\n", err: "value-unit pairs"},
		{name: "an iteration count that is no count", in: "BenchmarkA-2 x 7 ns/op\n", err: "iteration count"},
		{name: "a negative iteration count", in: "BenchmarkA-2 -1 7 ns/op\n", err: "iteration count"},
		{name: "a value that is no number", in: "BenchmarkA-2 1 seven ns/op\n", err: "value \"seven\""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Parse(strings.NewReader(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Parse: %v, want an error saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.key == "" {
				if len(out.Results) != 0 {
					t.Fatalf("results %v, want none", out.Order)
				}
				return
			}
			r := out.Results[c.key]
			if r == nil {
				t.Fatalf("no %q in %q", c.key, out.Order)
			}
			if got := r.Values[c.unit]; !slices.Equal(got, c.values) {
				t.Errorf("%s: %v, want %v", c.unit, got, c.values)
			}
		})
	}
}

func TestConfigKeepsTheFirstValue(t *testing.T) {
	out, err := Parse(strings.NewReader("cpu: mine\ncommand: bash scripts/bench.sh\ncpu: go test's\n"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Config["cpu"] != "mine" || out.Config["command"] != "bash scripts/bench.sh" {
		t.Errorf("config %v", out.Config)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		name   string
		values []float64
		want   float64
		ok     bool
	}{
		{"none", nil, 0, false},
		{"one", []float64{4}, 4, true},
		{"odd, unordered", []float64{9, 1, 5}, 5, true},
		{"even: the mean of the middle two", []float64{4, 1, 3, 2}, 2.5, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Result{Values: map[string][]float64{"ns/op": c.values}}
			got, ok := r.Median("ns/op")
			if got != c.want || ok != c.ok {
				t.Errorf("Median = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
			if !slices.Equal(r.Values["ns/op"], c.values) {
				t.Error("Median reordered the values")
			}
		})
	}
}

// TestTargets: a target is met when the median is within it, and not
// when it is past it by the smallest step.
func TestTargets(t *testing.T) {
	for _, c := range []struct {
		name, pkg, bench, want string
	}{
		{"a multiple at its target", "cmd/nmhost", "BenchmarkRoundTrip/sequential/baseline-2 1 100 ns/op\nBenchmarkRoundTrip/sequential/nmhost-2 1 125 ns/op\n", "| 1.25x | 1.25x: yes |"},
		{"a multiple past it", "cmd/nmhost", "BenchmarkRoundTrip/sequential/baseline-2 1 100 ns/op\nBenchmarkRoundTrip/sequential/nmhost-2 1 125.1 ns/op\n", "| 1.25x | 1.25x: no |"},
		{"a time at its bound", "workflow", "BenchmarkAuthorizeLayer10-2 1 1000000 ns/op\n", "| 1 ms |  | 1 ms: yes |"},
		{"a time past it", "workflow", "BenchmarkAuthorizeLayer10-2 1 1000001 ns/op\n", "| 1 ms |  | 1 ms: no |"},
		{"the benchmark's own bound", "wasmhost", "BenchmarkManyAgents-2 1 5 ns/op 230 peak-MiB 220 target-MiB\n", "| 230 MiB | 1.05x of the target | 220 MiB: no |"},
		{"a row without a target", "internal/store", "BenchmarkPolicy/AppendAudit-2 1 72000 ns/op\n", "| 72 µs |  |  |"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Parse(strings.NewReader("pkg: " + Module + "/" + c.pkg + "\n" + c.bench))
			if err != nil {
				t.Fatal(err)
			}
			if got := Table(out); !strings.Contains(got, c.want+"\n") {
				t.Errorf("table\n%s\nlacks %q", got, c.want)
			}
		})
	}
}

// TestDocRefusesWhatItCannotShow: a page from an output that lacks a row's
// benchmark or baseline, or does not say its command, is refused.
func TestDocRefusesWhatItCannotShow(t *testing.T) {
	full, err := os.ReadFile("../../docs/performance.bench.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, drop, err string }{
		{"a benchmark", "BenchmarkShellGrepR/shell-2", "shell ShellGrepR/shell"},
		{"a baseline", "BenchmarkFetch2B/baseline-2", "netproxy/agentfetch Fetch2B/baseline"},
		{"the command", "command:", "command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var kept []string
			for _, line := range strings.Split(string(full), "\n") {
				if !strings.HasPrefix(line, c.drop) {
					kept = append(kept, line)
				}
			}
			out, err := Parse(strings.NewReader(strings.Join(kept, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Doc(out); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Doc: %v, want an error naming %q", err, c.err)
			}
		})
	}
}

// TestRowsAreWhatBenchShRuns: every benchmark a row shows is run by
// scripts/bench.sh, in that package, and no row is there twice.
func TestRowsAreWhatBenchShRuns(t *testing.T) {
	sh, err := os.ReadFile("../bench.sh")
	if err != nil {
		t.Fatal(err)
	}
	runs := regexp.MustCompile(`(?m)^run \./(\S*?)/? '([^']+)'$`).FindAllStringSubmatch(string(sh), -1)
	if len(runs) < 10 {
		t.Fatalf("found %d run lines in bench.sh", len(runs))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.Bench] {
			t.Errorf("%s is in two rows", r.Bench)
		}
		seen[r.Bench] = true
		for _, k := range []string{r.Bench, r.Base} {
			if k == "" {
				continue
			}
			pkg, name, _ := strings.Cut(k, " ")
			top := "Benchmark" + strings.SplitN(name, "/", 2)[0]
			found := false
			for _, m := range runs {
				if m[1] == pkg && regexp.MustCompile(m[2]).MatchString(top) {
					found = true
				}
			}
			if !found {
				t.Errorf("row %q: bench.sh runs no %s in ./%s", r.What, top, pkg)
			}
		}
	}
}
