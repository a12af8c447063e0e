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
source "$here/java-broker.sh"
trap 'java_cleanup; rm -rf "$work"' EXIT

java_classpath "$version" "$work"
java_configure "$work" "$work/store"
java_launch "$work"

timeout 300 java -cp "$cp" "$here/Gen.java" "127.0.0.1:$ns_port" "$work/manifest.tsv"
sleep 5   # the delayed message (level 1) is re-put after 1 s

java_stop_broker
test ! -e "$work/store/abort" || { echo "the broker left an abort file" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
cp -r "$work/store/commitlog" "$work/store/consumequeue" "$work/store/index" "$work/store/checkpoint" "$out/"
cp "$work/manifest.tsv" "$out/"
du -sh "$out"
