#!/usr/bin/env bash
# Debian's Python 3.13 at $PYTHON313 (default /usr/bin/python3.13), for the current-jax CI leg
# (`make test-current`). Bookworm ships Python 3.11 only, so this takes python3.13,
# python3.13-venv and the pip wheel that venv installs (python3-pip-whl) from Debian's trixie
# suite, which apt sees at a low pin priority (100): nothing else comes from trixie unless those
# need it. apt resolves that by upgrading libc6 (to 2.41) and a few dozen base libraries; the
# bookworm Python 3.11, the project's venv and Chromium keep working (checked at the end).
# Idempotent: does nothing when `$PYTHON313 -m venv` already gives a venv with pip.
# Runs as root or through sudo. Never a pyenv or python.org build: the leg tests the interpreter
# Debian users get.
set -u
PYTHON313=${PYTHON313:-/usr/bin/python3.13}
fail() { echo "install-python313: $*" >&2; exit 1; }
# A venv with pip is the test: bookworm's pip wheel (23.0.1, python3-pip-whl) is too old for
# Python 3.13, so python3.13-venv alone gives a `python3.13 -m venv` that fails in ensurepip.
venv_works() {
  [ -x "$PYTHON313" ] || return 1
  local tmp; tmp=$(mktemp -d)
  "$PYTHON313" -m venv "$tmp/v" >/dev/null 2>&1 && "$tmp/v/bin/python" -m pip --version >/dev/null 2>&1
  local rc=$?; rm -rf "$tmp"; return $rc
}
venv_works && exit 0
command -v apt-get >/dev/null 2>&1 ||
  fail "$PYTHON313 is missing and there is no apt-get here. Install Python 3.13 (with venv)" \
    "at $PYTHON313, or set PYTHON313 to one."
if [ "$(id -u)" = 0 ]; then SUDO=
elif command -v sudo >/dev/null 2>&1; then SUDO=sudo
else
  fail "$PYTHON313 is missing; installing it needs root. Run as root: make python313."
fi
SOURCES=/etc/apt/sources.list.d/shardviz-trixie.sources
PREFS=/etc/apt/preferences.d/shardviz-trixie
echo "install-python313: adding Debian trixie at pin priority 100 ($SOURCES, $PREFS)"
$SUDO tee "$SOURCES" >/dev/null <<'EOF'
# Added by shardviz tools/install-python313.sh: python3.13 for the current-jax CI leg.
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
$SUDO tee "$PREFS" >/dev/null <<'EOF'
# Added by shardviz tools/install-python313.sh: trixie only when asked for (apt-get -t trixie)
# or when a package taken from it needs a newer dependency.
Package: *
Pin: release n=trixie
Pin-Priority: 100
EOF
echo "install-python313: apt-get install -t trixie python3.13 python3.13-venv python3-pip-whl"
log=$(mktemp)
if ! { $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
       $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
         -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
         -t trixie python3.13 python3.13-venv python3-pip-whl; } >"$log" 2>&1; then
  cat "$log" >&2; rm -f "$log"
  fail "apt-get could not install python3.13 from trixie (output above). The other way is" \
    "Debian's source package: apt-get source -t trixie python3.13, then dpkg-buildpackage."
fi
grep -E '^(Setting up|Unpacking) ' "$log" | sed 's/^/  /' | head -80
rm -f "$log"
venv_works || fail "python3.13 installed, but \`$PYTHON313 -m venv\` gives no working pip."
echo "install-python313: $("$PYTHON313" --version)"
# What the upgrade must not break: the main leg's venv and the browser tests' Chromium.
here=$(cd "$(dirname "$0")/.." && pwd)
if [ -x "$here/.venv/bin/python" ]; then
  "$here/.venv/bin/python" -c 'import jax' ||
    fail "after the upgrade, $here/.venv/bin/python cannot import jax."
fi
if [ -x /usr/bin/chromium ]; then
  /usr/bin/chromium --version >/dev/null 2>&1 ||
    fail "after the upgrade, /usr/bin/chromium --version fails."
fi
