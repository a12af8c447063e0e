# Sourced by make-java-store.sh: runs an Apache RocketMQ name server and broker (from Maven
# Central) on a given store directory with the tiny file sizes the store tests use. (That the
# Java broker also reads Skiff's stores is proven in CI by compat-tests/tests/store_compat.rs.)
#
#   java_classpath <version> <work dir>        sets $cp
#   java_configure <work dir> <store dir>      picks ports ($ns_port, $broker_port), writes configs
#   java_launch <work dir>                     starts both; sets $broker_pid
#   java_stop_broker                           SIGTERM, waits for the clean shutdown
#   java_cleanup                               kills whatever is left

pids=()
java_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}

java_classpath() {
    local version=$1 work=$2
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
}

java_configure() {
    local work=$1 store=$2
    ns_port=$((20000 + RANDOM % 10000))
    broker_port=$((ns_port + 1000))
    local home="$work/home"
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
storePathRootDir=$store
storePathCommitLog=$store/commitlog
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
}

java_launch() {
    local work=$1 home="$1/home"
    (cd "$work" && ROCKETMQ_HOME="$home" exec "${jvm[@]}" org.apache.rocketmq.namesrv.NamesrvStartup -c "$work/namesrv.conf" > "$work/namesrv.out" 2>&1) &
    pids+=($!)
    (cd "$work" && ROCKETMQ_HOME="$home" exec "${jvm[@]}" org.apache.rocketmq.broker.BrokerStartup -c "$work/broker.conf" > "$work/broker.out" 2>&1) &
    broker_pid=$!
    pids+=("$broker_pid")
}

java_stop_broker() {
    kill -TERM "$broker_pid"
    for _ in $(seq 1 120); do kill -0 "$broker_pid" 2>/dev/null || return 0; sleep 0.5; done
    echo "broker did not stop" >&2
    return 1
}
