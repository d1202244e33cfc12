#!/usr/bin/env bash
# Runs the README's test command on a fresh clone of this repository's
# HEAD while two CPU-bound processes run beside it, RUNS times in a row
# (default 2): the suite must pass on a busy machine, not only a quiet
# one. The busy loops end with the script, whatever happens. Each run's
# verdict and time are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/nmhost-load-XXXXXX")
busy=()
cleanup() {
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
git clone -q --no-local . "$work/clone"
for _ in 1 2; do
  # A loop of the shell itself: it keeps one core busy and touches
  # nothing else.
  bash -c 'while :; do :; done' &
  busy+=("$!")
done
results=()
for i in $(seq 1 "$runs"); do
  start=$SECONDS
  if (cd "$work/clone" && ./scripts/test.sh) >"$work/run$i.log" 2>&1; then
    results+=("run $i: PASS in $((SECONDS - start))s")
  else
    results+=("run $i: FAIL in $((SECONDS - start))s (log: last lines below)")
    tail -40 "$work/run$i.log"
  fi
  tail -1 "$work/run$i.log"
done
printf '%s\n' "${results[@]}"
for r in "${results[@]}"; do
  case $r in *FAIL*) exit 1 ;; esac
done
