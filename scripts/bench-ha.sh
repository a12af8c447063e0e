#!/usr/bin/env bash
# Master/slave replication, Skiff pairs against Apache RocketMQ 5.3.3 pairs on this machine
# (issue 11). Both brokers of a pair (and the name server) run on core 0, every load generator on
# core 1, everything on 127.0.0.1:
#
#   - sends: `skiff bench produce` (16 producers, 1 KiB, synchronous) against a pair with
#     SYNC_MASTER + SYNC_FLUSH (inSyncReplicas=2: a send waits for the slave and the disk) and
#     against one with ASYNC_MASTER + ASYNC_FLUSH: TPS and latency percentiles;
#   - catch-up: a slave that was stopped while its master took CATCHUP_MB of 16 KiB messages
#     starts again, on core 1 (no load generator runs then); `skiff migrate replicate` times it
#     until it holds the master's whole CommitLog.
#     A Skiff slave of an Apache master (the migration case), an Apache pair and a Skiff pair.
#     This machine is a microVM whose host backs guest memory lazily: the first write to a page
#     frame the guest never used costs a host fault (2 GiB written to a new file: 0.48 GB/s the
#     first time, 4.3 GB/s right after its removal). A slave copying a backlog into fresh page
#     cache would measure that, not itself, so by default (WARM_MEMORY=1) the script stops the
#     guest from handing freed memory back (free page reporting, as root; see
#     hold_freed_memory), then writes and removes a file of the backlog's size plus 1 GiB just
#     before the slave starts, as memory that a long-running host has used once;
#     WARM_MEMORY=0 measures the cold case.
#
#   scripts/bench-ha.sh                 full run (10 s warm-up + 60 s per send run, 4 GiB catch-up)
#   scripts/bench-ha.sh --quick         smoke run (5 s + 10 s, 512 MiB)
#
# Settings (environment): WARMUP, DURATION (seconds), CATCHUP_MB, KINDS ("skiff apache": whose
# pairs send), CATCHUPS ("apache:skiff apache:apache skiff:skiff": master:slave pairs that catch
# up), WARM_MEMORY (1: back the page cache's memory before a catch-up, 0: cold), MASTER_BATCH_SIZE
# (bytes: the catch-ups run `skiff migrate replicate --master-batch-size` with it, so a Java
# master sends frames that large; empty: Java's 32 KiB), WORK (scratch), APACHE_HEAP (each Apache
# broker's -Xms/-Xmx, 4g: two brokers share the machine), SKIFF_BIN.
# Results: a key=value file and a Markdown table under WORK; paste the table into
# docs/benchmarks.md ("Replication"). Each run's stores are removed once it is measured
# (KEEP_STORES=1 keeps them); a full run needs about 10 GiB free at its peak.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
if [ "$quick" = 1 ]; then
    WARMUP="${WARMUP:-5}" DURATION="${DURATION:-10}" CATCHUP_MB="${CATCHUP_MB:-512}"
else
    WARMUP="${WARMUP:-10}" DURATION="${DURATION:-60}" CATCHUP_MB="${CATCHUP_MB:-4096}"
fi
WORK="${WORK:-${TMPDIR:-/tmp}/skiff-bench-ha}"
APACHE_HEAP="${APACHE_HEAP:-4g}"
KINDS="${KINDS-skiff apache}"
WARM_MEMORY="${WARM_MEMORY:-1}"
MASTER_BATCH_SIZE="${MASTER_BATCH_SIZE:-}"
CATCHUPS="${CATCHUPS-apache:skiff apache:apache skiff:skiff}"
NAMESRV_PORT=29876
MASTER_PORT=30911
SLAVE_PORT=31911
BROKER_CPU=0
LOAD_CPU=1
TOPIC=SkiffBench
ns="127.0.0.1:$NAMESRV_PORT"
skiff="${SKIFF_BIN:-$root/target/release/skiff}"
report="$root/scripts/bench/report.py"
results="$WORK/results.txt"

