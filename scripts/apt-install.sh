#!/usr/bin/env bash
# apt-install.sh COMMAND PACKAGE: installs Debian's PACKAGE when COMMAND is
# missing, as root or through sudo, and fails saying what to install where
# apt-get is not available. The setup scripts share it.
set -euo pipefail
cmd=$1 pkg=$2
if command -v "$cmd" >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "apt-install.sh: $cmd is missing and apt-get is not available; install $pkg and put '$cmd' on PATH" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "apt-install.sh: installing Debian's $pkg package" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg" >/dev/null
command -v "$cmd" >/dev/null
