#!/usr/bin/env bash
# Makes sure a Docker engine answers, for the container tests: installs Debian's docker.io when
# dockerd is missing (as root, `apt-get update` once, then `apt-get install -y docker.io`), and
# starts dockerd when none is running, with no bridge and no iptables rules: every container the
# tests start uses the host network, so every connection stays on 127.0.0.1. Nothing is ever pulled
# from an image registry.
#
# Exit 0 once `docker info` answers; otherwise 1 with the reason on stderr. dockerd keeps running
# after this script (its log: $SKIFF_DOCKERD_LOG, default /tmp/skiff-dockerd.log).
set -euo pipefail

log="${SKIFF_DOCKERD_LOG:-/tmp/skiff-dockerd.log}"
wait_secs="${SKIFF_DOCKERD_WAIT:-60}"

fail() {
    echo "docker-engine.sh: no Docker engine: $*" >&2
    exit 1
}

engine_answers() { docker info >/dev/null 2>&1; }

if command -v docker >/dev/null 2>&1 && engine_answers; then
    echo "docker-engine.sh: an engine answers ($(docker info --format '{{.ServerVersion}}'))"
    exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || fail "dockerd is not installed and installing docker.io needs root"
    command -v apt-get >/dev/null 2>&1 || fail "dockerd is not installed and there is no apt-get"
    echo "docker-engine.sh: installing Debian's docker.io"
    if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y docker.io; } \
        >>"$log" 2>&1; then
        fail "apt-get install docker.io failed (see $log)"
    fi
    command -v dockerd >/dev/null 2>&1 || fail "docker.io installed no dockerd (see $log)"
fi
command -v docker >/dev/null 2>&1 || fail "dockerd is installed but the docker CLI is not"

if ! pgrep -x dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || fail "dockerd is not running and starting it needs root"
    echo "docker-engine.sh: starting dockerd (no bridge, no iptables; log: $log)"
    # setsid: the daemon outlives this script and the CI step that ran it.
    setsid dockerd --bridge=none --iptables=false --ip6tables=false >>"$log" 2>&1 </dev/null &
fi

for _ in $(seq 1 "$wait_secs"); do
    if engine_answers; then
        echo "docker-engine.sh: the engine answers ($(docker info --format '{{.ServerVersion}}'))"
        exit 0
    fi
    if ! pgrep -x dockerd >/dev/null 2>&1; then
        fail "dockerd exited; its log ends with: $(tail -n 5 "$log" 2>/dev/null)"
    fi
    sleep 1
done
fail "dockerd did not answer within ${wait_secs} s; its log ends with: $(tail -n 5 "$log" 2>/dev/null)"