log() { echo "[$(date +%T)] $*" >&2; }
put() { echo "$1=$2" >>"$results"; }

# stop, wait_line, jvm_opens, bench, phase_begin/phase_end.
# shellcheck source=bench/brokers.sh
source "$root/scripts/bench/brokers.sh"

apache_jvm=(-server "-Xms$APACHE_HEAP" "-Xmx$APACHE_HEAP" -XX:+UseG1GC -XX:G1HeapRegionSize=16m
    -XX:G1ReservePercent=25 -XX:InitiatingHeapOccupancyPercent=30 -XX:SoftRefLRUPolicyMSPerMB=0
    -XX:-OmitStackTraceInFastThrow -XX:+AlwaysPreTouch -XX:MaxDirectMemorySize=8g)

# broker_conf DIR NAME ID ROLE FLUSH PORT: a Java broker.conf both kinds read.
broker_conf() {
    local dir="$1" name="$2" id="$3" role="$4" flush="$5" port="$6"
    cat >"$dir/$name.conf" <<EOF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=$id
brokerRole=$role
inSyncReplicas=2
listenPort=$port
namesrvAddr=$ns
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
storePathRootDir=$dir/store-$name
storePathCommitLog=$dir/store-$name/commitlog
autoCreateTopicEnable=true
flushDiskType=$flush
EOF
}

# run_broker KIND DIR NAME [CPU]: starts one broker from DIR/NAME.conf on core CPU (default 0);
# sets last_pid.
run_broker() {
    local kind="$1" dir="$2" name="$3" cpu="${4:-$BROKER_CPU}" pid
    rm -f "$dir/$name.stdout"
    if [ "$kind" = skiff ]; then
        taskset -c "$cpu" "$skiff" --log-format json broker -c "$dir/$name.conf" \
            >"$dir/$name.stdout" 2>"$dir/$name.stderr" &
        pid=$!
        pids+=("$pid")
        wait_line "$dir/$name.stdout" "broker is ready" 600 "$pid" || return 1
    else
        local home="$dir/home-$name"
        mkdir -p "$home"
        (cd "$dir" && ROCKETMQ_HOME="$home" exec taskset -c "$cpu" java "${apache_jvm[@]}" \
            "${jvm_opens[@]}" -Duser.home="$home" -Drocketmq.home.dir="$home" -Djava.io.tmpdir="$home" \
            -cp "$broker_cp" org.apache.rocketmq.broker.BrokerStartup -c "$dir/$name.conf" \
            >"$dir/$name.stdout" 2>"$dir/$name.stderr") &
        pid=$!
        pids+=("$pid")
        wait_line "$dir/$name.stdout" "boot success" 600 "$pid" || return 1
    fi
    last_pid=$pid
}

# run_namesrv KIND DIR: sets last_pid.
run_namesrv() {
    local kind="$1" dir="$2" pid
    if [ "$kind" = skiff ]; then
        taskset -c $BROKER_CPU "$skiff" namesrv --listen "$ns" >"$dir/namesrv.stdout" 2>&1 &
        pid=$!
        pids+=("$pid")
        wait_line "$dir/namesrv.stdout" "name server is ready" 120 "$pid" || return 1
    else
        echo "listenPort=$NAMESRV_PORT" >"$dir/namesrv.conf"
        mkdir -p "$dir/home-namesrv"
        (cd "$dir" && ROCKETMQ_HOME="$dir/home-namesrv" exec taskset -c $BROKER_CPU java -server -Xms1g -Xmx1g -XX:+UseG1GC \
            "${jvm_opens[@]}" -Duser.home="$dir/namesrv-home" -Djava.io.tmpdir="$dir/home-namesrv" \
            -cp "$broker_cp" org.apache.rocketmq.namesrv.NamesrvStartup -c "$dir/namesrv.conf" \
            >"$dir/namesrv.stdout" 2>&1) &
        pid=$!
        pids+=("$pid")
        wait_line "$dir/namesrv.stdout" "boot success" 120 "$pid" || return 1
    fi
    last_pid=$pid
}

