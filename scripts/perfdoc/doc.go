// Command perfdoc writes docs/performance.md from the output of
// scripts/bench.sh: the medians of each benchmark's runs, each beside its
// baseline with the multiple of the baseline's median, whether it meets
// its target, and the machine and command the output records. The table's
// rows (what each benchmark measures, its baseline, its target) are in
// rows.go, the page's words around them in template.md; the figures come
// only from the output, so the page cannot say more than a run measured.
//
//	go run ./scripts/perfdoc                  # docs/performance.bench.txt -> docs/performance.md
//	go run ./scripts/perfdoc -table OUT.txt   # the table alone, on stdout
//
// It reads the text format of `go test -bench` itself (a benchmark line is
// a name, an iteration count and value-unit pairs; a configuration line is
// "key: value") rather than linking golang.org/x/perf for it: the format
// is small and stable, and the product's go.mod stays free of a module
// only this page needs.
package main
