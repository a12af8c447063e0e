#!/usr/bin/env bash
# Skiff's Kafka listener against Apache Kafka 4.1.1 (KRaft, one node) on this machine, with
# Kafka's own load generators, kafka-producer-perf-test and kafka-consumer-perf-test.
#
#   scripts/bench-kafka.sh            full run (RECORDS 1 KiB records per measurement)
#   scripts/bench-kafka.sh --quick    smoke run (fewer records)
#
# For each broker (Skiff's `skiff standalone`, release build, default ASYNC_FLUSH; Apache Kafka
# with kafka-server-start.sh's 1 GiB heap and defaults), pinned to core 0 with the load
# generators on core 1, on a topic of PARTITIONS partitions created before the run:
#   - ProducerPerformance, 1 KiB records, acks=1 then acks=all (no idempotence, default batching,
#     as many records per second as it can): records/s, MB/s (its latencies are then mostly the
#     time records wait in the producer's full buffer);
#   - the same at a fixed RATE records/s, acks=1: average / p99 / p99.9 latency (these count the
#     perf tool's own first seconds, JIT and connections, which send in 100-400 ms with either
#     broker);
#   - SteadyLatency (scripts/bench/kafka-tools): the same rate and record size after WARMUP_S
#     seconds of sends, timed for STEADY_S seconds: the broker's latency once the client is warm;
#   - ConsumerPerformance reading the acks=1 topic from the beginning: records/s, MB/s while
#     fetching (the time to join its group left out);
#   - the broker's CPU time per record in each phase (utime + stime from /proc);
#   - the broker's peak resident memory (VmHWM) over its session.
# Neither broker fsyncs before answering (Kafka never does; Skiff's default flushes every 500 ms).
#
# The results replace the part of docs/benchmarks.md between its bench-kafka markers.
# Settings (environment): RECORDS, PARTITIONS, RATE, WARMUP_S, STEADY_S, KEEP_STORES, WORK, KAFKA_PORT, CONTROLLER_PORT, OUT, SKIFF_BIN
# (a skiff binary instead of target/release/skiff; SKIFF_REV then names its commit), TARGETS.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
if [ "$quick" = 1 ]; then RECORDS="${RECORDS:-100000}"; else RECORDS="${RECORDS:-1000000}"; fi
PARTITIONS="${PARTITIONS:-4}"
# The fixed rate of the latency run: below what either broker sustains here, so that latency
# is the broker's and not the producer's full buffer.
RATE="${RATE:-20000}"
WARMUP_S="${WARMUP_S:-10}"
STEADY_S="${STEADY_S:-30}"
WORK="${WORK:-${TMPDIR:-/tmp}/skiff-bench-kafka}"
KAFKA_PORT="${KAFKA_PORT:-39092}"
CONTROLLER_PORT="${CONTROLLER_PORT:-39093}"
OUT="${OUT:-$root/docs/benchmarks.md}"
TARGETS="${TARGETS:-skiff apache}"
BROKER_CPU=0
LOAD_CPU=1
skiff="${SKIFF_BIN:-$root/target/release/skiff}"
bootstrap="127.0.0.1:$KAFKA_PORT"
results="$WORK/results.txt"
CLK_TCK="$(getconf CLK_TCK)"

log() { echo "[$(date +%T)] $*" >&2; }
put() { echo "$1=$2" >>"$results"; }

