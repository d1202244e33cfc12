#!/usr/bin/env bash
# Runs every test of the project, in phases, each with a header: modules,
# Chromium, bubblewrap, the example agents, Pyodide, static checks (go mod tidy, vet
# for Linux, Windows and macOS, gofmt, staticcheck pinned in go.mod), the
# JavaScript's syntax, ESLint and the extension's unit tests under Node.js,
# the whole Go suite with the race detector (fuzz seed corpora run as
# ordinary tests), then nmhost export against the OpenTelemetry Collector's
# receiver (tools/otelcol-test, a module of its own), then the audit
# trail under power loss on a FUSE layer (tools/powerloss, root or
# fuse3). The end-to-end tests in Chromium (-tags e2e) run in the
# background beside the static checks and the Go suite; their output and
# time come last. Everything it needs is installed here, so it works on a
# fresh machine. It ends with one verdict line.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase prints how long the one before it took, and the verdict the
# whole run's time, so a slow phase shows where it is.
started=$SECONDS
phase_start=$SECONDS
last_phase=""
phase() {
  if [ -n "$last_phase" ]; then
    printf '   (%s: %ds)\n' "$last_phase" $((SECONDS - phase_start))
  fi
  last_phase=$*
  phase_start=$SECONDS
  printf '\n== %s\n' "$*"
}
verdict() {
  local rc=$?
  printf '   (%s: %ds)\n' "$current" $((SECONDS - phase_start))
  stop_e2e
  if [ "$rc" -eq 0 ]; then
    printf '\ntest.sh: PASS in %ds (e2e screenshots in %s)\n' $((SECONDS - started)) "${E2E_ARTIFACTS:-${TMPDIR:-/tmp}/nmhost-e2e-artifacts}"
  else
    printf '\ntest.sh: FAIL in phase "%s" after %ds (exit %d)\n' "$current" $((SECONDS - started)) "$rc" >&2
  fi
}
# The browser tests spend most of their time waiting on Chromium and on
# Pyodide's loads (about 100 s of CPU, Chromium's included, in a run of
# 185 to 336 s, 2026-11-26), so they run in the background beside the
# static checks and the Go suite, which keep the cores busy. Their output waits
# in a file and is shown, with their time, in their own phase at the end,
# which fails the run when they fail (RATIONALE.md, "Why do the browser
# tests run beside the Go suite?").
e2e_pid=""
e2e_dir=$(mktemp -d "${TMPDIR:-/tmp}/nmhost-test-e2e-XXXXXX")
start_e2e() {
  e2e_started=$SECONDS
  # In a session of its own (setsid), so that stop_e2e can end go test,
  # the test binary and the Chromium it started, together.
  (
    rc=0
    setsid go test -tags e2e -count=1 -timeout 30m ./e2e >"$e2e_dir/out" 2>&1 &
    echo $! >"$e2e_dir/pgid"
    wait $! || rc=$?
    echo "$SECONDS" >"$e2e_dir/ended"
    exit "$rc"
  ) &
  e2e_pid=$!
}
# stop_e2e ends the browser tests when the run stops before their phase
# (a phase failed, or Ctrl-C, which does not reach a background job):
# the run has failed already, and they would go on for minutes.
stop_e2e() {
  if [ -n "$e2e_pid" ] && kill -0 "$e2e_pid" 2>/dev/null; then
    echo "test.sh: stopping the end-to-end tests running in the background" >&2
    if [ -s "$e2e_dir/pgid" ]; then
      kill -TERM -- "-$(cat "$e2e_dir/pgid")" 2>/dev/null || true
    fi
    wait "$e2e_pid" 2>/dev/null || true
  fi
  rm -rf "$e2e_dir"
}

current=setup
trap verdict EXIT

if ! command -v go >/dev/null 2>&1; then
  echo "test.sh: Go is not installed (https://go.dev/dl/); the project needs Go $(sed -n 's/^go //p' go.mod)" >&2
  exit 1
fi

current="module download"; phase "$current"
go mod download
# The collector integration test is a module of its own (tools/otelcol-test),
# so the collector's dependencies stay out of nmhost's go.mod.
(cd tools/otelcol-test && go mod download)
# So is the power-loss test (tools/powerloss), for its FUSE library.
(cd tools/powerloss && go mod download)

current="go mod tidy"; phase "$current"
go mod tidy -diff
(cd tools/otelcol-test && go mod tidy -diff)
(cd tools/powerloss && go mod tidy -diff)

# The end-to-end tests need Chromium and the example agents; they fail,
# never skip, when the browser cannot start.
current="Chromium"; phase "$current"
./scripts/setup-chromium.sh
chromium --version

# A high session's programs run in a bubblewrap sandbox (sandbox/); its
# tests run the real thing and fail, never skip, without it.
current="bubblewrap"; phase "$current"
./scripts/apt-install.sh bwrap bubblewrap
bwrap --version

current="example agents"; phase "$current"
./scripts/build-agents.sh

# Python agents run on Pyodide inside the extension; the e2e tests load
# the vendored copy (pinned version, checked against scripts/pyodide.sha256).
current="Pyodide"; phase "$current"
./scripts/fetch-pyodide.sh

