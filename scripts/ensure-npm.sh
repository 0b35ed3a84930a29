#!/usr/bin/env bash
# axe-core (the browser tests' accessibility checks) is installed with npm from package-lock.json.
set -euo pipefail
if command -v npm >/dev/null 2>&1; then exit 0; fi
if [[ $(id -u) -ne 0 ]]; then
  echo "ensure-npm: npm is missing; install Debian's 'npm' package (needs root)" >&2
  exit 1
fi
echo "ensure-npm: installing Debian's npm package"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
