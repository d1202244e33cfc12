#!/usr/bin/env bash
# Installs axe-core, the accessibility checker the e2e tests run over the
# extension's screens, at the version pinned in tools/axe/package-lock.json
# (the package and its integrity hash), with `npm ci` from the npm
# registry, into ${XDG_CACHE_HOME:-~/.cache}/nmhost-axe/<lockfile hash>,
# outside the repository (as scripts/lint-js.sh installs ESLint). Prints
# the path of axe.min.js. Node.js and npm are Debian's packages when
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."
lock=tools/axe/package-lock.json
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nmhost-axe/$(sha256sum "$lock" | cut -c1-16)"
if [ ! -f "$dir/node_modules/axe-core/axe.min.js" ]; then
  ./scripts/apt-install.sh node nodejs >&2
  ./scripts/apt-install.sh npm npm >&2
  # Installed beside the final place and renamed into it, so that a run
  # stopped half-way never leaves a directory that looks installed.
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.tmp-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp tools/axe/package.json "$lock" "$tmp/"
  (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # another run got there first
fi
echo "$dir/node_modules/axe-core/axe.min.js"