# wait_slave_registered: until the name server lists broker-a's brokerId 1 (up to 2 minutes).
wait_slave_registered() {
    for _ in $(seq 240); do
        if "$skiff" admin -n "$ns" cluster --json 2>/dev/null | grep -q '"brokerId": 1'; then
            return 0
        fi
        sleep 0.5
    done
    echo "the slave did not register within 2 minutes" >&2
    return 1
}

# sends KIND ROLE FLUSH: a pair of KIND, then `skiff bench produce` against it.
sends() {
    local kind="$1" role="$2" flush="$3" key dir ns_pid master_pid slave_pid
    key="$kind.$(echo "$role" | tr 'A-Z' 'a-z')"
    dir="$WORK/$kind-$role"
    rm -rf "$dir" && mkdir -p "$dir"
    log "$key: $kind pair, $role + $flush"
    broker_conf "$dir" master 0 "$role" "$flush" $MASTER_PORT
    broker_conf "$dir" slave 1 SLAVE "$flush" $SLAVE_PORT
    run_namesrv "$kind" "$dir"; ns_pid=$last_pid
    run_broker "$kind" "$dir" master; master_pid=$last_pid
    run_broker "$kind" "$dir" slave; slave_pid=$last_pid
    wait_slave_registered
    broker_pid=$master_pid
    bench "$dir/check.out" both --messages 2000 --producers 4 --queues 8 ||
        log "$key: the check failed (see $dir/check.out)"
    put "$key.check" "$(grep '^SUMMARY verify' "$dir/check.out" | cut -d' ' -f3- || echo FAILED)"
    phase_begin
    bench "$dir/send.out" produce --producers 16 --size 1024 \
        --warmup "${WARMUP}s" --duration "${DURATION}s" || true
    phase_end "$key.send"
    python3 "$report" skiff "$dir/send.out" produce "$key.send" >>"$results"
    put "$key.master_rss_kb" "$(peak_rss_kb "$master_pid")"
    put "$key.slave_rss_kb" "$(peak_rss_kb "$slave_pid")"
    stop "$slave_pid"
    stop "$master_pid"
    stop "$ns_pid"
    remove_stores "$dir"
}

# remove_stores DIR: the stores of a finished run (gigabytes each; the brokers of the next run
# refuse writes once the disk is 90 % full). KEEP_STORES=1 keeps them.
remove_stores() {
    [ -n "${KEEP_STORES:-}" ] || rm -rf "$1"/store-*
}

# The guest kernel reports freed memory to the host (virtio-balloon free page reporting), which
# takes it back within seconds; written to again, each page costs a host fault (2 GiB to a new
# file: 4.2 GB/s right after the same write, 0.8 GB/s 6 s later). hold_freed_memory stops the
# reporting while a catch-up runs (blocks of order 11 never exist), release_freed_memory
# restores it; without root or that knob the warm-up alone is what the run gets.
reporting=/sys/module/page_reporting/parameters/page_reporting_order
reporting_saved=""
hold_freed_memory() {
    if [ -w "$reporting" ] && [ -z "$reporting_saved" ]; then
        reporting_saved=$(cat "$reporting")
        echo 11 >"$reporting"
        log "free page reporting held (page_reporting_order $reporting_saved -> 11)"
    fi
}
release_freed_memory() {
    if [ -n "$reporting_saved" ]; then
        echo "$reporting_saved" >"$reporting"
        reporting_saved=""
    fi
}
trap "cleanup; release_freed_memory" EXIT

