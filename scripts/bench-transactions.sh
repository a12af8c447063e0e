#!/usr/bin/env bash
# Transactional send TPS, Skiff against Apache RocketMQ 5.3.3 (issue 7): each broker pinned to core
# 0 (ASYNC_FLUSH, fresh store), `skiff bench produce --transaction --producers 16 --size 1024` on
# core 1. Each send is what a TransactionMQProducer does when its local transaction commits: a half
# message (TRAN_MSG, PGROUP, sys flag TRANSACTION_PREPARED), then a oneway END_TRANSACTION commit.
# A Rust load generator, because the official Java producer needs more CPU per transaction than
# either broker and on two cores it, not the broker, sets the rate (see docs/benchmarks.md).
#
#   scripts/bench-transactions.sh [ROUNDS]   # default 2 rounds of skiff, apache (alternating)
#
# Prints, per run, the load average, TPS and latency summary, and the broker's CPU (cores, and
# microseconds of broker CPU per transaction). Settings (environment): WARMUP, DURATION (seconds,
# default 5 and 30), WORK, NAMESRV_PORT, BROKER_PORT, TARGETS ("skiff apache"), SKIFF_BIN.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-2}"
WARMUP="${WARMUP:-5}"
DURATION="${DURATION:-30}"
WORK="${WORK:-${TMPDIR:-/tmp}/skiff-bench-transactions}"
NAMESRV_PORT="${NAMESRV_PORT:-29876}"
BROKER_PORT="${BROKER_PORT:-30911}"
TARGETS="${TARGETS:-skiff apache}"
TOPIC=SkiffTxBench
BROKER_CPU=0
LOAD_CPU=1
skiff="${SKIFF_BIN:-$root/target/release/skiff}"
results="$WORK/results.txt"
ns="127.0.0.1:$NAMESRV_PORT"

log() { echo "[$(date +%T)] $*" >&2; }
put() { echo "$1=$2" >>"$results"; }

# shellcheck source=bench/brokers.sh
source "$root/scripts/bench/brokers.sh"

mkdir -p "$WORK"
: >"$results"
[ -n "${SKIFF_BIN:-}" ] || (cd "$root" && cargo build --release --bin skiff -q)
(cd "$root/compat-tests/java/broker" && mvn -q -B dependency:build-classpath -Drocketmq.version=5.3.3 \
    -Dmdep.outputFile="$WORK/broker.cp") >&2
broker_cp="$(cat "$WORK/broker.cp")"

echo "skiff=$("$skiff" --version 2>/dev/null | head -1) rev=${SKIFF_REV:-$(git -C "$root" describe --always --dirty)}"
for round in $(seq "$rounds"); do
    for target in $TARGETS; do
        key="$target.$round"
        dir="$WORK/$target-$round"
        log "$key: starting $target"
        start "$target" ASYNC_FLUSH "$dir" 1
        # Creates the topic (8 queues) and checks that committed halves reach consumers.
        bench "$dir/check.out" both --transaction --messages 2000 --producers 4 --queues 8 ||
            { echo "$key: the transactional check failed (see $dir/check.out)" >&2; exit 1; }
        load_before="$(cut -d' ' -f1 /proc/loadavg)"
        phase_begin
        bench "$dir/tx.out" produce --transaction --producers 16 --size 1024 \
            --warmup "${WARMUP}s" --duration "${DURATION}s" || true
        phase_end "$key"
        summary="$(grep '^SUMMARY produce' "$dir/tx.out")"
        tps="$(sed -n 's/.* tps=\([0-9.]*\).*/\1/p' <<<"$summary")"
        cores="$(sed -n "s/^$key.broker_cpu=//p" "$results")"
        echo "$key load=$load_before->$(cut -d' ' -f1 /proc/loadavg) broker_cores=$cores" \
            "broker_us_per_tx=$(python3 -c "print(f'{$cores * 1e6 / $tps:.1f}')") $summary"
        shutdown
        rm -rf "$dir/store"  # gigabytes per run; the logs stay
    done
done
