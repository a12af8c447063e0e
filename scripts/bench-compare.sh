#!/usr/bin/env bash
# Skiff against Apache RocketMQ 5.3.3 on this machine, with Apache's own benchmark tools.
#
#   scripts/bench-compare.sh            full run (10 s warm-up + 60 s per measurement, ~20 min)
#   scripts/bench-compare.sh --quick    smoke run (short measurements, small recovery, ~5 min)
#
# For each broker (Skiff's `skiff standalone`, release build; Apache's namesrv + broker 5.3.3 on
# Java 17, heaps as runbroker.sh sets them) and each flush mode (ASYNC_FLUSH, SYNC_FLUSH) it runs,
# with the broker pinned to core 0 and every load generator to core 1:
#   - `skiff bench both` (2000 messages): the topic is created and consumed == produced is checked;
#   - Apache's benchmark Producer (rocketmq-example, 16 threads, 1 KiB, sync sends): send TPS;
#   - `skiff bench produce` (16 producers, 1 KiB): send TPS and latency percentiles;
#   - ASYNC_FLUSH only: Apache's benchmark Consumer and `skiff bench consume --backlog`, each
#     draining the backlog left by the producers: consume TPS;
#   - the broker's peak RSS (VmHWM) under that load;
# and, per broker, a recovery run: a fresh store filled with RECOVERY_MB of 16 KiB messages, kill -9,
# the checkpoint removed (so the whole CommitLog is scanned, as after a crash with a lost
# checkpoint), and a restart: the scan speed is the recovered CommitLog size over the recovery time
# the broker logs (Skiff: "opening message store" to "commit log recovered"; Apache: the
# recoverCommitLog cost of "message store recover total cost").
#
# The results replace the part of docs/benchmarks.md between its results markers.
# Settings (environment): WARMUP, DURATION (seconds), RECOVERY_MB, QUIET_LOAD (1-minute load to
# wait for before starting, up to QUIET_WAIT seconds), WORK (scratch directory), NAMESRV_PORT,
# BROKER_PORT, OUT (the document to update), TARGETS ("skiff apache"), SKIFF_BIN (a skiff binary to
# use instead of building target/release/skiff; SKIFF_REV then names its commit), KEEP_STORES (set:
# keep the brokers' stores under WORK after the run; by default they are removed).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
if [ "$quick" = 1 ]; then
    WARMUP="${WARMUP:-5}" DURATION="${DURATION:-10}" RECOVERY_MB="${RECOVERY_MB:-1024}"
else
    WARMUP="${WARMUP:-10}" DURATION="${DURATION:-60}" RECOVERY_MB="${RECOVERY_MB:-4096}"
fi
QUIET_LOAD="${QUIET_LOAD:-0.5}"
QUIET_WAIT="${QUIET_WAIT:-1200}"
WORK="${WORK:-${TMPDIR:-/tmp}/skiff-bench-compare}"
NAMESRV_PORT="${NAMESRV_PORT:-29876}"
BROKER_PORT="${BROKER_PORT:-30911}"
OUT="${OUT:-$root/docs/benchmarks.md}"
TARGETS="${TARGETS:-skiff apache}"
TOPIC=SkiffBench
BROKER_CPU=0
LOAD_CPU=1
report="$root/scripts/bench/report.py"
skiff="${SKIFF_BIN:-$root/target/release/skiff}"
results="$WORK/results.txt"
ns="127.0.0.1:$NAMESRV_PORT"

log() { echo "[$(date +%T)] $*" >&2; }
put() { echo "$1=$2" >>"$results"; }

# Broker start/stop, CPU accounting and `skiff bench` on the load core.
# shellcheck source=bench/brokers.sh
source "$root/scripts/bench/brokers.sh"


# java_tool OUTFILE SECONDS CLASS ARGS...: one of Apache's benchmark tools for SECONDS.
java_tool() {
    local out="$1" secs="$2" class="$3" pid
    shift 3
    (cd "$WORK" && exec taskset -c $LOAD_CPU java -Xms4g -Xmx4g -XX:+UseG1GC -Duser.home="$WORK/client-home" \
        -Drocketmq.client.logUseSlf4j=false -Drocketmq.client.rebalance.waitInterval=1000 -cp "$example_cp" \
        "org.apache.rocketmq.example.benchmark.$class" -n "$ns" -t "$TOPIC" "$@" >"$out" 2>&1) &
    pid=$!
    pids+=("$pid")
    sleep "$secs"
    stop "$pid"
}

# ---- one broker, one flush mode --------------------------------------------------------------

