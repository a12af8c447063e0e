#!/usr/bin/env bash
# Manual helper for the compatibility harness (compat-tests/). The Rust tests do all of this by
# themselves; this script is for warming the Maven cache and for running one scenario by hand.
#
#   scripts/compat-java.sh fetch
#       Resolves the client classpaths (4.9.8, 5.3.3), the Apache broker classpath (5.3.3),
#       mqadmin's (rocketmq-tools 5.3.3), and Kafka's (clients 4.1.1 and 3.9.1, broker 4.1.1, as
#       their poms pin them) into ~/.m2, e.g. once on a fresh machine or in CI before the tests.
#   scripts/compat-java.sh run VERSION SCENARIO --namesrv 127.0.0.1:9876 --broker 127.0.0.1:10911 --id x1
#       Compiles the scenarios against client VERSION and runs one of them against a running broker.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
java_dir="$root/compat-tests/java"
work="${TMPDIR:-/tmp}/skiff-compat-java-manual"
mkdir -p "$work"

classpath() { # pom-dir name version -> prints the classpath
    local out="$work/$2-$3.classpath"
    (cd "$1" && mvn -q -B dependency:build-classpath -Drocketmq.version="$3" -Dmdep.outputFile="$out") >&2
    cat "$out"
}

case "${1:-}" in
fetch)
    for v in 4.9.8 5.3.3; do classpath "$java_dir" client "$v" >/dev/null; done
    classpath "$java_dir/broker" apache-broker "${SKIFF_COMPAT_APACHE_VERSION:-5.3.3}" >/dev/null
    classpath "$java_dir/tools" mqadmin 5.3.3 >/dev/null
    classpath "$java_dir/kafka" kafka-client 4.1.1 >/dev/null
    classpath "$java_dir/kafka/kafka-clients-3.9" kafka-client 3.9.1 >/dev/null
    classpath "$java_dir/kafka-broker" kafka-broker 4.1.1 >/dev/null
    echo "Maven dependencies are in ~/.m2"
    ;;
run)
    [ $# -ge 3 ] || { echo "usage: $0 run VERSION SCENARIO [--key value]..." >&2; exit 2; }
    version="$2"; scenario="$3"; shift 3
    cp="$(classpath "$java_dir" client "$version")"
    classes="$work/classes-$version"
    rm -rf "$classes" && mkdir -p "$classes"
    javac -nowarn -encoding UTF-8 -d "$classes" -cp "$cp" "$java_dir"/src/skiff/compat/*.java
    exec java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
        -Duser.home="$work" -Drocketmq.client.logUseSlf4j=false -Drocketmq.client.logRoot="$work/logs" \
        -Drocketmq.client.rebalance.waitInterval=1000 \
        -cp "$classes:$cp" skiff.compat.Main "$scenario" "$@"
    ;;
*)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
