#!/usr/bin/env bash
# Runs the speed benchmarks, each beside its baseline in the same test
# binary, and prints a compact table: time per operation of the baseline
# and of nmhost, and nmhost's multiple of the baseline (x-baseline). The
# raw `go test -bench` output is kept in $BENCH_OUT (default
# /tmp/nmhost-bench.txt) for benchstat. Each benchmark runs BENCHCOUNT
# times (default 3), its baseline's runs just before its own, and the
# table shows the medians and the multiple of the medians: a busy machine
# moves single runs a lot. BENCHTIME
# overrides -benchtime (default 1s); the defaults keep the whole set under
# five minutes on two cores.
# scripts/test.sh does not run this: timings are not pass/fail tests.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${BENCH_OUT:-${TMPDIR:-/tmp}/nmhost-bench.txt}"
benchtime="${BENCHTIME:-1s}"
count="${BENCHCOUNT:-3}"
: >"$out"

run() { # package, benchmark pattern
  echo "bench.sh: $1 $2" >&2
  go test -run '^$' -bench "$2" -benchtime "$benchtime" -count "$count" "$1" >>"$out" 2>&1 || {
    cat "$out" >&2
    echo "bench.sh: FAIL in $1" >&2
    exit 1
  }
}

run ./netproxy/ '^BenchmarkACLCheck$'
run ./netproxy/agentfetch/ '^BenchmarkFetch2B$'
run ./wasmhost/ '^(BenchmarkRunTiny|BenchmarkLogCall)$'
run ./cmd/nmhost/ '^(BenchmarkRoundTrip|BenchmarkColdStart|BenchmarkColdStartFloor|BenchmarkFetch)$'
run ./internal/store/ '^BenchmarkPolicy$'
run ./internal/store/ '^BenchmarkMemorySearch$'
run ./wasmhost/ '^BenchmarkInspect$'
run ./workflow/ '^(BenchmarkPureWorkflow1000|BenchmarkAuthorizeLayer10)$'
run ./shell/ '^(BenchmarkShellLsR|BenchmarkShellGrepR)$'
run ./wasmhost/ '^BenchmarkWorkspaceRead1MiB$'
run ./wasmhost/ '^BenchmarkCompileLargeBody$'
run ./cmd/nmhost/ '^BenchmarkLogCallEntryPoints$'
run ./wasmhost/ '^BenchmarkManyAgents$'

# One line per benchmark, in first-seen order: the medians of ns/op, of
# ns/call (the log benchmark), of the peak RSS (the many-agents benchmark,
# whose multiple is of its memory target, not of a baseline) and of the
# multiple of the baseline.
awk '
function median(list,   a, n, i, j, t) {
  n = split(list, a, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
  return n == 0 ? "" : (n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2)
}
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
  if (!(name in seen)) { seen[name] = 1; order[++n] = name }
  for (i = 3; i < NF; i++) {
    if ($(i+1) == "ns/op") nsop[name] = nsop[name] " " $i
    if ($(i+1) == "x-baseline") ratio[name] = ratio[name] " " $i
    if ($(i+1) == "ns/call") percall[name] = percall[name] " " $i
    if ($(i+1) == "marginal-ns/call") marginal[name] = marginal[name] " " $i
    if ($(i+1) == "peak-MiB") peak[name] = peak[name] " " $i
    if ($(i+1) == "x-target") target[name] = target[name] " " $i
  }
}
END {
  for (k = 1; k <= n; k++) {
    name = order[k]
    t = median(nsop[name]) + 0
    if (t >= 1e6) shown = sprintf("%.2f ms", t / 1e6)
    else if (t >= 1e3) shown = sprintf("%.1f µs", t / 1e3)
    else shown = sprintf("%.0f ns", t)
    if (percall[name] != "") shown = shown sprintf(" (%.0f ns/call)", median(percall[name]))
    if (marginal[name] != "") shown = shown sprintf(" (%.0f ns a call more)", median(marginal[name]))
    if (peak[name] != "") shown = shown sprintf(" (peak RSS %.1f MiB)", median(peak[name]))
    r = ratio[name] == "" ? "" : sprintf("%.2fx", median(ratio[name]))
    # With -count, go test repeats each sub-benchmark back to back
    # (every baseline, then every nmhost), so each x-baseline is taken
    # against the last baseline alone: the multiple of the medians is the
    # figure to read when the baseline of the pair is in the table.
    base = name; sub(/\/[^\/]*$/, "/baseline", base)
    if (ratio[name] != "" && base != name && (base in nsop)) r = sprintf("%.2fx", t / median(nsop[base]))
    if (target[name] != "") r = sprintf("%.2fx of target", median(target[name]))
    printf "%-40s %24s  %s\n", name, shown, r
  }
}' "$out"
echo "bench.sh: raw output in $out" >&2
