#!/usr/bin/env bash
# Installs Debian's chromium for the end-to-end tests when it is missing.
# The e2e tests never skip: without a browser they fail and say why, so
# this script runs before them in scripts/test.sh.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-chromium.sh: chromium is missing and apt-get is not available; install Chromium and put 'chromium' on PATH" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "setup-chromium.sh: installing Debian's chromium package" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null
