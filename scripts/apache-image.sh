#!/usr/bin/env bash
# Builds an Apache RocketMQ image FROM scratch, offline, for the cold-start comparison of
# docs/benchmarks.md: the name server and broker jars from Maven Central (the compat harness's
# compat-tests/java/broker/pom.xml), this host's JDK (without jmods, sources and docs) and the
# shared libraries `java` and the JDK's core libraries load (found with ldd).
#
#   scripts/apache-image.sh     # tags skiff-bench/apache-rocketmq:5.3.3
#   SKIFF_COMPAT_APACHE_VERSION=4.9.7 scripts/apache-image.sh   # the 4.9 line's broker
#
# Not part of CI: nothing but the benchmark uses it.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${SKIFF_COMPAT_APACHE_VERSION:-5.3.3}"
tag="${1:-skiff-bench/apache-rocketmq:$version}"
java_home="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")}"

context="$(mktemp -d)"
trap 'rm -rf "$context"' EXIT
root="$context/rootfs"
mkdir -p "$root/rocketmq/lib" "$root/home/rocketmq" "$root/tmp" "$root/store"
chmod 1777 "$root/tmp"

echo "apache-image.sh: RocketMQ $version jars (Maven Central, cached in ~/.m2)"
mvn -q -B -f compat-tests/java/broker/pom.xml dependency:copy-dependencies \
    -Drocketmq.version="$version" -DoutputDirectory="$root/rocketmq/lib"

# RocketMQ 4.9 reads $ROCKETMQ_HOME/conf/logback_<role>.xml and exits without it (5.x carries its
# own in the jars): a file appender per role, as the compat harness writes (compat-tests/src/target.rs).
mkdir -p "$root/home/rocketmq/conf" "$root/home/rocketmq/logs"
for role in namesrv broker; do
    cat >"$root/home/rocketmq/conf/logback_$role.xml" <<XML
<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>/home/rocketmq/logs/$role.log</file>
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{24} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="F"/></root>
</configuration>
XML
done

echo "apache-image.sh: JDK from $java_home"
mkdir -p "$root/jdk"
# -h: Debian's JDK links conf/ and security files into /etc; copy what they point at.
tar -C "$java_home" -chf - --exclude=./jmods --exclude=./lib/src.zip --exclude=./man \
    --exclude=./docs --exclude=./include . | tar -C "$root/jdk" -xf -

# The loader and every library the launcher, the VM and the JDK's core native libraries need.
libs=()
for f in "$root/jdk/bin/java" "$root/jdk/lib/server/libjvm.so" \
    "$root"/jdk/lib/lib{java,jli,net,nio,zip,verify,jimage,management,management_ext,extnet,prefs}.so; do
    [ -e "$f" ] || continue
    while read -r lib; do libs+=("$lib"); done < <(ldd "$f" | awk '/=>/ && $3 ~ /^\// {print $3} $1 ~ /^\/lib64\// {print $1}')
done
for lib in $(printf '%s\n' "${libs[@]}" | grep -v "^$root" | sort -u); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done

echo "apache-image.sh: docker build -t $tag"
DOCKER_BUILDKIT=0 docker build --quiet -f docker/apache/Dockerfile -t "$tag" "$context" >/dev/null
size="$(docker image inspect --format '{{.Size}}' "$tag")"
echo "apache-image.sh: built $tag ($((size / 1024 / 1024)) MiB)"