disk_read_bytes() { awk '/^read_bytes/ {print $2}' "/proc/$1/io"; }
# cpu_ticks PID: user + system CPU time the process has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# catchup MASTER_KIND SLAVE_KIND: a SLAVE_KIND slave stopped while its MASTER_KIND master takes
# CATCHUP_MB, then started again and timed until it holds everything.
catchup() {
    local master_kind="$1" kind="$2" key="catchup.$1.$2" dir="$WORK/catchup-$1-$2"
    local ns_pid master_pid slave_pid count
    count=$((CATCHUP_MB * 1024 * 1024 / 16384))
    rm -rf "$dir" && mkdir -p "$dir"
    log "$key: $master_kind master, $kind slave, $CATCHUP_MB MiB backlog"
    broker_conf "$dir" master 0 ASYNC_MASTER ASYNC_FLUSH $MASTER_PORT
    broker_conf "$dir" slave 1 SLAVE ASYNC_FLUSH $SLAVE_PORT
    run_namesrv "$master_kind" "$dir"; ns_pid=$last_pid
    run_broker "$master_kind" "$dir" master; master_pid=$last_pid
    run_broker "$kind" "$dir" slave; slave_pid=$last_pid
    wait_slave_registered
    # A few messages the slave copies first: an empty slave would get only the master's last
    # segment (Java's rule for a first report of 0), a slave with data everything after it.
    bench "$dir/prime.out" produce --messages 100 --size 16384 --producers 1 --queues 8 || true
    taskset -c $LOAD_CPU "$skiff" migrate -n "$ns" replicate --interval 100ms >/dev/null
    stop "$slave_pid"
    bench "$dir/fill.out" produce --messages "$count" --size 16384 --async --inflight 4 \
        --producers 4 --queues 8 || true
    python3 "$report" skiff "$dir/fill.out" produce "$key.fill" >>"$results"
    if [ "$WARM_MEMORY" = 1 ]; then
        hold_freed_memory
        dd if=/dev/zero of="$dir/warm" bs=1M count=$((CATCHUP_MB + 1024)) status=none
        rm -f "$dir/warm"
    fi
    # Nothing else runs now: the slave gets the other core, as a slave on its own host would.
    local read_before master_ticks
    read_before=$(disk_read_bytes "$master_pid")
    master_ticks=$(cpu_ticks "$master_pid")
    run_broker "$kind" "$dir" slave "$LOAD_CPU"; slave_pid=$last_pid
    taskset -c $LOAD_CPU "$skiff" migrate -n "$ns" --json replicate --interval 100ms \
        ${MASTER_BATCH_SIZE:+--master-batch-size "$MASTER_BATCH_SIZE"} \
        >"$dir/replicate.json" 2>"$dir/replicate.err" || log "$key: replicate failed (see $dir)"
    python3 - "$dir/replicate.json" "$key" >>"$results" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
g = doc["groups"][0]
print(f"{sys.argv[2]}.bytes={g['copiedBytes']}")
print(f"{sys.argv[2]}.secs={g['seconds']:.3f}")
print(f"{sys.argv[2]}.mb_per_s={g['copiedBytes'] / g['seconds'] / 1e6:.0f}")
EOF
    # What the master read from the disk to serve it (0 when the backlog was still cached).
    put "$key.master_disk_read_mb" $(( ($(disk_read_bytes "$master_pid") - read_before) / 1000000 ))
    # Who was busy: CPU seconds of the master during the catch-up and of the slave since its
    # start (each has one core; seconds of CPU close to the catch-up's seconds mean that side
    # set the pace).
    put "$key.master_cpu_s" "$(echo "$(( $(cpu_ticks "$master_pid") - master_ticks )) $(getconf CLK_TCK)" | awk '{printf "%.1f", $1 / $2}')"
    put "$key.slave_cpu_s" "$(echo "$(cpu_ticks "$slave_pid") $(getconf CLK_TCK)" | awk '{printf "%.1f", $1 / $2}')"
    # Minor page faults of the slave since its start: memory it touches for the first time
    # (read buffers, pages populated ahead) costs a fault per 4 KiB, a cost that, unlike the
    # seconds, does not swing with the host.
    put "$key.slave_minflt" "$(awk '{print $10}' "/proc/$slave_pid/stat")"
    stop "$slave_pid"
    stop "$master_pid"
    stop "$ns_pid"
    remove_stores "$dir"
    release_freed_memory
}

