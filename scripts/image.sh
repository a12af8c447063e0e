#!/usr/bin/env bash
# Builds the Skiff container image offline: a statically linked release `skiff` built on the host,
# then docker/Dockerfile (FROM scratch, nothing pulled) with a build context holding only that
# binary. Needs a running Docker engine (scripts/docker-engine.sh starts one).
#
#   scripts/image.sh            # tags skiff:latest
#   scripts/image.sh skiff:dev  # or SKIFF_IMAGE=skiff:dev scripts/image.sh
#
# The binary is linked against musl when that target is installed, otherwise statically against
# glibc (crt-static; the static libraries come with libc6-dev). It is stripped: the image carries
# no debug info.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="${1:-${SKIFF_IMAGE:-skiff:latest}}"

if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
    target=x86_64-unknown-linux-musl
    rustflags=""
else
    target=x86_64-unknown-linux-gnu
    rustflags="-C target-feature=+crt-static"
fi

echo "image.sh: building a static skiff for $target (release)"
# --target keeps these artifacts apart from the host build (target/<target>/release), and
# RUSTFLAGS then applies to the target only, not to build scripts and proc macros.
RUSTFLAGS="$rustflags" CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --release --target "$target" -p skiff --bin skiff
bin="target/$target/release/skiff"

# A FROM-scratch image has no loader: refuse a binary that needs one.
if readelf -l "$bin" 2>/dev/null | grep -q 'Requesting program interpreter'; then
    echo "image.sh: $bin is dynamically linked; cannot put it in a FROM-scratch image" >&2
    exit 1
fi

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
cp "$bin" "$context/skiff"

revision="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "image.sh: docker build -t $tag (context: the binary only)"
DOCKER_BUILDKIT=0 docker build --quiet -f docker/Dockerfile -t "$tag" \
    --label "org.opencontainers.image.revision=$revision" \
    --label "org.opencontainers.image.source=skiff" \
    "$context" >/dev/null
size="$(docker image inspect --format '{{.Size}}' "$tag")"
echo "image.sh: built $tag ($((size / 1024 / 1024)) MiB, revision $revision)"
