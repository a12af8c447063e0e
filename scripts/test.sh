#!/usr/bin/env bash
# Runs every test of the project, as CI does: formatting and lints, unit and integration tests of
# every crate, and the compatibility suite that drives the official RocketMQ clients (fetched from
# Maven Central on first use, cached in ~/.m2; the Go client through the Go module proxy, cached in
# the Go module cache) against Skiff.
#
# Environment knobs (all optional): see compat-tests/README.md for SKIFF_COMPAT_* variables.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "build the skiff binary the compat suite starts"
cargo build --bin skiff

step "fetch the official Go client (compat-tests/go)"
./scripts/compat-go.sh fetch

step "cargo test (unit, integration, compat)"
cargo test --workspace
