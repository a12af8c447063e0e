"""The Kafka scenarios of tests/kafka.rs with librdkafka, through confluent-kafka (requirements.txt
beside this file), against a broker's Kafka listener:

    python kafka_scenarios.py produce-consume[-idempotent] --bootstrap HOST:PORT --topic T
        [--count 10000] [--compression none|gzip|snappy|lz4|zstd]

It prints one result line, `... result=ok` and exits 0, or `result=fail: reason` and exits 1.

The checks are those of java/kafka/KafkaScenarios.java, record for record, as far as librdkafka
lets them be made:

produce-consume: a producer (acks=all, no idempotence, linger 5 ms, the given compression) sends
`count` records to a topic that does not exist yet, so that its first Metadata request creates it.
Record i has key "key-<i>", a value of varying length (empty, about 1 KiB, or a few hundred bytes;
one record is a tombstone with a null value), the timestamp base + i, and the headers h="v<i>", a
binary "bin" = {0, 1, 2, 0xff, i} and "rep" twice with different values. The partitioner is
librdkafka's murmur2_random, the Java client's hash, so that the partition of each record is
known. A consumer that joins no group (the binding needs a group.id, which is never used)
assigns itself every partition from the beginning and must read each record exactly once, at the
partition and offset its delivery report gave, intact. Then the offset lookups: the watermarks
are 0 and the per-partition counts, and offsets_for_times finds, in every partition, the first
record at or after a time in the middle (librdkafka returns its offset only, not its timestamp),
and nothing (-1) after the last record.

produce-consume-idempotent: the same with enable.idempotence=true. librdkafka then needs a
producer id from the broker (InitProducerId) before it sends anything; a broker without one is a
fatal error, reported here.
"""

import argparse
import functools
import sys
import time
import traceback

import confluent_kafka
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_CREATE_TIME,
    Consumer,
    Producer,
    TopicPartition,
)

# The bound of the consumer's poll loop: every record must have arrived within it.
CONSUME_WITHIN_S = 60
# The bound of each single client call that waits for the broker (metadata, offsets, flush).
CALL_TIMEOUT_S = 30


class Failure(Exception):
    """A failed check: its message is the reason printed."""


def check(ok, what):
    if not ok:
        raise Failure(what)


# ---- what record i holds ----


def key(i):
    return b"key-%d" % i


def null_value_at(count):
    """The one tombstone."""
    return count // 2


def value(i, count):
    """Every tenth value is empty, every tenth other one about 1 KiB, the rest up to 300 bytes."""
    if i == null_value_at(count):
        return None
    n = 0 if i % 10 == 0 else 1024 + i % 64 if i % 10 == 1 else (i * 7) % 300
    return bytes((i * 31 + j * 7) & 0xFF for j in range(n))


def headers(i):
    return [
        ("h", b"v%d" % i),
        ("bin", bytes([0x00, 0x01, 0x02, 0xFF, i & 0xFF])),
        ("rep", b"first"),
        ("rep", b"second-%d" % i),
    ]


