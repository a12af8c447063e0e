# Shell functions shared by the benchmark scripts (sourced, not run): starting and stopping Skiff
# (`skiff standalone`) or Apache RocketMQ 5.3.3 (name server + broker JVMs, heaps as runbroker.sh
# sets them) pinned to one core, the broker's CPU use per phase, and `skiff bench` on the other.
#
# The sourcing script sets: WORK (scratch directory), NAMESRV_PORT, BROKER_PORT, BROKER_CPU and
# LOAD_CPU (core numbers), TOPIC, skiff (the binary), broker_cp (Apache's classpath, for the
# apache target), ns (127.0.0.1:NAMESRV_PORT), results (a key=value file `put` appends to).
# shellcheck shell=bash
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
            -XX:+UseG1GC "${jvm_opens[@]}" -Duser.home="$dir/namesrv-home" -Djava.io.tmpdir="$home" \
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
            "${jvm_opens[@]}" -Duser.home="$home" -Drocketmq.home.dir="$home" -Djava.io.tmpdir="$home" \
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
