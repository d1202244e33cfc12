#!/usr/bin/env bash
# mcp-servers.sh: installs the MCP reference servers and the conformance
# suite that the gateway's tests run as real peers, at the versions
# pinned in tools/mcp-servers/package-lock.json (every package and its
# integrity hash), with `npm ci` from the npm registry into
# ${XDG_CACHE_HOME:-~/.cache}/nmhost-mcp/<lockfile hash>, outside the
# repository. Prints that directory; the tests read it from
# NMHOST_MCP_SERVERS. Node.js and npm are Debian's packages when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/apt-install.sh node nodejs >&2
./scripts/apt-install.sh npm npm >&2
lock=tools/mcp-servers/package-lock.json
dir="${XDG_CACHE_HOME:-$HOME/.cache}/nmhost-mcp/$(sha256sum "$lock" | cut -c1-16)"
if [ ! -f "$dir/.installed" ]; then
  # Installed beside the final place and renamed into it, so that a run
  # stopped half-way never leaves a directory that looks installed.
  mkdir -p "$(dirname "$dir")"
  tmp=$(mktemp -d "$dir.tmp-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  cp tools/mcp-servers/package.json "$lock" "$tmp/"
  (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
  touch "$tmp/.installed"
  mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp" # another run got there first
fi
echo "$dir"
