#!/usr/bin/env bash
# Checks the syntax of every JavaScript file of the extension and the
# viewer with Node.js (installing Debian's nodejs when it is missing), so a
# typo in a file no Go test loads still fails the build. A file with
# import or export is checked as a module.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/apt-install.sh node nodejs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for f in extension/*.js internal/viewer/static/*.js; do
  # A module is checked as one whatever Node's version guesses: as .mjs.
  if grep -qE '^(import|export) ' "$f"; then
    cp "$f" "$tmp/check.mjs"
    node --check "$tmp/check.mjs" || { echo "check-js.sh: $f does not parse" >&2; exit 1; }
  else
    node --check "$f"
  fi
  n=$((n + 1))
done
echo "check-js.sh: $n files parse ($(node --version))"