session() {
    local target="$1" flush="$2" key dir secs
    key="$target.$(echo "$flush" | tr 'A-Z' 'a-z' | cut -d_ -f1)"
    dir="$WORK/$target-$flush"
    secs=$((WARMUP + DURATION))
    log "$key: starting $target with $flush"
    start "$target" "$flush" "$dir" 1
    put "$key.start_secs" "$start_secs"

    log "$key: skiff bench both (topic creation, consumed == produced)"
    if bench "$dir/check.out" both --messages 2000 --producers 4 --queues 8; then
        put "$key.check" "$(grep '^SUMMARY verify' "$dir/check.out" | cut -d' ' -f3-)"
    else
        put "$key.check" "FAILED (see $dir/check.out)"
    fi

    log "$key: Apache benchmark Producer, 16 threads, 1 KiB, ${secs}s"
    local t0
    t0=$(date +%s.%N)
    phase_begin
    java_tool "$dir/java-producer.out" "$secs" Producer -w 16 -s 1024 -ri 5000
    phase_end "$key.java_send"
    python3 "$report" java-send "$dir/java-producer.out" "$t0" "$WARMUP" "$key.java_send" >>"$results"

    log "$key: skiff bench produce, 16 producers, 1 KiB, ${WARMUP}s + ${DURATION}s"
    phase_begin
    bench "$dir/skiff-producer.out" produce --producers 16 --size 1024 \
        --warmup "${WARMUP}s" --duration "${DURATION}s" || true
    phase_end "$key.skiff_send"
    python3 "$report" skiff "$dir/skiff-producer.out" produce "$key.skiff_send" >>"$results"

    if [ "$flush" = ASYNC_FLUSH ]; then
        log "$key: Apache benchmark Consumer draining the backlog, up to ${secs}s"
        t0=$(date +%s.%N)
        phase_begin
        java_tool "$dir/java-consumer.out" "$secs" Consumer -w 20 -g "java_bench_$target" -ri 5000
        phase_end "$key.java_consume"
        python3 "$report" java-consume "$dir/java-consumer.out" "$t0" "$key.java_consume" >>"$results"

        log "$key: skiff bench consume --backlog"
        phase_begin
        bench "$dir/skiff-consumer.out" consume --backlog --group "skiff_bench_$target" \
            --duration "${secs}s" || true
        phase_end "$key.skiff_consume"
        python3 "$report" skiff "$dir/skiff-consumer.out" consume "$key.skiff_consume" >>"$results"
    fi
    put "$key.peak_rss_kb" "$(peak_rss_kb "$broker_pid")"
    shutdown
}

# ---- recovery --------------------------------------------------------------------------------

recovery() {
    local target="$1" dir="$WORK/$target-recovery" size=16384 count
    count=$((RECOVERY_MB * 1024 * 1024 / size))
    log "$target recovery: empty start, then $count x 16 KiB messages"
    start "$target" ASYNC_FLUSH "$dir" 1
    put "$target.empty_start_secs" "$start_secs"
    bench "$dir/fill.out" produce --messages "$count" --size "$size" --async --inflight 4 \
        --producers 4 --queues 8 || true
    python3 "$report" skiff "$dir/fill.out" produce "$target.fill" >>"$results"
    sleep 2
    shutdown 9
    rm -f "$dir/store/checkpoint"
    log "$target recovery: restart after kill -9 without checkpoint"
    start "$target" ASYNC_FLUSH "$dir" 0
    put "$target.recovery_secs" "$start_secs"
    python3 "$report" "recovery-$target" "$dir" "$target.recovery" >>"$results"
    shutdown
}

# ---- main ------------------------------------------------------------------------------------

mkdir -p "$WORK"
: >"$results"
log "building skiff (release) and resolving the Java classpaths"
[ -n "${SKIFF_BIN:-}" ] || (cd "$root" && cargo build --release --bin skiff -q)
(cd "$root/scripts/bench" && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$WORK/example.cp") >&2
(cd "$root/compat-tests/java/broker" && mvn -q -B dependency:build-classpath -Drocketmq.version=5.3.3 \
    -Dmdep.outputFile="$WORK/broker.cp") >&2
example_cp="$(cat "$WORK/example.cp")"
broker_cp="$(cat "$WORK/broker.cp")"

log "waiting (up to ${QUIET_WAIT}s) for the 1-minute load to drop below $QUIET_LOAD"
waited=0
while awk -v q="$QUIET_LOAD" '{exit !($1 >= q)}' /proc/loadavg && [ $waited -lt "$QUIET_WAIT" ]; do
    sleep 15
    waited=$((waited + 15))
done
put "meta.date" "$(date -u '+%Y-%m-%d %H:%M UTC')"
put "meta.load_before" "$(cut -d' ' -f1-3 /proc/loadavg)"
put "meta.waited_secs" "$waited"
put "meta.cpu" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
put "meta.cores" "$(nproc)"
put "meta.mem_gib" "$(awk '/MemTotal/ {printf "%.0f", $2/1048576}' /proc/meminfo)"
put "meta.java" "$(java -version 2>&1 | head -1)"
put "meta.skiff" "${SKIFF_REV:-$(git -C "$root" describe --always --dirty)}"
put "meta.warmup" "$WARMUP"
put "meta.duration" "$DURATION"
put "meta.recovery_mb" "$RECOVERY_MB"
put "meta.quick" "$quick"

for target in $TARGETS; do
    for flush in ASYNC_FLUSH SYNC_FLUSH; do
        session "$target" "$flush"
    done
    recovery "$target"
done
put "meta.load_after" "$(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$report" doc "$results" "$OUT"
log "results in $results; $OUT updated"
# The brokers' stores take about 30 GB: left in /tmp they fill the disk under the next test run,
# whose brokers then refuse sends at 90 %. The logs and outputs stay.
if [ -z "${KEEP_STORES:-}" ]; then
    rm -rf "$WORK"/*/store
    log "broker stores removed (KEEP_STORES=1 keeps them)"
fi
