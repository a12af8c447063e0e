#!/usr/bin/env bash
# Runs every test of the project, as CI does: formatting and lints, unit and integration tests of
# every crate, the compatibility suite that drives the official RocketMQ clients (fetched from
# Maven Central on first use, cached in ~/.m2; the Go client through the Go module proxy, cached in
# the Go module cache) against Skiff, the container tests (the scenario suite against the Skiff
# image and the Testcontainers modules, Rust and Java), then every fuzz target for a bounded time
# (SKIFF_FUZZ_SECONDS each, default 20).
#
# The web console's browser test (server/tests/console.rs) needs headless Chromium:
# scripts/chromium.sh installs Debian's chromium when it is missing (as root), and the test then
# fails instead of skipping when Chromium cannot run (SKIFF_CONSOLE_BROWSER=required).
#
# The container tests need a Docker engine: scripts/docker-engine.sh installs and starts one (as
# root; host networking only, nothing pulled) and scripts/image.sh builds the image. When no
# engine can be started, everything else still runs and the script then fails, saying why.
#
# Environment knobs (all optional): see compat-tests/README.md for SKIFF_COMPAT_* variables.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

# The brokers the compat suite starts (Skiff and Apache alike) refuse sends once their disk is 90 %
# full (diskSpaceWarningLevelRatio; Java caps it at 90), and a build from scratch writes about
# 8 GB into target/: say so up front, from the usage the disk will have once the build is done,
# instead of failing dozens of scenarios with "service not available" half an hour later.
build_kb=$((8 * 1024 * 1024))
built_kb=0
[ -d target ] && built_kb="$(du -sk target | awk '{print $1}')"
step "free disk space (the build, and the brokers' stores under ${TMPDIR:-/tmp})"
for dir in . "${TMPDIR:-/tmp}"; do
    # Used over used + available, as df's Use% and the brokers' own check (Java's UtilAll).
    read -r used_kb avail_kb < <(df -Pk "$dir" | awk 'NR == 2 { print $3, $4 }')
    size_kb=$((used_kb + avail_kb))
    coming_kb=$((build_kb > built_kb ? build_kb - built_kb : 0))
    after=$(((used_kb + coming_kb) * 100 / size_kb))
    echo "$(cd "$dir" && pwd): $((used_kb * 100 / size_kb))% used now, about ${after}% after the build"
    if [ "$after" -ge 89 ]; then
        echo "FAILED: $(cd "$dir" && pwd) would be ${after}% full; the brokers under test refuse sends at" \
            "90 % (diskSpaceWarningLevelRatio). Free some space (old target/ directories and clones," \
            "/tmp/skiff-compat*, docker images) or point TMPDIR at a roomier file system, then run again." >&2
        df -h "$dir" >&2
        exit 1
    fi
done

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "the declared minimum Rust version (rust-version in Cargo.toml)"
./scripts/msrv.sh

step "build the skiff binary the compat suite starts"
cargo build --bin skiff

container_problem=""
step "Docker engine (scripts/docker-engine.sh)"
if ! ./scripts/docker-engine.sh; then
    container_problem="no Docker engine could be started (see the docker-engine.sh lines above)"
fi
if [ -z "$container_problem" ]; then
    step "the Skiff image (scripts/image.sh: static release binary, FROM scratch)"
    if ! ./scripts/image.sh; then
        container_problem="the Skiff image did not build (see the image.sh lines above)"
    fi
fi

step "headless Chromium for the web console's browser test (scripts/chromium.sh)"
./scripts/chromium.sh

step "fetch the official Go client (compat-tests/go)"
./scripts/compat-go.sh fetch

step "fetch the Kafka clients librdkafka (PyPI, into a cached venv) and franz-go (compat-tests/go-kafka)"
./scripts/compat-kafka.sh fetch

step "cargo test (unit, integration, compat)"
SKIFF_CONSOLE_BROWSER=required cargo test --workspace --exclude testcontainers-skiff --no-fail-fast

step "container tests"
if [ -n "$container_problem" ]; then
    echo "FAILED: the container tests cannot run: $container_problem" >&2
    exit 1
fi

step "compat scenarios against the Skiff image (SKIFF_COMPAT_RUNTIME=container)"
SKIFF_COMPAT_RUNTIME=container cargo test -p skiff-compat-tests --test scenarios

step "Rust Testcontainers module (testcontainers/rust)"
cargo test -p testcontainers-skiff

step "Java Testcontainers module (testcontainers/java, JUnit 5; rocketmq-client 5.3.3, then 4.9.8)"
# No Ryuk and no pulls (the pom also sets these for surefire); the engine's local socket.
(
    cd testcontainers/java
    export DOCKER_HOST=unix:///var/run/docker.sock TESTCONTAINERS_RYUK_DISABLED=true \
        TESTCONTAINERS_CHECKS_DISABLE=true TESTCONTAINERS_HOST_OVERRIDE=localhost
    mvn -q -B test
    # The module has no RocketMQ dependency of its own; prove it beside the 4.9.x client line too.
    mvn -q -B test -Drocketmq.version=4.9.8
)

step "fuzz every decoder of outside bytes for a bounded time (scripts/fuzz.sh)"
./scripts/fuzz.sh
