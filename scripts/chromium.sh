#!/usr/bin/env bash
# Makes sure Debian's headless-capable Chromium is installed, for the web console's browser test
# (server/tests/console.rs): installs the `chromium` package when no `chromium` binary is
# on the PATH (as root, `apt-get update` once, then `apt-get install -y chromium`).
#
# Exit 0 once `chromium --version` answers; otherwise 1 with the reason on stderr.
set -euo pipefail

log="${SKIFF_CHROMIUM_LOG:-/tmp/skiff-chromium-install.log}"

fail() {
    echo "chromium.sh: no Chromium: $*" >&2
    exit 1
}

if ! command -v chromium >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || fail "chromium is not installed and installing it needs root"
    command -v apt-get >/dev/null 2>&1 || fail "chromium is not installed and there is no apt-get"
    echo "chromium.sh: installing Debian's chromium"
    if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core; } \
        >>"$log" 2>&1; then
        fail "apt-get install chromium failed (see $log)"
    fi
    command -v chromium >/dev/null 2>&1 || fail "the chromium package installed no chromium binary (see $log)"
fi
echo "chromium.sh: $(chromium --version 2>/dev/null || echo 'chromium (version unknown)')"