def murmur2(data):
    """Kafka's murmur2 (the Java client's Utils.murmur2, librdkafka's rd_murmur2), unsigned."""
    m = 0x5BD1E995
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    whole = len(data) - len(data) % 4
    for at in range(0, whole, 4):
        k = int.from_bytes(data[at : at + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def describe(v):
    """A value for a failure message: None (a tombstone) or its length."""
    return "None" if v is None else "%d bytes" % len(v)


def client_version():
    return "confluent-kafka-%s/librdkafka-%s" % (
        confluent_kafka.__version__,
        confluent_kafka.libversion()[0],
    )


class Errors:
    """librdkafka's error callback: transient errors it retries by itself are only logged (on
    stderr, as librdkafka logs), a fatal one ends the run with its reason."""

    def __init__(self):
        self.fatal = None

    def __call__(self, err):
        print("librdkafka error: %s" % err, file=sys.stderr, flush=True)
        if err.fatal() and self.fatal is None:
            self.fatal = err

    def check(self):
        check(self.fatal is None, "fatal client error: %s" % self.fatal)


def produce(bootstrap, topic, count, compression, idempotent, base):
    """Sends every record and returns per record its acknowledged (partition, offset)."""
    errors = Errors()
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "skiff-compat-producer",
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 5,
            "compression.type": compression,
            # The Java client's partitioner: a key's partition can then be checked.
            "partitioner": "murmur2_random",
            # Fail within the bounds of the harness rather than the client's minutes: each
            # record's delivery with its retries, and each request.
            "message.timeout.ms": CALL_TIMEOUT_S * 1000,
            "request.timeout.ms": 15000,
            "error_cb": errors,
        }
    )
    acks = [None] * count
    failed = []

    def delivered(i, err, msg):
        if err is not None:
            failed.append((i, err))
            return
        acks[i] = (msg.topic(), msg.partition(), msg.offset(), msg.timestamp())

    # Stops at the first failure, as the Java scenario does.
    sent = 0
    while sent < count and not failed and errors.fatal is None:
        # No partition: the partitioner picks it from the key.
        producer.produce(
            topic,
            value=value(sent, count),
            key=key(sent),
            headers=headers(sent),
            timestamp=base + sent,
            on_delivery=functools.partial(delivered, sent),
        )
        sent += 1
        # Serves delivery reports as they come, so that a failure stops the loop early.
        producer.poll(0)
    left = producer.flush(CALL_TIMEOUT_S)
    errors.check()
    if failed:
        i, err = failed[0]
        raise Failure(
            "record %d failed after %d of %d were sent: %s" % (i, sent, count, err)
        )
    check(left == 0, "%d records still undelivered after flush(%d s)" % (left, CALL_TIMEOUT_S))
    positions = set()
    result = []
    for i, ack in enumerate(acks):
        check(ack is not None, "record %d has no delivery report" % i)
        got_topic, partition, offset, (ts_type, ts) = ack
        where = "%d:%d" % (partition, offset)
        check(got_topic == topic, "record %d acknowledged for topic %s" % (i, got_topic))
        check(offset >= 0, "record %d acknowledged without an offset (%d)" % (i, offset))
        check(
            ts_type == TIMESTAMP_CREATE_TIME and ts == base + i,
            "record %d acknowledged with timestamp %s (type %d), sent %d"
            % (i, ts, ts_type, base + i),
        )
        check(where not in positions, "record %d acknowledged at %s like another" % (i, where))
        positions.add(where)
        result.append((partition, offset))
    return result


def check_partitioner(acks, partitions):
    """murmur2_random hashes the key over the partitions the metadata has, as Java's default."""
    for i, (partition, _) in enumerate(acks):
        expected = (murmur2(key(i)) & 0x7FFFFFFF) % partitions
        check(
            partition == expected,
            "record %d went to partition %d, its key hashes to %d of %d"
            % (i, partition, expected, partitions),
        )


def check_record(msg, i, ack, base, count):
    what = "record %d at %d:%d" % (i, msg.partition(), msg.offset())
    check(
        (msg.partition(), msg.offset()) == ack,
        "%s was acknowledged at %d:%d" % (what, ack[0], ack[1]),
    )
    want = value(i, count)
    got = msg.value()
    check(got == want, "%s has value %s, sent %s" % (what, describe(got), describe(want)))
    ts_type, ts = msg.timestamp()
    check(ts_type == TIMESTAMP_CREATE_TIME, "%s has timestamp type %d" % (what, ts_type))
    check(ts == base + i, "%s has timestamp %d, sent %d" % (what, ts, base + i))
    got_headers = msg.headers() or []
    sent_headers = headers(i)
    check(
        len(got_headers) == len(sent_headers),
        "%s has %d headers, sent %d" % (what, len(got_headers), len(sent_headers)),
    )
    for h, (got_h, sent_h) in enumerate(zip(got_headers, sent_headers)):
        check(got_h == sent_h, "%s header %d is %r, sent %r" % (what, h, got_h, sent_h))


def consume(consumer, acks, base, count):
    """Polls until every record arrived once, checking each. Returns per partition the stored
    (offset, timestamp) pairs."""
    seen = [False] * count
    got = 0
    stored = {}
    deadline = time.monotonic() + CONSUME_WITHIN_S
    while got < count:
        check(
            time.monotonic() < deadline,
            "consumed %d of %d records within %d s" % (got, count, CONSUME_WITHIN_S),
        )
        for msg in consumer.consume(num_messages=1000, timeout=0.5):
            err = msg.error()
            check(err is None, "consume error: %s" % err)
            where = "%d:%d" % (msg.partition(), msg.offset())
            k = msg.key()
            check(k is not None, "record at %s has a null key" % where)
            text = k.decode("utf-8", "replace")
            check(
                text.startswith("key-") and text[4:].isdigit(),
                "record at %s has key %s" % (where, text),
            )
            i = int(text[4:])
            check(0 <= i < count, "record at %s has key %s" % (where, text))
            check(not seen[i], "record %d consumed twice (again at %s)" % (i, where))
            seen[i] = True
            got += 1
            check_record(msg, i, acks[i], base, count)
            stored.setdefault(msg.partition(), []).append((msg.offset(), msg.timestamp()[1]))
    return stored


