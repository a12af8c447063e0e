#!/usr/bin/env bash
# Runs every test of the project, as CI does: formatting and lints, unit and integration tests of
# every crate, and the compatibility suite that drives the official RocketMQ clients (fetched from
# Maven Central on first use, cached in ~/.m2; the Go client through the Go module proxy, cached in
# the Go module cache) against Skiff, then every fuzz target for a bounded time
# (SKIFF_FUZZ_SECONDS each, default 20).
#
# Environment knobs (all optional): see compat-tests/README.md for SKIFF_COMPAT_* variables.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

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

step "fetch the official Go client (compat-tests/go)"
./scripts/compat-go.sh fetch

step "cargo test (unit, integration, compat)"
cargo test --workspace

step "fuzz every decoder of outside bytes for a bounded time (scripts/fuzz.sh)"
./scripts/fuzz.sh
