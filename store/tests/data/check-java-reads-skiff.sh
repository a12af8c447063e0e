#!/usr/bin/env bash
# The reverse of tests/java_store.rs: Skiff writes a store (examples/write_store.rs) with the
# file sizes of make-java-store.sh, the real Apache RocketMQ broker opens it, and Check.java
# reads every message back through it and appends one more. Run once after a clean stop and
# once with an `abort` file (Java's crash recovery over Skiff's files and checkpoint).
#
#   store/tests/data/check-java-reads-skiff.sh [version]    (default 5.3.3; needs java 17, mvn)
set -euo pipefail
version=${1:-5.3.3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
source "$here/java-broker.sh"
trap 'java_cleanup; rm -rf "$work"' EXIT

java_classpath "$version" "$work"
for mode in clean crashed; do
    run="$work/$mode"
    mkdir -p "$run"
    java_configure "$run" "$run/store"
    # Offset message ids carry the broker's address: Skiff writes with the port Java will use.
    (cd "$here/../.." && cargo run -q --example write_store -- "$run/store" "$run/manifest.tsv" "$broker_port")
    if [ "$mode" = crashed ]; then echo 1 > "$run/store/abort"; fi
    java_launch "$run"
    timeout 300 java -cp "$cp" "$here/Check.java" "127.0.0.1:$ns_port" "127.0.0.1:$broker_port" "$run/manifest.tsv" 2>&1 | grep -v "^[0-9:,]* |-" || { tail -n 30 "$run/home/logs/rocketmqlogs/broker.log" "$run/broker.out" >&2 || true; exit 1; }
    java_stop_broker
    java_cleanup
    pids=()
    echo "$mode: OK"
done
