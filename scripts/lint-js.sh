#!/usr/bin/env bash
# Lints the extension's and the viewer's JavaScript, and the extension's
# unit tests, with ESLint's recommended rules (eslint.config.cjs). ESLint
# is the version pinned in tools/eslint/package-lock.json (every package
# and its integrity hash), installed with `npm ci` from the npm registry
# into ${XDG_CACHE_HOME:-~/.cache}/nmhost-eslint/<lockfile hash>, outside
# the repository: a fresh clone reuses it, and nothing of node_modules
# lands where the go command walks the module (./...). Node.js and npm are
# Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/apt-install.sh node nodejs
./scripts/apt-install.sh npm npm
lock=tools/eslint/package-lock.json
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nmhost-eslint/$(sha256sum "$lock" | cut -c1-16)"
if [ ! -x "$dir/node_modules/.bin/eslint" ]; then
  # Installed beside the final place and renamed into it, so that a run
  # stopped half-way never leaves a directory that looks installed.
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.tmp-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp tools/eslint/package.json "$lock" "$tmp/"
  (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # another run got there first
fi
NODE_PATH="$dir/node_modules" "$dir/node_modules/.bin/eslint" --max-warnings 0 extension/ internal/viewer/static/
echo "lint-js.sh: ESLint $("$dir/node_modules/.bin/eslint" --version) found nothing"
