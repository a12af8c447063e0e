#!/usr/bin/env bash
# Manual helper for the Go side of the compatibility harness (compat-tests/go). The Rust tests
# build and run it by themselves; this script is for warming the module cache and for running one
# scenario by hand.
#
#   scripts/compat-go.sh fetch
#       Downloads the modules compat-tests/go/go.sum pins (the official Go client and its
#       dependencies) through the Go module proxy into the module cache.
#   scripts/compat-go.sh run SCENARIO --namesrv 127.0.0.1:9876 --broker 127.0.0.1:10911 --id x1
#       Builds the scenarios and runs one of them against a running broker (client logs go to
#       ./logs/rocketmq-go.log).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
go_dir="$root/compat-tests/go"
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
# The official Go archive installs to /usr/local/go, which non-login shells may not have on PATH.
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"

case "${1:-}" in
fetch)
    (cd "$go_dir" && go mod download)
    echo "Go modules are in $(go env GOMODCACHE)"
    ;;
run)
    [ $# -ge 2 ] || { echo "usage: $0 run SCENARIO [--key value]..." >&2; exit 2; }
    bin="${TMPDIR:-/tmp}/skiff-compat-go-manual"
    (cd "$go_dir" && go build -o "$bin" .)
    shift
    exec "$bin" "$@"
    ;;
*)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
