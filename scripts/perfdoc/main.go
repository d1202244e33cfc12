package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("o", "docs/performance.md", "the page to write")
	table := flag.Bool("table", false, "print only the table (and the benchmarks it does not show) on stdout; rows the output lacks are left out")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./scripts/perfdoc [-o PAGE] [-table] [BENCH-OUTPUT]\n\n"+
			"Writes docs/performance.md from scripts/bench.sh's output (default docs/performance.bench.txt).\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	in := "docs/performance.bench.txt"
	switch flag.NArg() {
	case 0:
	case 1:
		in = flag.Arg(0)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err := run(in, *out, *table); err != nil {
		fmt.Fprintln(os.Stderr, "perfdoc:", err)
		os.Exit(1)
	}
}

func run(in, out string, table bool) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	o, err := Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if table {
		fmt.Print(Table(o))
		if also := Also(o); also != "" {
			fmt.Print("\nNot in the table:\n\n" + also)
		}
		return nil
	}
	doc, err := Doc(o)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return os.WriteFile(out, doc, 0o644)
}
