#!/usr/bin/env bash
# Regenerates tests/data/java-<version>/: a tiny store directory written by the real Apache
# RocketMQ broker (from Maven Central), which tests/java_store.rs opens.
#
#   store/tests/data/make-java-store.sh [version]      (default 5.3.3; needs java 17, mvn)
#
# It starts a name server and a broker with tiny files (64 KiB CommitLog segments, 60-entry
# ConsumeQueue files, small index files), runs Gen.java against them, waits for the delayed
# message to be re-put, stops the broker with SIGTERM (a clean shutdown: no abort file), and
# copies commitlog/, consumequeue/, index/ and checkpoint plus Gen's manifest.tsv.
set -euo pipefail
version=${1:-5.3.3}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/java-$version"
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

cat > "$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>skiff</groupId><artifactId>skiff-java-store</artifactId><version>0</version>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId><version>$version</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-namesrv</artifactId><version>$version</version></dependency>
  </dependencies>
</project>
POM
mvn -q -f "$work/pom.xml" dependency:build-classpath -Dmdep.outputFile="$work/cp.txt"
cp=$(cat "$work/cp.txt")

ns_port=$((20000 + RANDOM % 10000))
broker_port=$((ns_port + 1000))
home="$work/home"
mkdir -p "$home/conf" "$home/logs"
for role in namesrv broker; do
    cat > "$home/conf/logback_$role.xml" <<LOG
<configuration><appender name="F" class="ch.qos.logback.core.FileAppender"><file>$home/logs/$role.log</file>
<encoder><pattern>%d %-5level %logger{24} - %msg%n</pattern></encoder></appender>
<root level="INFO"><appender-ref ref="F"/></root></configuration>
LOG
done
echo "listenPort=$ns_port" > "$work/namesrv.conf"
cat > "$work/broker.conf" <<CONF
brokerClusterName=DefaultCluster
brokerName=broker-a
brokerId=0
listenPort=$broker_port
namesrvAddr=127.0.0.1:$ns_port
brokerIP1=127.0.0.1
storePathRootDir=$work/store
storePathCommitLog=$work/store/commitlog
autoCreateTopicEnable=true
flushDiskType=ASYNC_FLUSH
mappedFileSizeCommitLog=65536
mappedFileSizeConsumeQueue=1200
maxHashSlotNum=64
maxIndexNum=256
timerWheelEnable=false
CONF

jvm=(java -Xms128m -Xmx256m -XX:+UseSerialGC
    --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
    --add-exports=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/jdk.internal.ref=ALL-UNNAMED
    --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED
    -Duser.home="$home" -Drocketmq.home.dir="$home" -cp "$cp")
(cd "$work" && ROCKETMQ_HOME="$home" exec "${jvm[@]}" org.apache.rocketmq.namesrv.NamesrvStartup -c "$work/namesrv.conf" > "$work/namesrv.out" 2>&1) &
pids+=($!)
(cd "$work" && ROCKETMQ_HOME="$home" exec "${jvm[@]}" org.apache.rocketmq.broker.BrokerStartup -c "$work/broker.conf" > "$work/broker.out" 2>&1) &
broker_pid=$!
pids+=("$broker_pid")

timeout 300 java -cp "$cp" "$here/Gen.java" "127.0.0.1:$ns_port" "$work/manifest.tsv"
sleep 5   # the delayed message (level 1) is re-put after 1 s

kill -TERM "$broker_pid"
for _ in $(seq 1 120); do kill -0 "$broker_pid" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$broker_pid" 2>/dev/null; then echo "broker did not stop" >&2; exit 1; fi
test ! -e "$work/store/abort" || { echo "the broker left an abort file" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
cp -r "$work/store/commitlog" "$work/store/consumequeue" "$work/store/index" "$work/store/checkpoint" "$out/"
cp "$work/manifest.tsv" "$out/"
du -sh "$out"
