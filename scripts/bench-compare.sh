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
# use instead of building target/release/skiff; SKIFF_REV then names its commit).
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

# ---- processes -------------------------------------------------------------------------------

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill -9 "$pid" 2>/dev/null || true
    done
}
trap cleanup EXIT

# stop PID [SIGNAL]: signal it and wait up to 20 s, then kill it.
stop() {
    local pid="$1" sig="${2:-TERM}"
    kill -"$sig" "$pid" 2>/dev/null || return 0
    for _ in $(seq 200); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# wait_line FILE PATTERN SECONDS PID: whether PATTERN shows up in FILE in time, while PID lives.
wait_line() {
    local deadline=$((SECONDS + $3))
    while [ $SECONDS -lt "$deadline" ] && kill -0 "$4" 2>/dev/null; do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    echo "no '$2' in $1 (after $3 s, or the process ended):" >&2
    tail -20 "$1" >&2
    return 1
}

# ---- brokers ---------------------------------------------------------------------------------

jvm_opens=(--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --add-exports=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED
    --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED)
# Apache's runbroker.sh (JDK 9+ branch), as shipped.
broker_jvm=(-server -Xms8g -Xmx8g -XX:+UseG1GC -XX:G1HeapRegionSize=16m -XX:G1ReservePercent=25
    -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0 -XX:-OmitStackTraceInFastThrow
    -XX:+AlwaysPreTouch -XX:MaxDirectMemorySize=15g -XX:-UseLargePages)

# start TARGET FLUSH DIR FRESH: starts the broker (and, for apache, its name server) on core 0;
# sets broker_pid, namesrv_pid (apache) and start_secs (broker exec to ready).
start() {
    local target="$1" flush="$2" dir="$3" fresh="$4" t0
    [ "$fresh" = 1 ] && rm -rf "$dir"
    mkdir -p "$dir"
    # A previous run's "ready" line must not be mistaken for this one's.
    rm -f "$dir/stdout" "$dir/stderr" "$dir/namesrv.stdout"
    t0=$(date +%s.%N)
    if [ "$target" = skiff ]; then
        taskset -c $BROKER_CPU "$skiff" --log-format json standalone --data "$dir/store" \
            --namesrv-listen "$ns" --broker-listen "127.0.0.1:$BROKER_PORT" \
            --set flushDiskType="$flush" >"$dir/stdout" 2>"$dir/stderr" &
        broker_pid=$!
        pids+=("$broker_pid")
        wait_line "$dir/stdout" "standalone is ready" 600 "$broker_pid"
    else
        local home="$dir/home"
        mkdir -p "$home"
        # A fresh name server each time: one that outlived the previous broker would hand out
        # that broker's routes.
        echo "listenPort=$NAMESRV_PORT" >"$dir/namesrv.conf"
        (cd "$dir" && ROCKETMQ_HOME="$home" exec taskset -c $BROKER_CPU java -server -Xms1g -Xmx1g \
            -XX:+UseG1GC "${jvm_opens[@]}" -Duser.home="$dir/namesrv-home" \
            -cp "$broker_cp" org.apache.rocketmq.namesrv.NamesrvStartup -c "$dir/namesrv.conf" \
            >"$dir/namesrv.stdout" 2>&1) &
        namesrv_pid=$!
        pids+=("$namesrv_pid")
        wait_line "$dir/namesrv.stdout" "boot success" 120 "$namesrv_pid"
        t0=$(date +%s.%N)
        cat >"$dir/broker.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
listenPort=$BROKER_PORT
namesrvAddr=$ns
brokerIP1=127.0.0.1
storePathRootDir=$dir/store
storePathCommitLog=$dir/store/commitlog
autoCreateTopicEnable=true
flushDiskType=$flush
EOF
        (cd "$dir" && ROCKETMQ_HOME="$home" exec taskset -c $BROKER_CPU java "${broker_jvm[@]}" \
            "${jvm_opens[@]}" -Duser.home="$home" -Drocketmq.home.dir="$home" \
            -cp "$broker_cp" org.apache.rocketmq.broker.BrokerStartup -c "$dir/broker.conf" \
            >"$dir/stdout" 2>"$dir/stderr") &
        broker_pid=$!
        pids+=("$broker_pid")
        wait_line "$dir/stdout" "boot success" 600 "$broker_pid"
    fi
    start_secs=$(python3 -c "import time; print(f'{time.time() - $t0:.3f}')")
}

# shutdown [SIGNAL]: stops the broker (with SIGNAL), then the Apache name server if there is one.
shutdown() {
    stop "$broker_pid" "${1:-TERM}"
    if [ -n "${namesrv_pid:-}" ]; then
        stop "$namesrv_pid"
        namesrv_pid=
    fi
}

# CPU seconds the process has used so far (user + system).
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }

# phase_begin / phase_end KEY: the broker's CPU use during a phase, in cores (1.0 = one core busy).
phase_begin() {
    phase_cpu=$(cpu_secs "$broker_pid")
    phase_t0=$(date +%s.%N)
}
phase_end() {
    local used
    used=$(python3 -c "print($(cpu_secs "$broker_pid") - $phase_cpu)")
    put "$1.broker_cpu" "$(python3 -c "import time; print(f'{$used / (time.time() - $phase_t0):.2f}')")"
    put "$1.broker_cpu_secs" "$used"
}

peak_rss_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

# ---- load generators (core 1) ----------------------------------------------------------------

# bench OUTFILE ARGS...: `skiff bench` against the running broker.
bench() {
    local out="$1"
    shift
    taskset -c $LOAD_CPU "$skiff" bench --namesrv "$ns" --topic "$TOPIC" --interval 10s "$@" >"$out" 2>&1
}

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