pids=()
cleanup() { for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

classpath() { # pom-dir name -> prints the classpath (resolved once into WORK)
    local out="$WORK/$2.classpath"
    [ -s "$out" ] || (cd "$1" && mvn -q -B dependency:build-classpath -Dmdep.outputFile="$out") >&2
    cat "$out"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

wait_port() { # PORT SECONDS PID
    local deadline=$((SECONDS + $2))
    while [ $SECONDS -lt "$deadline" ] && kill -0 "$3" 2>/dev/null; do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "port $1 did not open" >&2
    return 1
}

start_broker() { # TARGET DIR; sets broker_pid
    local target="$1" dir="$2"
    rm -rf "$dir" && mkdir -p "$dir"
    if [ "$target" = skiff ]; then
        taskset -c $BROKER_CPU "$skiff" standalone --data "$dir/store" \
            --namesrv-listen 127.0.0.1:0 --broker-listen 127.0.0.1:0 \
            --kafka-listen "$bootstrap" >"$dir/stdout" 2>"$dir/stderr" &
        broker_pid=$!
    else
        cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://$bootstrap,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$bootstrap
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=127.0.0.1:$CONTROLLER_PORT
log.dirs=$dir/kafka-logs
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
EOF
        printf 'rootLogger.level = WARN\nappender.out.type = Console\nappender.out.name = OUT\nappender.out.layout.type = PatternLayout\nappender.out.layout.pattern = %%d %%-5level %%c{1} - %%msg%%n\nrootLogger.appenderRef.out.ref = OUT\n' >"$dir/log4j2.properties"
        local jvm=(java -Xms1g -Xmx1g -XX:+UseG1GC "-Dlog4j2.configurationFile=$dir/log4j2.properties"
            "-Djava.io.tmpdir=$dir" -cp "$broker_cp")
        "${jvm[@]}" kafka.tools.StorageTool format --standalone --cluster-id c2tpZmYtYmVuY2gta2Zr \
            --config "$dir/server.properties" >"$dir/format.out" 2>&1
        taskset -c $BROKER_CPU "${jvm[@]}" kafka.Kafka "$dir/server.properties" \
            >"$dir/stdout" 2>"$dir/stderr" &
        broker_pid=$!
    fi
    pids+=("$broker_pid")
    wait_port "$KAFKA_PORT" 120 "$broker_pid"
}

tool() { # CLASS ARGS... (on the load core)
    taskset -c $LOAD_CPU java -Xms512m -Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$tools_cp" "$@"
}

create_topic() { # NAME
    tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --create \
        --topic "$1" --partitions "$PARTITIONS" --replication-factor 1 >/dev/null
}

produce() { # TARGET ACKS TOPIC [RATE]: RATE records/s (key suffix .rateRATE), else unbounded
    local before after out key="$1.acks$2" rate="${4:--1}"
    [ "$rate" != -1 ] && key="$key.rate$rate"
    create_topic "$3"
    before=$(cpu_ticks "$broker_pid")
    out=$(tool org.apache.kafka.tools.ProducerPerformance --topic "$3" --num-records "$RECORDS" \
        --record-size 1024 --throughput "$rate" \
        --producer-props "bootstrap.servers=$bootstrap" "acks=$2" enable.idempotence=false |
        tail -1)
    after=$(cpu_ticks "$broker_pid")
    log "$key: $out"
    # "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency, p50 ms 50th,
    #  p95 ms 95th, p99 ms 99th, p999 ms 99.9th."
    put "$key.tps" "$(sed -E 's/.*sent, ([0-9.]+) records\/sec.*/\1/' <<<"$out")"
    put "$key.mbs" "$(sed -E 's/.*records\/sec \(([0-9.]+) MB\/sec\).*/\1/' <<<"$out")"
    put "$key.avg" "$(sed -E 's/.* ([0-9.]+) ms avg latency.*/\1/' <<<"$out")"
    put "$key.p99" "$(sed -E 's/.* ([0-9]+) ms 99th.*/\1/' <<<"$out")"
    put "$key.p999" "$(sed -E 's/.* ([0-9]+) ms 99.9th.*/\1/' <<<"$out")"
    put "$key.cpu_us" "$(awk -v d=$((after - before)) -v t="$CLK_TCK" -v n="$RECORDS" \
        'BEGIN { printf "%.1f", d / t * 1e6 / n }')"
}

steady() { # TARGET TOPIC: produce latency at RATE once the client is warm
    local out key="$1.steady"
    create_topic "$2"
    out=$(taskset -c $LOAD_CPU java -Xms512m -Xmx1g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -cp "$tools_cp" "$root/scripts/bench/kafka-tools/SteadyLatency.java" "$bootstrap" "$2" \
        $((RATE * WARMUP_S)) $((RATE * STEADY_S)) "$RATE" 1024 1 | tail -1)
    log "$key: $out"
    # "avg=A p50=B p99=C p999=D max=E" (ms)
    for stat in avg p99 p999; do
        put "$key.$stat" "$(sed -E "s/.*\b$stat=([0-9.]+).*/\1/" <<<"$out")"
    done
}

consume() { # TARGET TOPIC
    local before after out
    before=$(cpu_ticks "$broker_pid")
    out=$(tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$bootstrap" \
        --topic "$2" --messages "$RECORDS" --timeout 60000 --hide-header |
        tail -1)
    after=$(cpu_ticks "$broker_pid")
    log "$1 consume: $out"
    # start, end, MB, MB.sec, nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec,
    # fetch.nMsg.sec: the fetch rates leave out joining the group (Kafka's 3 s initial delay).
    put "$1.consume.mbs" "$(cut -d, -f9 <<<"$out" | tr -d ' ')"
    put "$1.consume.tps" "$(cut -d, -f10 <<<"$out" | tr -d ' ')"
    put "$1.consume.cpu_us" "$(awk -v d=$((after - before)) -v t="$CLK_TCK" -v n="$RECORDS" \
        'BEGIN { printf "%.1f", d / t * 1e6 / n }')"
}

mkdir -p "$WORK"
: >"$results"
tools_cp="$(classpath "$root/scripts/bench/kafka-tools" kafka-tools)"
broker_cp="$(classpath "$root/compat-tests/java/kafka-broker" kafka-broker)"
if [ -z "${SKIFF_BIN:-}" ]; then
    (cd "$root" && cargo build --release -q --bin skiff)
fi
rev="${SKIFF_REV:-$(cd "$root" && git rev-parse --short HEAD)}"
put meta.rev "$rev"
put meta.records "$RECORDS"
put meta.rate "$RATE"
put meta.steady "$WARMUP_S $STEADY_S"
put meta.date "$(date -u '+%Y-%m-%d %H:%M UTC')"
put meta.load "$(cut -d' ' -f1 /proc/loadavg)"

for target in $TARGETS; do
    log "starting $target"
    start_broker "$target" "$WORK/$target"
    produce "$target" 1 bench-acks1
    produce "$target" all bench-acksall
    produce "$target" 1 bench-rate "$RATE"
    steady "$target" bench-steady
    consume "$target" bench-acks1
    # Peak resident memory over the whole session.
    put "$target.rss_mib" "$(awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$broker_pid/status")"
    kill -TERM "$broker_pid"
    wait "$broker_pid" 2>/dev/null || true
    # Gigabytes each: not left in /tmp for the next test run's disk check (KEEP_STORES=1 keeps).
    [ -n "${KEEP_STORES:-}" ] || rm -rf "$WORK/$target/store" "$WORK/$target/kafka-logs"
done

python3 "$root/scripts/bench/kafka_report.py" "$results" "$OUT"
log "results written to $OUT"
