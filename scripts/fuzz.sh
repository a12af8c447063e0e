#!/usr/bin/env bash
# Runs every fuzz target of protocol/fuzz for a bounded time on the stable toolchain, as CI does.
#
#   scripts/fuzz.sh                  every target, SKIFF_FUZZ_SECONDS each (default 20)
#   scripts/fuzz.sh frame_decoder    one target
#
# The targets are built by cargo-fuzz with coverage instrumentation but without a sanitizer
# (`--sanitizer none`, which needs no nightly compiler); Rust's own bounds and overflow checks
# (`-a`: debug assertions and overflow checks on) turn memory bugs into panics, which libFuzzer reports as crashes.
# cargo-fuzz is installed from crates.io when missing.
#
# Seeds come from the repository (golden frames written by the Java classes, CommitLog records
# written by Java, config snippets, SQL92 selectors); the growing corpus lives in target/fuzz/corpus/<target>.
# A crash fails the run: its input is saved in target/fuzz/crashes/<target>/ and printed here in
# base64, so it can be replayed from a CI log with
#   base64 -d > crash.bin && cargo fuzz run --sanitizer none -O -a <target> crash.bin   (in protocol/fuzz)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fuzz_dir="$root/protocol/fuzz"
work="$root/target/fuzz"
seconds="${SKIFF_FUZZ_SECONDS:-20}"
cargo_fuzz_version="0.13.2"

if ! cargo fuzz --version 2>/dev/null | grep -q "$cargo_fuzz_version"; then
    echo "installing cargo-fuzz $cargo_fuzz_version"
    cargo install --locked --quiet cargo-fuzz --version "$cargo_fuzz_version"
fi

# protocol/fuzz is a workspace of its own and commits no lockfile: it starts from the main one, so
# the targets build the dependency versions the tests ran with, not the newest on crates.io that
# day (cargo then adds only what fuzzing alone needs).
cp "$root/Cargo.lock" "$fuzz_dir/Cargo.lock"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cd "$fuzz_dir" && cargo fuzz list)
fi

