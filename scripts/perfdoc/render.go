package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

//go:embed template.md
var pageTemplate string

// page is what template.md is filled with.
type page struct {
	Machine, Command, Commit, Note string
	Table, Also                    string
}

// Doc is docs/performance.md for out: every row must be in it, with its
// baseline, or the page would show a figure no run measured.
func Doc(out *Output) ([]byte, error) {
	var missing []string
	for _, r := range rows {
		for _, k := range []string{r.Bench, r.Base} {
			if k != "" && out.Results[k] == nil && !slices.Contains(missing, k) {
				missing = append(missing, k)
			}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the output lacks %s (does bench.sh still run it, under that name?)", strings.Join(missing, ", "))
	}
	p := page{
		Machine: machine(out.Config),
		Command: out.Config["command"],
		Commit:  out.Config["commit"],
		Note:    out.Config["note"],
		Table:   Table(out),
		Also:    Also(out),
	}
	if p.Command == "" {
		return nil, fmt.Errorf("the output does not say the command it came from (a `command:` line, which bench.sh writes)")
	}
	t, err := template.New("template.md").Option("missingkey=error").Parse(pageTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// machine is the machine line: the processor, cores, memory, disk, system
// and Go, those the output names.
func machine(c map[string]string) string {
	var parts []string
	add := func(format, key string) {
		if v := c[key]; v != "" {
			parts = append(parts, fmt.Sprintf(format, v))
		}
	}
	add("%s", "cpu")
	add("%s cores", "cores")
	add("%s of memory", "memory")
	add("%s", "disk")
	if c["goos"] != "" && c["goarch"] != "" {
		parts = append(parts, c["goos"]+"/"+c["goarch"])
	}
	add("%s", "go")
	return strings.Join(parts, ", ")
}

// Table is the rows out has, as a markdown table; a row whose benchmark
// the output lacks is left out (Doc refuses such an output).
func Table(out *Output) string {
	var b strings.Builder
	b.WriteString("| what | baseline | measured | multiple | target |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		res := out.Results[r.Bench]
		unit := r.Unit
		if unit == "" {
			unit = "ns/op"
		}
		v, ok := res.Median(unit)
		if !ok {
			continue
		}
		baseCell, multiple, ratio := "", "", 0.0
		if bv, ok := out.Results[r.Base].Median(unit); ok {
			ratio = v / bv
			baseCell = r.BaseIs + " " + format(bv, unit)
			multiple = times(ratio)
		}
		targetCell := ""
		switch t := r.Target; {
		case t.Ratio > 0 && ratio > 0:
			targetCell = strconv.FormatFloat(t.Ratio, 'g', -1, 64) + "x: " + yes(ratio <= t.Ratio)
		case t.Max > 0:
			targetCell = format(t.Max, unit) + ": " + yes(v <= t.Max)
		case t.Metric != "":
			if tv, ok := res.Median(t.Metric); ok {
				targetCell = format(tv, unit) + ": " + yes(v <= tv)
				multiple = times(v/tv) + " of the target"
			}
		}
		fmt.Fprintf(&b, "| %s (`%s` `Benchmark%s`) | %s | %s | %s | %s |\n",
			r.What, r.pkgShown(), strings.SplitN(res.Name, "/", 2)[0], baseCell, format(v, unit), multiple, targetCell)
	}
	return b.String()
}

// Also lists the benchmarks of the output no row shows (a new
// sub-benchmark, say), with their medians, so that none is dropped
// unseen; "" when every one is shown.
func Also(out *Output) string {
	shown := map[string]bool{}
	for _, r := range rows {
		shown[r.Bench], shown[r.Base] = true, true
	}
	var b strings.Builder
	for _, k := range out.Order {
		if shown[k] {
			continue
		}
		res := out.Results[k]
		if b.Len() == 0 {
			b.WriteString("| benchmark | medians |\n| --- | --- |\n")
		}
		var cells []string
		for _, unit := range sortedUnits(res) {
			m, _ := res.Median(unit)
			cells = append(cells, format(m, unit))
		}
		fmt.Fprintf(&b, "| `%s` `Benchmark%s` | %s |\n", pkgShown(res.Pkg), res.Name, strings.Join(cells, ", "))
	}
	return b.String()
}

// sortedUnits is ns/op first, as go test prints it, then the rest by name.
func sortedUnits(r *Result) []string {
	return slices.SortedFunc(maps.Keys(r.Values), func(a, b string) int {
		if (a == "ns/op") != (b == "ns/op") {
			if a == "ns/op" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
}

func (r row) pkgShown() string { return pkgShown(strings.SplitN(r.Bench, " ", 2)[0]) }

func pkgShown(pkg string) string {
	if pkg == "" {
		return "."
	}
	return pkg
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// times is a multiple: two decimals under 10, then fewer.
func times(x float64) string {
	switch {
	case x < 10:
		return fmt.Sprintf("%.2fx", x)
	case x < 100:
		return fmt.Sprintf("%.1fx", x)
	default:
		return fmt.Sprintf("%.0fx", x)
	}
}

// format shows v in unit: times (ns/...) in s, ms, µs or ns to three
// significant digits, with what they are per ("/call"; nothing for /op);
// MiB with one decimal; anything else as the number and its unit.
func format(v float64, unit string) string {
	if per, ok := strings.CutPrefix(unit, "ns/"); ok {
		suffix := "/" + per
		if per == "op" {
			suffix = ""
		}
		return duration(v) + suffix
	}
	if mib, ok := strings.CutSuffix(unit, "-MiB"); ok && mib != "" {
		return fmt.Sprintf("%.4g MiB", v)
	}
	if unit == "marginal-ns/call" {
		return duration(v) + "/call more"
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " " + unit
}

func duration(ns float64) string {
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e9, "s"}, {1e6, "ms"}, {1e3, "µs"}, {1, "ns"}} {
		if x := ns / u.scale; x >= 1 || u.scale == 1 {
			s := strconv.FormatFloat(x, 'g', 3, 64)
			if strings.ContainsRune(s, 'e') {
				s = strconv.FormatFloat(x, 'f', 0, 64)
			}
			return s + " " + u.name
		}
	}
	panic("unreachable")
}
