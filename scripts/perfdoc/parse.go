package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Module is the prefix the output's pkg lines carry; rows name packages
// relative to it.
const Module = "github.com/agentgate/nmhost"

// Output is one run of bench.sh: its configuration (the first value of each
// key; pkg is per benchmark) and every benchmark's values by unit, each
// unit's values in the order the runs printed them.
type Output struct {
	Config  map[string]string
	Results map[string]*Result // by Result.Key
	Order   []string           // keys, first seen first
}

// Result is one benchmark of one package across its runs.
type Result struct {
	Pkg, Name string // Name without "Benchmark" and the -GOMAXPROCS suffix
	Values    map[string][]float64
}

// Key names a result as rows do: "pkg Name".
func (r *Result) Key() string { return r.Pkg + " " + r.Name }

var (
	configLine = regexp.MustCompile(`^([a-z][^\sA-Z:]*): (.*)$`)
	procSuffix = regexp.MustCompile(`-[0-9]+$`)
)

// Parse reads `go test -bench` output. Lines that are neither benchmark
// nor configuration lines (PASS, ok, a test's log) are skipped; a
// benchmark line that does not have the format is an error, so a change
// in the output cannot quietly drop a figure.
func Parse(r io.Reader) (*Output, error) {
	out := &Output{Config: map[string]string{}, Results: map[string]*Result{}}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := configLine.FindStringSubmatch(line); m != nil {
			if m[1] == "pkg" {
				pkg = strings.TrimPrefix(strings.TrimPrefix(m[2], Module), "/")
			} else if _, seen := out.Config[m[1]]; !seen {
				out.Config[m[1]] = m[2]
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "Benchmark") || len(f[0]) == len("Benchmark") {
			continue
		}
		if len(f) < 4 || len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: a benchmark line is a name, an iteration count and value-unit pairs: %q", n, line)
		}
		if _, err := strconv.ParseUint(f[1], 10, 64); err != nil {
			return nil, fmt.Errorf("line %d: iteration count %q: %v", n, f[1], err)
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		res := out.Results[pkg+" "+name]
		if res == nil {
			res = &Result{Pkg: pkg, Name: name, Values: map[string][]float64{}}
			out.Results[res.Key()] = res
			out.Order = append(out.Order, res.Key())
		}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q of %s: %v", n, f[i], f[i+1], err)
			}
			res.Values[f[i+1]] = append(res.Values[f[i+1]], v)
		}
	}
	return out, sc.Err()
}

// Median is the median of r's values in unit, and false when it has none.
func (r *Result) Median(unit string) (float64, bool) {
	if r == nil || len(r.Values[unit]) == 0 {
		return 0, false
	}
	v := slices.Sorted(slices.Values(r.Values[unit]))
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}