mkdir -p "$WORK"
: >"$results"
log "building skiff (release) and resolving Apache's classpath"
[ -n "${SKIFF_BIN:-}" ] || (cd "$root" && cargo build --release --bin skiff -q)
(cd "$root/compat-tests/java/broker" && mvn -q -B dependency:build-classpath -Drocketmq.version=5.3.3 \
    -Dmdep.outputFile="$WORK/broker.cp") >&2
broker_cp="$(cat "$WORK/broker.cp")"
put "meta.date" "$(date -u '+%Y-%m-%d %H:%M UTC')"
put "meta.skiff" "$(git -C "$root" describe --always --dirty)"
put "meta.load_before" "$(cut -d' ' -f1-3 /proc/loadavg)"
put "meta.warm_memory" "$WARM_MEMORY"
put "meta.master_batch_size" "${MASTER_BATCH_SIZE:-default}"

for kind in $KINDS; do
    sends "$kind" SYNC_MASTER SYNC_FLUSH
    sends "$kind" ASYNC_MASTER ASYNC_FLUSH
done
for pair in $CATCHUPS; do
    catchup "${pair%:*}" "${pair#*:}"
done
put "meta.load_after" "$(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" >"$WORK/results.md" <<'EOF'
import sys
r = dict(line.rstrip("\n").split("=", 1) for line in open(sys.argv[1]) if "=" in line)
def g(k, d="-"): return r.get(k, d)
print(f"Run of {g('meta.date')} (skiff {g('meta.skiff')}; load {g('meta.load_before')} before, {g('meta.load_after')} after; WARM_MEMORY={g('meta.warm_memory')}; MASTER_BATCH_SIZE={g('meta.master_batch_size')}).\n")
print("| pair | master role, flush | send TPS | p50 ms | p99 ms | p99.9 ms | master CPU (cores) |")
print("|---|---|---|---|---|---|---|")
for kind in ("skiff", "apache"):
    for role, flush in (("sync_master", "SYNC_MASTER + SYNC_FLUSH"), ("async_master", "ASYNC_MASTER + ASYNC_FLUSH")):
        k = f"{kind}.{role}.send"
        print(f"| {kind} | {flush} | {g(k + '.tps')} | {g(k + '.p50_ms')} | {g(k + '.p99_ms')} | {g(k + '.p999_ms')} | {g(k + '.broker_cpu')} |")
for role in ("sync_master", "async_master"):
    try:
        ratio = float(g(f"skiff.{role}.send.tps")) / float(g(f"apache.{role}.send.tps"))
        print(f"\n{role}: Skiff / Apache send TPS = {ratio:.2f}", end="")
    except ValueError:
        pass
print("\n\n| catch-up | backlog | seconds | MB/s | master's disk reads | CPU s master / slave | slave minor faults |")
print("|---|---|---|---|---|---|---|")
for pair in ("apache.skiff", "apache.apache", "skiff.skiff"):
    k = f"catchup.{pair}"
    if k + ".bytes" in r:
        m, s = pair.split(".")
        print(f"| {m} master, {s} slave | {int(g(k + '.bytes')) / 2**20:.0f} MiB | {g(k + '.secs')} | {g(k + '.mb_per_s')} | {g(k + '.master_disk_read_mb')} MB | {g(k + '.master_cpu_s')} / {g(k + '.slave_cpu_s')} | {g(k + '.slave_minflt')} |")
EOF
cat "$WORK/results.md"