# The MCP gateway's tests run the reference servers and the conformance
# suite from the npm registry as real peers (pinned in
# tools/mcp-servers/package-lock.json).
current="MCP reference servers"; phase "$current"
NMHOST_MCP_SERVERS=$(./scripts/mcp-servers.sh)
export NMHOST_MCP_SERVERS

# The browser tests check each screen of the extension with axe-core
# (pinned in tools/axe/package-lock.json): installed before they start, so
# no apt-get or npm runs beside them.
current="axe-core"; phase "$current"
./scripts/fetch-axe.sh >/dev/null

# From here the browser tests run in the background (start_e2e, above).
start_e2e

current="vet (linux, windows, darwin)"; phase "$current"
go vet ./...
go vet -tags e2e ./e2e
GOOS=windows go vet ./...
GOOS=darwin go vet ./...
(cd tools/otelcol-test && go vet ./...)
(cd tools/powerloss && go vet ./...)

current="gofmt"; phase "$current"
gofmt_out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$gofmt_out" ]; then
  echo "test.sh: not gofmt-formatted:" >&2
  echo "$gofmt_out" >&2
  exit 1
fi

current="staticcheck"; phase "$current"
go tool staticcheck ./...
go tool staticcheck -tags e2e ./e2e

current="core imports no storage"; phase "$current"
# The decision vocabulary and the network layer must build without SQLite.
# The audit trail's verifier (auditlog) checks proofs with the verifier
# key alone: it must build without SQLite too.
if go list -deps ./mediator ./netproxy ./netproxy/agentfetch ./wasmhost ./auditlog | grep -q sqlite; then
  echo "test.sh: a core package pulls in SQLite:" >&2
  go list -deps ./mediator ./netproxy ./netproxy/agentfetch ./wasmhost ./auditlog | grep sqlite >&2
  exit 1
fi

current="JavaScript syntax"; phase "$current"
./scripts/check-js.sh

current="JavaScript lint (ESLint)"; phase "$current"
./scripts/lint-js.sh

# The extension's modules that need no browser (the audit checkpoint's
# rules, the router's tables, the prompt's text), each against a stand-in
# for what it talks to; the browser tests cover them in Chromium.
current="JavaScript unit tests (node --test)"; phase "$current"
node --test --test-reporter=spec extension/test/*.test.mjs

current="host mode links no exporter"; phase "$current"
# nmhost export (internal/app/export) speaks OTLP; the browser starts host mode
# for every message, and its cold start must not pay for the exporter.
if go list -deps ./internal/host | grep -q opentelemetry; then
  echo "test.sh: host mode (internal/host) pulls in the OTLP exporter:" >&2
  go list -deps ./internal/host | grep opentelemetry >&2
  exit 1
fi

current="tests"; phase "$current"
# The race detector sleeps a second as each race-built process exits
# (GORACE's atexit_sleep_ms, 1000 by default): a second per package and
# per helper process, idle. A race is reported, and fails its test, when
# it happens; what the sleep waits for is goroutines still running after
# the last test (RATIONALE.md, "Why does test.sh shorten the race
# detector's sleep at exit?"). A GORACE of your own is kept as it is.
GORACE=${GORACE:-atexit_sleep_ms=10} go test -race -count=1 -timeout 30m ./...

# nmhost export against the OpenTelemetry Collector's own OTLP receiver,
# in its own module (tools/otelcol-test, which replaces nmhost with ../..).
current="collector integration (tools/otelcol-test)"; phase "$current"
(cd tools/otelcol-test && go test -count=1 ./...)

# The audit trail under power loss: the real host with its data dir on a
# FUSE layer that drops what was not fsynced (tools/powerloss, a module of
# its own for the FUSE library; docs/permissions.md, "Durability"). As
# root it mounts with mount(2) itself; otherwise it needs fusermount3
# (Debian's fuse3). It fails, never skips, when it cannot mount.
current="power loss (tools/powerloss)"; phase "$current"
if [ ! -c /dev/fuse ]; then
  echo "test.sh: /dev/fuse is missing; the power-loss test needs FUSE (modprobe fuse, or a container started with --device /dev/fuse)" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  ./scripts/apt-install.sh fusermount3 fuse3
fi
(cd tools/powerloss && go test -count=1 ./...)

# The browser tests, behind their build tag so that plain `go test ./...`
# needs no browser; here they have run beside the phases above, and fail
# (never skip) when Chromium cannot start. They are not race-built: the
# host they drive is a plain build, and the Go suite above runs every
# package under the race detector (RATIONALE.md, "Why do the browser tests
# run without the race detector?").
current="end-to-end tests (Chromium)"; phase "$current"
e2e_rc=0
wait "$e2e_pid" || e2e_rc=$?
cat "$e2e_dir/out"
printf '   (the end-to-end tests ran %ds, from the start of "vet" on; this phase waited %ds for them)\n' \
  $(($(cat "$e2e_dir/ended" 2>/dev/null || echo "$SECONDS") - e2e_started)) $((SECONDS - phase_start))
e2e_pid=""
exit "$e2e_rc"
