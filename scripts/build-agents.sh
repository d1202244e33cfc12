#!/usr/bin/env bash
# Builds the example agents (examples/agents/*) for wasip1 into
# extension/agents/, with their profiles and an index.json the extension
# reads on install; the Python examples (examples/agents/python/NAME.py
# with NAME.json) are copied as they are. The built files are not committed.
# AGENTS_OUT (default extension/agents) puts them elsewhere: the e2e tests
# build into their own copy of the extension.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${AGENTS_OUT:-extension/agents}
mkdir -p "$out"
entries=()
for dir in examples/agents/*/; do
  name=$(basename "$dir")
  [ "$name" = python ] && continue
  GOOS=wasip1 GOARCH=wasm go build -o "$out/$name.wasm" "./$dir"
  cp "$dir/profile.json" "$out/$name.json"
  entries+=("{\"profile\": \"$name.json\", \"module\": \"$name.wasm\"}")
done
for src in examples/agents/python/*.py; do
  name=$(basename "$src" .py)
  cp "$src" "$out/$name.py"
  cp "examples/agents/python/$name.json" "$out/$name.json"
  entries+=("{\"profile\": \"$name.json\", \"module\": \"$name.py\", \"runtime\": \"python\"}")
done
(IFS=,; echo "{\"agents\": [${entries[*]}]}") > "$out/index.json"
echo "build-agents.sh: ${#entries[@]} agents in $out" >&2
