#!/usr/bin/env bash
# Send latency (p50 .. p99.9, max) of one skiff binary under the load of scripts/bench-compare.sh:
# `skiff standalone` pinned to core 0 on a fresh store, `skiff bench produce --producers 16
# --size 1024` pinned to core 1. Prints the load average before and after and the bench's summary.
#
#   scripts/bench-latency.sh SKIFF_BIN [FLUSH] [DURATION_S] [WARMUP_S]
#
# FLUSH is ASYNC_FLUSH (default) or SYNC_FLUSH. Run the binaries to compare back to back.
# Settings (environment): WORK (scratch directory), NAMESRV_PORT, BROKER_PORT, EXTRA (more
# `--set key=value` arguments for the broker), RATE (sends per second in all: the same load for
# every binary compared; without it the producers send as fast as the broker answers), BENCH (the
# skiff binary that runs the load, by default SKIFF_BIN; one for all the binaries compared).
set -euo pipefail

skiff="$1"
flush="${2:-ASYNC_FLUSH}"
duration="${3:-30}"
warmup="${4:-5}"
WORK="${WORK:-${TMPDIR:-/tmp}/skiff-bench-latency}"
NAMESRV_PORT="${NAMESRV_PORT:-29886}"
BROKER_PORT="${BROKER_PORT:-30921}"
ns="127.0.0.1:$NAMESRV_PORT"

rm -rf "$WORK"
mkdir -p "$WORK"
# shellcheck disable=SC2086
taskset -c 0 "$skiff" --log-format json standalone --data "$WORK/store" \
    --namesrv-listen "$ns" --broker-listen "127.0.0.1:$BROKER_PORT" \
    --set flushDiskType="$flush" ${EXTRA:-} >"$WORK/stdout" 2>"$WORK/stderr" &
broker=$!
trap 'kill -9 $broker 2>/dev/null || true' EXIT
for _ in $(seq 600); do
    grep -q "standalone is ready" "$WORK/stdout" 2>/dev/null && break
    kill -0 $broker 2>/dev/null || { cat "$WORK/stderr"; exit 1; }
    sleep 0.1
done
echo "binary=$skiff flush=$flush warmup=${warmup}s duration=${duration}s rate=${RATE:-unlimited}"
echo "loadavg before: $(cat /proc/loadavg)"
taskset -c 1 "${BENCH:-$skiff}" bench --namesrv "$ns" --topic SkiffBench --interval 10s produce \
    --producers 16 --size 1024 --warmup "${warmup}s" --duration "${duration}s" ${RATE:+--rate "$RATE"} \
    >"$WORK/bench.out" 2>&1 || true
echo "loadavg after: $(cat /proc/loadavg)"
tail -n 3 "$WORK/bench.out"
kill -TERM $broker
wait $broker 2>/dev/null || true
