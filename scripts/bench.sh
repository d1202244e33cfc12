#!/usr/bin/env bash
# Runs the speed benchmarks, each beside its baseline in the same test
# binary, and prints the table of docs/performance.md: the median time per
# operation of the baseline and of nmhost, nmhost's multiple of the
# baseline and whether it meets its target (scripts/perfdoc makes it). The
# raw `go test -bench` output, headed by the machine and the command, is
# kept in $BENCH_OUT (default /tmp/nmhost-bench.txt) for benchstat. Each
# benchmark runs BENCHCOUNT times (default 3), its baseline's runs just
# before its own, and the table shows the medians and the multiple of the
# medians: a busy machine moves single runs a lot. BENCHTIME overrides
# -benchtime (default 1s); the defaults keep the whole set under five
# minutes on two cores.
#
#   bash scripts/bench.sh          # the table
#   bash scripts/bench.sh --doc    # and docs/performance.md (+ its .bench.txt) from this run
#
# scripts/test.sh does not run this: timings are not pass/fail tests.
set -euo pipefail
cd "$(dirname "$0")/.."

doc=false
case "${1:-}" in
  "") ;;
  --doc) doc=true ;;
  *) echo "usage: bash scripts/bench.sh [--doc]" >&2; exit 2 ;;
esac

out="${BENCH_OUT:-${TMPDIR:-/tmp}/nmhost-bench.txt}"
benchtime="${BENCHTIME:-1s}"
count="${BENCHCOUNT:-3}"

# The machine and the command, as configuration lines of the output
# (`key: value`, which benchstat and perfdoc read); go test adds the
# processor, the system and each package.
{
  echo "command: BENCHCOUNT=$count BENCHTIME=$benchtime bash scripts/bench.sh${1:+ $1}"
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "cores: $(getconf _NPROCESSORS_ONLN)"
  if [ -r /proc/meminfo ]; then
    awk '/^MemTotal:/ { printf "memory: %.0f GiB\n", $2 / 1048576 }' /proc/meminfo
  fi
  echo "go: $(go env GOVERSION)"
} >"$out"

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

go run ./scripts/perfdoc -table "$out"
echo "bench.sh: raw output in $out" >&2
if $doc; then
  # The page first: an output it refuses (a row's benchmark missing)
  # leaves both files as they were.
  go run ./scripts/perfdoc -o docs/performance.md "$out"
  cp "$out" docs/performance.bench.txt
  echo "bench.sh: docs/performance.md written from docs/performance.bench.txt" >&2
fi
