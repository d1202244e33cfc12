#!/usr/bin/env bash
# Builds the extension a person installs: dist/agentgate-VERSION.zip, which
# unzips to a directory Chrome loads (chrome://extensions, Developer mode,
# Load unpacked), with everything the repository's extension/ lacks:
#   - Pyodide, fetched afresh by scripts/fetch-pyodide.sh into the package
#     and so always checked against scripts/pyodide.sha256 (a copy already
#     in extension/pyodide is not trusted: its tarball is not there to check);
#   - the example agents, built by scripts/build-agents.sh.
# The extension's own files are the committed ones (git ls-files), so
# nothing stray in the work tree ends up in the package. The id stays
# kfdflodbjjhffjcgfmobmhlinchkhdlj (the manifest's key).
# PACKAGE_OUT (default dist) is where the zip goes.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(python3 -c 'import json; print(json.load(open("extension/manifest.json"))["version"])')
out=${PACKAGE_OUT:-dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)
zipfile="$out/agentgate-$version.zip"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
pkg="$stage/agentgate"
mkdir -p "$pkg"

git ls-files -z extension | while IFS= read -r -d '' f; do
  case "$f" in
    */.gitignore | extension/test/*) continue ;; # the unit tests run under Node.js, not in Chrome
  esac
  mkdir -p "$pkg/$(dirname "${f#extension/}")"
  cp "$f" "$pkg/${f#extension/}"
done
PYODIDE_OUT="$pkg/pyodide" bash scripts/fetch-pyodide.sh
AGENTS_OUT="$pkg/agents" bash scripts/build-agents.sh

# What the extension loads must be there: the worker imports
# pyodide/pyodide.mjs, which loads the rest.
for f in manifest.json sw.js offscreen.html sandbox.html pyworker.js pyodide/pyodide.mjs pyodide/pyodide.asm.mjs \
  pyodide/pyodide.asm.wasm pyodide/python_stdlib.zip pyodide/pyodide-lock.json agents/index.json; do
  [ -s "$pkg/$f" ] || { echo "package-extension.sh: $f is missing from the package" >&2; exit 1; }
done

rm -f "$zipfile"
(cd "$stage" && zip -qr -X "$zipfile" agentgate)
echo "package-extension.sh: $zipfile (pyodide $(cat "$pkg/pyodide/VERSION"), $(unzip -Z1 "$zipfile" | grep -c -v '/$') files)" >&2
echo "$zipfile"
