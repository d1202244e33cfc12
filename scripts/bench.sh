#!/usr/bin/env bash
# Runs the speed benchmarks, each beside its baseline in the same test
# binary, and prints a compact table: time per operation of the baseline
# and of nmhost, and nmhost's multiple of the baseline (x-baseline). The
# raw `go test -bench` output is kept in $BENCH_OUT (default
# /tmp/nmhost-bench.txt) for benchstat. BENCHTIME overrides -benchtime;
# the default keeps the whole set under five minutes on two cores.
# scripts/test.sh does not run this: timings are not pass/fail tests.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${BENCH_OUT:-${TMPDIR:-/tmp}/nmhost-bench.txt}"
benchtime="${BENCHTIME:-1s}"
: >"$out"

run() { # package, benchmark pattern
  echo "bench.sh: $1 $2" >&2
  go test -run '^$' -bench "$2" -benchtime "$benchtime" -count 1 "$1" >>"$out" 2>&1 || {
    cat "$out" >&2
    echo "bench.sh: FAIL in $1" >&2
    exit 1
  }
}

run ./netproxy/ '^BenchmarkACLCheck$'
run ./netproxy/agentfetch/ '^BenchmarkFetch2B$'
run ./wasmhost/ '^(BenchmarkRunTiny|BenchmarkLogCall)$'
run ./cmd/nmhost/ '^(BenchmarkRoundTrip|BenchmarkColdStart|BenchmarkFetch)$'

# One line per benchmark: name, ns/op, and the metrics that compare.
awk '
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  nsop = ""; ratio = ""; percall = ""
  for (i = 3; i < NF; i++) {
    if ($(i+1) == "ns/op") nsop = $i
    if ($(i+1) == "x-baseline") ratio = $i
    if ($(i+1) == "ns/call") percall = $i
  }
  t = nsop + 0
  if (t >= 1e6) shown = sprintf("%.2f ms", t / 1e6)
  else if (t >= 1e3) shown = sprintf("%.1f µs", t / 1e3)
  else shown = sprintf("%.0f ns", t)
  if (percall != "") shown = shown sprintf(" (%.0f ns/call)", percall)
  printf "%-40s %24s  %s\n", name, shown, (ratio == "" ? "" : sprintf("%.2fx", ratio))
}' "$out"
echo "bench.sh: raw output in $out" >&2
