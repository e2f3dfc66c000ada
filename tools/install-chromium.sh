#!/usr/bin/env bash
# Debian's Chromium at $CHROMIUM (default /usr/bin/chromium), for tests/browser (driven by
# Playwright from pip). Installed with apt only when missing, as root or through sudo.
# Never `playwright install`: it downloads a browser build of its own, which fails offline.
# SHARDVIZ_SKIP_BROWSER=1 skips this (and the browser tests).
set -u
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] && exit 0
if [ "${SHARDVIZ_SKIP_BROWSER:-}" = 1 ]; then
  echo "install-chromium: SHARDVIZ_SKIP_BROWSER=1, not installing (browser tests will skip)"
  exit 0
fi
fail() { echo "install-chromium: $*" >&2; exit 1; }
command -v apt-get >/dev/null 2>&1 ||
  fail "$CHROMIUM is missing and there is no apt-get here. Install Chromium at $CHROMIUM," \
    "or set SHARDVIZ_SKIP_BROWSER=1 to skip the browser tests."
if [ "$(id -u)" = 0 ]; then SUDO=
elif command -v sudo >/dev/null 2>&1; then SUDO=sudo
else
  fail "$CHROMIUM is missing; installing it needs root. Run as root:" \
    "apt-get update && apt-get install -y chromium (or set SHARDVIZ_SKIP_BROWSER=1)."
fi
echo "install-chromium: installing Debian's chromium with apt-get (for tests/browser)"
log=$(mktemp)
if ! { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
       $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } >"$log" 2>&1; then
  cat "$log" >&2; rm -f "$log"
  fail "apt-get could not install chromium (output above)."
fi
rm -f "$log"
[ -x "$CHROMIUM" ] || fail "the chromium package installed, but $CHROMIUM is still missing."
