#!/usr/bin/env bash
# Vendors the Pyodide runtime Python agents run on into extension/pyodide/:
# the npm package "pyodide" at the version pinned here, checked against
# scripts/pyodide.sha256 before anything is unpacked. The files are not
# committed (extension/pyodide/.gitignore); the checksum is. Nothing is
# downloaded at run time: the extension loads these files from itself.
# PYODIDE_OUT (default extension/pyodide) puts them elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
version=314.0.7
tarball="pyodide-$version.tgz"
out=${PYODIDE_OUT:-extension/pyodide}
files=(pyodide.mjs pyodide.asm.mjs pyodide.asm.wasm python_stdlib.zip pyodide-lock.json)

if [ -f "$out/VERSION" ] && [ "$(cat "$out/VERSION")" = "$version" ]; then
  echo "fetch-pyodide.sh: pyodide $version already in $out" >&2
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if command -v npm >/dev/null 2>&1; then
  (cd "$work" && npm pack --silent "pyodide@$version" >/dev/null)
else
  curl -fsSL -o "$work/$tarball" "https://registry.npmjs.org/pyodide/-/$tarball"
fi
(cd "$work" && sha256sum -c --quiet "$OLDPWD/scripts/pyodide.sha256")
tar -xzf "$work/$tarball" -C "$work"
mkdir -p "$out"
for f in "${files[@]}"; do
  cp "$work/package/$f" "$out/$f"
done
echo "$version" > "$out/VERSION"
echo "fetch-pyodide.sh: pyodide $version in $out" >&2
