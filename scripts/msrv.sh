#!/usr/bin/env bash
# Checks the workspace with the toolchain of its declared minimum Rust version (`rust-version` in
# Cargo.toml). When that is the default toolchain, the other CI steps already build with it.
# When it is not installed and cannot be installed (no network for toolchains), it says so
# plainly and fails, so a rust-version nobody builds with cannot stand in the manifest.
set -euo pipefail
cd "$(dirname "$0")/.."
msrv="$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)"
[ -n "$msrv" ] || { echo "no rust-version in Cargo.toml"; exit 1; }
toolchain="$msrv"
[[ "$toolchain" =~ ^[0-9]+\.[0-9]+$ ]] && toolchain="$toolchain.0"
default="$(rustc --version | awk '{print $2}')"
if [ "$default" = "$toolchain" ]; then
    echo "the default toolchain is the declared minimum ($toolchain): every other step checks it"
    exit 0
fi
if ! rustup run "$toolchain" rustc --version >/dev/null 2>&1; then
    rustup toolchain install "$toolchain" --profile minimal >/dev/null 2>&1 || {
        echo "rust-version is $msrv but toolchain $toolchain is not installed and cannot be installed here;"
        echo "install it (rustup toolchain install $toolchain) or raise rust-version to one CI has ($default)"
        exit 1
    }
fi
cargo +"$toolchain" check --workspace --all-targets --quiet
echo "the workspace builds with its declared minimum Rust ($toolchain)"
