#!/usr/bin/env bash
# Manual helper for the non-Java Kafka clients of the compatibility harness (librdkafka through
# compat-tests/python, franz-go in compat-tests/go-kafka; see compat-tests/src/kafka_clients.rs).
# The Rust tests install and build them by themselves; this script is for warming the caches
# ahead of time and for running one scenario by hand. The Java client's jars come with
# `scripts/compat-java.sh fetch`.
#
#   scripts/compat-kafka.sh fetch
#       Downloads the modules compat-tests/go-kafka/go.sum pins (franz-go, kadm and their
#       dependencies) through the Go module proxy into the module cache and compiles them once
#       (the Go build cache), and installs confluent-kafka (compat-tests/python/requirements.txt)
#       from PyPI into the venv the harness uses, ~/.cache/skiff-compat/venv-confluent-kafka-VERSION
#       (pip's own cache: ~/.cache/pip). A venv that already works is kept.
#   scripts/compat-kafka.sh run librdkafka|franz-go SCENARIO --bootstrap 127.0.0.1:9092 --topic T
#       Runs one scenario (produce-consume, produce-consume-idempotent, group-join-leave --group G,
#       commit-resume-restart --group G --phase commit|resume [--expect P:OFFSET,...],
#       admin-topics) of that client against a running Kafka listener.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
go_dir="$root/compat-tests/go-kafka"
py_dir="$root/compat-tests/python"
export GOTOOLCHAIN=local GOFLAGS="-mod=readonly -buildvcs=false"
# The official Go archive installs to /usr/local/go, which non-login shells may not have on PATH.
command -v go >/dev/null || export PATH="/usr/local/go/bin:$PATH"

# The venv as src/kafka_clients.rs makes it: named for the pinned version, built beside its place
# and renamed into it, so that a concurrent test process sees either none or a complete one.
version="$(sed -n 's/^confluent-kafka==//p' "$py_dir/requirements.txt")"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/skiff-compat"
venv="$cache/venv-confluent-kafka-$version"

venv_works() { # dir
    [ "$("$1/bin/python" -c 'import confluent_kafka; print(confluent_kafka.__version__)' 2>/dev/null)" = "$version" ]
}

install_venv() {
    venv_works "$venv" && return
    mkdir -p "$cache"
    local new="$venv.new$$"
    rm -rf "$new"
    python3 -m venv "$new"
    # A wheel only: it bundles librdkafka and its codecs.
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$new/bin/python" -m pip install --no-input --only-binary=:all: \
        -r "$py_dir/requirements.txt"
    venv_works "$new" || { echo "the new venv $new does not import confluent-kafka $version" >&2; exit 1; }
    # One that does not work (its base Python gone, say) makes way.
    if [ -e "$venv" ] && mv -T "$venv" "$venv.stale$$" 2>/dev/null; then rm -rf "$venv.stale$$"; fi
    # Another process may have moved its own into place first: then that one is used.
    if ! mv -T "$new" "$venv" 2>/dev/null; then
        rm -rf "$new"
        venv_works "$venv" || { echo "could not move the new venv to $venv" >&2; exit 1; }
    fi
}

case "${1:-}" in
fetch)
    (cd "$go_dir" && go mod download && go build -o /dev/null .)
    echo "franz-go is in $(go env GOMODCACHE)"
    install_venv
    echo "confluent-kafka $version is in $venv"
    ;;
run)
    [ $# -ge 3 ] || { echo "usage: $0 run librdkafka|franz-go SCENARIO [--key value]..." >&2; exit 2; }
    client="$2"
    shift 2
    case "$client" in
    librdkafka)
        install_venv
        exec "$venv/bin/python" "$py_dir/kafka_scenarios.py" "$@"
        ;;
    franz-go)
        bin="${TMPDIR:-/tmp}/skiff-compat-go-kafka-manual"
        (cd "$go_dir" && go build -o "$bin" .)
        exec "$bin" "$@"
        ;;
    *)
        echo "unknown client $client (librdkafka or franz-go)" >&2
        exit 2
        ;;
    esac
    ;;
*)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
