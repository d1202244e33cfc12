#!/usr/bin/env bash
# Runs every test of the project: vet, then the whole Go suite with the race
# detector (the seed corpora of the fuzz tests run as ordinary tests).
# Everything it needs is installed here, so it works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
  echo "test.sh: Go is not installed (https://go.dev/dl/); the project needs Go $(sed -n 's/^go //p' go.mod)" >&2
  exit 1
fi

go mod download
go vet ./...
gofmt_out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$gofmt_out" ]; then
  echo "test.sh: not gofmt-formatted:" >&2
  echo "$gofmt_out" >&2
  exit 1
fi
# The end-to-end tests need Chromium and the example agents; they fail,
# never skip, when the browser cannot start.
./scripts/setup-chromium.sh
./scripts/build-agents.sh
go test -race -count=1 -timeout 30m ./...
