#!/usr/bin/env bash
# The browser tests drive Debian's chromium through Playwright; Playwright never downloads a browser.
set -euo pipefail
if [[ -x /usr/bin/chromium ]]; then exit 0; fi
if [[ $(id -u) -ne 0 ]]; then
  echo "ensure-chromium: /usr/bin/chromium is missing; install Debian's 'chromium' package (needs root)" >&2
  exit 1
fi
echo "ensure-chromium: installing Debian's chromium package"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
