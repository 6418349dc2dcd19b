#!/usr/bin/env bash
# Chromium for the browser tests (tests/browser): Debian's package, installed when it is missing. Playwright
# drives it; its own browser downloads are not used.
set -euo pipefail
CHROMIUM="${KGRAG_TEST_CHROMIUM:-/usr/bin/chromium}"
if [[ -x "$CHROMIUM" ]]; then
    exit 0
fi
if [[ $(id -u) != 0 ]]; then
    echo "browser.sh: no Chromium at $CHROMIUM: run as root, or: sudo apt-get install -y chromium" >&2
    exit 1
fi
echo "browser.sh: apt-get install chromium" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
"$CHROMIUM" --version