# seeds TARGET DIR: writes the repository's example inputs for TARGET into DIR.
seeds() {
    local dir="$2" f n=0
    mkdir -p "$dir"
    case "$1" in
    frame_decoder)
        for f in "$root"/protocol/tests/golden/*/*.hex; do
            python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.stdin.read()))' <"$f" \
                >"$dir/$(basename "$(dirname "$f")")-$(basename "$f" .hex)"
        done
        ;;
    decode_record)
        # The first records of a CommitLog segment Java wrote, cut at a few sizes.
        f="$root/store/tests/data/java-5.3.3/commitlog/00000000000000000000"
        for n in 256 1024 4096; do head -c "$n" "$f" >"$dir/java-commitlog-$n"; done
        ;;
    config_file)
        printf '\0brokerName=broker-a\nlistenPort=10911\nflushDiskType=SYNC_FLUSH\n' >"$dir/conf"
        printf '\1brokerName = "broker-a"\nlistenPort = 10911\nmaxMessageSize = 4194304\n' >"$dir/toml"
        printf '\0messageDelayLevel=1s 5s 10s\\\n  30s\nbrokerIP1 = 127.0.0.1\n' >"$dir/continued"
        ;;
    sql92_filter)
        # [length of the expression] expression, then the value given to a, b and TAGS.
        sql() { printf "\\$(printf '%03o' "${#1}")%s%s" "$1" "$2" >"$dir/$3"; }
        sql "a > 5 AND b = 'x'" "7" cmp
        sql "a BETWEEN 1 AND 10 OR TAGS IN ('A', 'B')" "3" between-in
        sql "a IS NOT NULL AND NOT (b <> 'y')" "y" null-not
        sql "a CONTAINS 'bc' AND b STARTSWITH 'a' AND TAGS ENDSWITH 'c'" "abc" strings
        sql "a = TRUE OR b = 1.5e3" "true" literals
        ;;
    kafka_request)
        # Frames' content as clients send them: ApiVersions v3 (flexible) and v0, Metadata v1 for
        # one topic, and ApiVersions at a version newer than Skiff's.
        printf '\000\022\000\003\000\000\000\001\000\002id\000\006skiff\0041.0\000' >"$dir/api-versions-v3"
        printf '\000\022\000\000\000\000\000\001\377\377' >"$dir/api-versions-v0"
        printf '\000\003\000\001\000\000\000\002\000\002id\000\000\000\001\000\006orders' >"$dir/metadata-v1"
        printf '\000\022\000\011\000\000\000\003\000\000' >"$dir/api-versions-v9"
        ;;
    kafka_records)
        # A batch header (the target sets length, magic and CRC) and one record: key "k", value
        # "v", one header; and the same with the gzip bit.
        head_bytes() { printf '\0\0\0\0\0\0\0\0\0\0\0\0\377\377\377\377\2\0\0\0\0'; }
        rest() { printf '\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\377\377\377\377\377\377\377\377\377\377\377\377\377\377\0\0\0\1'; }
        { head_bytes; printf '\0\0'; printf '\0\0\0\0'; rest; printf '\030\0\0\0\002k\002v\002\002h\002x'; } >"$dir/one-record"
        { head_bytes; printf '\0\1'; printf '\0\0\0\0'; rest; printf '\037\213\010\0\0\0\0\0'; } >"$dir/gzip-header"
        ;;
    acl)
        # Even first byte: a plain_acl.yml; odd: [code][field count]([name][len][value])* body.
        { printf '\0'; cat "$root/protocol/fuzz/seeds/plain_acl.yml"; } >"$dir/plain-acl"
        printf '\1\016\003\000\011skiffUser\007\006TopicA\006\002pgbody' >"$dir/send-v2"
        printf '\1\006\002\000\011skiffUser\001\003bad{"consumerDataSet":[]}' >"$dir/heartbeat"
        ;;
    ha_stream)
        # [n][n chunk lengths][stream]: a heartbeat and a 3-byte transfer at 4096 cut in 1, 5 and
        # 13 bytes; a master's view of two reports and half of a third, cut in 3 and 8.
        printf '\003\001\005\015\0\0\0\0\0\0\020\0\0\0\0\0\0\0\0\0\0\0\020\0\0\0\0\003abc' >"$dir/frames"
        printf '\002\003\010\0\0\0\0\0\0\020\0\0\0\0\0\0\0\040\0\0\0\0\0' >"$dir/reports"
        printf '\000\0\0\0\0\0\0\0\0\177\377\377\377' >"$dir/huge-size"
        ;;
    esac
}

cd "$fuzz_dir"
echo "building the fuzz targets (release, coverage instrumentation)"
cargo fuzz build --sanitizer none -O -a >/dev/null

failed=()
for t in "${targets[@]}"; do
    corpus="$work/corpus/$t"
    crashes="$work/crashes/$t"
    rm -rf "$crashes"
    mkdir -p "$corpus" "$crashes"
    seeds "$t" "$work/seeds/$t"
    echo "fuzzing $t for ${seconds}s"
    if ! cargo fuzz run --sanitizer none -O -a "$t" "$corpus" "$work/seeds/$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$crashes/" -print_final_stats=1 >"$work/$t.log" 2>&1; then
        failed+=("$t")
        echo "FUZZ CRASH in $t (log: $work/$t.log); inputs saved in $crashes:"
        tail -n 40 "$work/$t.log"
        for f in "$crashes"/*; do
            [ -f "$f" ] || continue
            echo "--- $f (base64)"
            base64 -w 0 "$f"
            echo
        done
    else
        grep -E '^(stat::number_of_executed_units|Done )' "$work/$t.log" | tail -n 1 || true
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing found crashes in: ${failed[*]}"
    exit 1
fi
echo "fuzzing: ${#targets[@]} targets, no crash"
