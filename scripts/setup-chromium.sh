#!/usr/bin/env bash
# Installs Debian's chromium for the end-to-end tests when it is missing.
# The e2e tests never skip: without a browser they fail and say why, so
# this script runs before them in scripts/test.sh.
set -euo pipefail
exec "$(dirname "$0")/apt-install.sh" chromium chromium
