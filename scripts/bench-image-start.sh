#!/usr/bin/env bash
# Time from `docker run` to ready for the Skiff image, as in docs/benchmarks.md: ready = `skiff
# health` (on the host) sees the broker registered with the name server and answering a
# heartbeat, polled every 10 ms. Prints one line per run and the image size.
#
#   scripts/bench-image-start.sh [RUNS]     # default 10; image $SKIFF_IMAGE or skiff:latest
set -euo pipefail
cd "$(dirname "$0")/.."

runs="${1:-10}"
image="${SKIFF_IMAGE:-skiff:latest}"
skiff="$(ls target/*/release/skiff 2>/dev/null | head -n 1)"
[ -x "$skiff" ] || { echo "build it first: scripts/image.sh" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "image $image: $(docker image inspect --format '{{.Size}}' "$image") bytes"
for i in $(seq 1 "$runs"); do
    ns="127.0.0.1:$(free_port)"
    br="127.0.0.1:$(free_port)"
    start=$(date +%s%N)
    id=$(docker run -d --network host -e SKIFF_NAMESRV_LISTEN="$ns" -e SKIFF_BROKER_LISTEN="$br" "$image")
    ready=""
    for _ in $(seq 1 1000); do
        if "$skiff" health --namesrv "$ns" --broker "$br" --timeout 500ms >/dev/null 2>&1; then
            ready=$(( ($(date +%s%N) - start) / 1000000 ))
            break
        fi
        sleep 0.01
    done
    # The container's cgroup (v1, cgroupfs driver): its processes' memory and page cache.
    mem_kib=$(( $(cat "/sys/fs/cgroup/memory/docker/$id/memory.usage_in_bytes" 2>/dev/null || echo 0) / 1024 ))
    stop_start=$(date +%s%N)
    docker stop "$id" >/dev/null
    stopped=$(( ($(date +%s%N) - stop_start) / 1000000 ))
    code=$(docker inspect --format '{{.State.ExitCode}}' "$id")
    docker rm "$id" >/dev/null
    echo "run $i: ready ${ready:-never} ms after docker run, memory ${mem_kib} KiB, docker stop ${stopped} ms (exit $code)"
done
