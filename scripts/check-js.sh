#!/usr/bin/env bash
# Checks the syntax of every JavaScript file of the extension and the
# viewer with Node.js (installing Debian's nodejs when it is missing), so a
# typo in a file no Go test loads still fails the build. Each file is
# checked as a module where it is one (Node detects import/export).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "check-js.sh: node is missing and apt-get is not available; install Node.js" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs >/dev/null
fi
n=0
for f in extension/*.js internal/viewer/static/*.js; do
  node --check "$f"
  n=$((n + 1))
done
echo "check-js.sh: $n files parse ($(node --version))"