def check_offsets(consumer, topic, partitions, stored, base, count):
    total = 0
    for p in partitions:
        n = len(stored.get(p, []))
        low, high = consumer.get_watermark_offsets(
            TopicPartition(topic, p), timeout=CALL_TIMEOUT_S, cached=False
        )
        check(high == n, "%s [%d] end offset %d, holds %d records" % (topic, p, high, n))
        check(low == 0, "%s [%d] beginning offset %d" % (topic, p, low))
        total += high
    check(total == count, "end offsets add up to %d, produced %d" % (total, count))

    # A time in the middle: in each partition the first record (by offset) at or after it.
    middle = base + count // 2 + 1
    found = consumer.offsets_for_times(
        [TopicPartition(topic, p, middle) for p in partitions], timeout=CALL_TIMEOUT_S
    )
    for tp in found:
        check(
            tp.error is None,
            "%s [%d] offsets_for_times(%d): %s" % (topic, tp.partition, middle, tp.error),
        )
        later = [off for off, ts in stored.get(tp.partition, []) if ts >= middle]
        expected = min(later) if later else -1
        check(
            tp.offset == expected,
            "%s [%d] offsets_for_times(%d) = %d, expected %d"
            % (topic, tp.partition, middle, tp.offset, expected),
        )
    check(len(found) == len(partitions), "offsets_for_times answered %d partitions" % len(found))

    # After the last record: nothing, in every partition.
    after = base + count + 1000
    found = consumer.offsets_for_times(
        [TopicPartition(topic, p, after) for p in partitions], timeout=CALL_TIMEOUT_S
    )
    for tp in found:
        check(
            tp.error is None and tp.offset == -1,
            "%s [%d] offsets_for_times(%d) = %d (%s), after every record"
            % (topic, tp.partition, after, tp.offset, tp.error),
        )


def produce_consume(bootstrap, topic, count, compression, idempotent):
    check(count > 0, "--count must be positive")
    # An hour back: within what a broker accepts as CreateTime (Kafka 4 refuses more than an hour
    # ahead, and keeps a week), and every record's time is distinct and known.
    base = int(time.time() * 1000) - 3_600_000

    started = time.monotonic()
    acks = produce(bootstrap, topic, count, compression, idempotent, base)
    produce_ms = int((time.monotonic() - started) * 1000)

    started = time.monotonic()
    errors = Errors()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "skiff-compat-consumer",
            # The binding refuses a consumer without group.id (librdkafka itself would not). The
            # consumer never subscribes nor commits, so it never joins the group: assign mode, as
            # the Java consumer without a group. librdkafka still looks up the group's
            # coordinator (FindCoordinator); a broker without one only makes it log that.
            "group.id": "skiff-compat-unjoined",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "error_cb": errors,
        }
    )
    try:
        md = consumer.list_topics(topic, timeout=CALL_TIMEOUT_S)
        t = md.topics.get(topic)
        check(
            t is not None and t.error is None and t.partitions,
            "list_topics(%s) found no partitions: %s" % (topic, t and t.error),
        )
        partitions = sorted(t.partitions)
        check_partitioner(acks, len(partitions))
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        stored = consume(consumer, acks, base, count)
        consume_ms = int((time.monotonic() - started) * 1000)
        # Stops fetching: the broker answers a connection's requests in order, so each lookup
        # would otherwise wait behind a fetch that long-polls an idle partition (500 ms).
        consumer.unassign()
        check_offsets(consumer, topic, partitions, stored, base, count)
        errors.check()
    finally:
        consumer.close()
    return (
        "produced=%d consumed=%d partitions=%d compression=%s idempotence=%s produce_ms=%d "
        "consume_ms=%d client=%s result=ok"
        % (
            count,
            count,
            len(partitions),
            compression,
            str(idempotent).lower(),
            produce_ms,
            consume_ms,
            client_version(),
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", choices=["produce-consume", "produce-consume-idempotent"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument(
        "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    a = parser.parse_args()
    try:
        line = produce_consume(
            a.bootstrap,
            a.topic,
            a.count,
            a.compression,
            a.scenario == "produce-consume-idempotent",
        )
    except Failure as e:
        print("result=fail: %s" % e, flush=True)
        return 1
    except Exception as e:  # noqa: BLE001 - any other error fails the run too, with its trace
        traceback.print_exc()
        # The causes too: the binding raises a client's fatal error as the cause of another.
        reasons = []
        while e is not None and len(reasons) < 10:
            reasons.append(repr(e))
            e = e.__cause__ or e.__context__
        print("result=fail: %s" % "; caused by ".join(reasons), flush=True)
        return 1
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
