"""The Kafka scenarios of tests/kafka.rs with librdkafka, through confluent-kafka (requirements.txt
beside this file), against a broker's Kafka listener:

    python kafka_scenarios.py SCENARIO --bootstrap HOST:PORT --topic T [...]

    produce-consume[-idempotent] [--count 10000] [--compression none|gzip|snappy|lz4|zstd]
    group-join-leave --group G [--count 20000]
    commit-resume-restart --group G --phase commit [--count 10000]
    commit-resume-restart --group G --phase resume --expect P:OFFSET,... [--count 10000]
    admin-topics

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

group-join-leave: as the Java scenario. Three Consumers of one group (each its own librdkafka
instance with its own connections, polled on a thread of its own; librdkafka's default assignors,
range and roundrobin, so eager rebalancing) consume a new topic of 6 partitions while a producer
writes paced slices; the first member closes during the first, a fourth joins during the second.
Each member stores no offsets by itself (enable.auto.offset.store=false, no auto-commit) and
commits exactly what it processed, synchronously, in its on_revoke callback, which librdkafka
calls before each rebalance and when the Consumer closes. Every record must be consumed exactly
once. The AdminClient's describe_consumer_groups (DescribeGroups) must show the group Stable with
exactly the expected members by client id and every partition assigned, and
list_consumer_groups (ListGroups) list it then; at the end the group is Empty and its committed
offsets are the end offsets.

commit-resume-restart: as the Java scenario. The commits are read back with Consumer.committed
(OffsetFetch) before the close, and after the restart with AdminClient.list_consumer_group_offsets
and Consumer.committed before the new member subscribes.

admin-topics: as the Java scenario with the AdminClient: create_topics (validate_only, a
duplicate: TOPIC_ALREADY_EXISTS; replication factor 3: INVALID_REPLICATION_FACTOR), list_topics,
describe_topics, describe_configs, delete_topics (again: UNKNOWN_TOPIC_OR_PART).
"""

import argparse
import functools
import sys
import threading
import time
import traceback

import confluent_kafka
from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_CREATE_TIME,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec, ResourceType

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


def key_index(k, where, count):
    """The i of a record's key "key-<i>", which must be below count."""
    check(k is not None, "record at %s has a null key" % where)
    text = k.decode("utf-8", "replace")
    check(
        text.startswith("key-") and text[4:].isdigit() and int(text[4:]) < count,
        "record at %s has key %s" % (where, text),
    )
    return int(text[4:])


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
        raise Failure("record %d failed after %d of %d were sent: %s" % (i, sent, count, err))
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
            i = key_index(msg.key(), where, count)
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


# ---- shared by the group and admin scenarios ----


def admin_client(bootstrap, errors):
    return AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "skiff-compat-admin",
            "error_cb": errors,
        }
    )


def group_consumer_config(bootstrap, group, client_id, errors):
    """A group member's settings: the classic protocol, nothing stored or committed but by the
    scenario."""
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "group.id": group,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        # Members notice a rebalance at their next heartbeat: every 500 ms rather than 3 s. The
        # session stays within what every broker accepts (Skiff and Kafka: at least 6 s).
        "heartbeat.interval.ms": 500,
        "session.timeout.ms": 10000,
        # The rebalance timeout: a member that does not rejoin holds the group up this long.
        "max.poll.interval.ms": 60000,
        "error_cb": errors,
    }


def result(future, what):
    """The result of an admin future, within CALL_TIMEOUT_S."""
    try:
        return future.result(timeout=CALL_TIMEOUT_S)
    except KafkaException as e:
        raise Failure("%s: %s" % (what, e.args[0])) from e


def create_topic(admin, topic, partitions, validate_only=False):
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1)],
        # Answered once the topic is created, not only accepted.
        operation_timeout=CALL_TIMEOUT_S,
        request_timeout=CALL_TIMEOUT_S,
        validate_only=validate_only,
    )
    futures[topic].result(timeout=CALL_TIMEOUT_S)


def end_offsets(admin, topic, partitions):
    """Per partition its end offset (ListOffsets, latest)."""
    futures = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
        request_timeout=CALL_TIMEOUT_S,
    )
    return {
        tp.partition: result(f, "list_offsets(%s [%d])" % (topic, tp.partition)).offset
        for tp, f in futures.items()
    }


def committed_offsets(admin, group):
    """A group's committed offsets as the broker answers OffsetFetch to the AdminClient.

    Only once the group's coordinator serves it: librdkafka 2.16's AdminClient crashes (SIGSEGV in
    rd_kafka_cgrp_op, librdkafka issue 5040) on an OffsetFetch answered NOT_COORDINATOR, which
    Apache Kafka answers while it loads __consumer_offsets after a restart."""
    futures = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=CALL_TIMEOUT_S
    )
    answer = result(futures[group], "list_consumer_group_offsets(%s)" % group)
    committed = {}
    for tp in answer.topic_partitions:
        check(tp.error is None, "OffsetFetch %s [%d]: %s" % (tp.topic, tp.partition, tp.error))
        committed[tp.partition] = tp.offset
    return committed


def format_offsets(offsets):
    """ "P:OFFSET,..." by partition."""
    return ",".join("%d:%d" % (p, offsets[p]) for p in sorted(offsets))


# ---- group-join-leave ----

# The group scenario's topic: more partitions than members, so that every member has some.
GROUP_PARTITIONS = 6
# The bound of each wait for the group to settle.
SETTLE_WITHIN_S = 60
# What a coordinator answers until it serves the group.
COORDINATOR_NOT_READY = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
)
# The producer's pace: bursts of this many records this far apart, about 4 000 records a second,
# so that a slice lasts a second or two.
PACE_BURST = 100
PACE_PAUSE_S = 0.025


class Tally:
    """What the group consumed: per record how often. The members' threads share it."""

    def __init__(self, count):
        self.lock = threading.Lock()
        self.times = [0] * count
        self.distinct = 0
        self.deliveries = 0

    def add(self, i):
        with self.lock:
            self.deliveries += 1
            if self.times[i] == 0:
                self.distinct += 1
            self.times[i] += 1

    def list(self, duplicates, limit):
        """The first few records consumed never or more than once, for a report."""
        with self.lock:
            found = [i for i, n in enumerate(self.times) if (n > 1 if duplicates else n == 0)]
        return found[:limit]


class Member:
    """One consumer of the group, its own librdkafka instance, polled on a thread of its own. It
    commits exactly what it has processed whenever partitions are revoked: before each rebalance
    (an eager assignor revokes everything) and when it closes."""

    def __init__(self, name, bootstrap, group, topic, tally, count):
        self.name = name
        self.topic = topic
        self.tally = tally
        self.count = count
        self.error = None
        self.consumed = 0
        self.commits = 0
        self.lost = 0
        # Per partition, the offset after the last record processed and not yet committed.
        self.processed = {}
        self.errors = Errors()
        self.stopping = threading.Event()
        self.consumer = Consumer(group_consumer_config(bootstrap, group, name, self.errors))
        self.consumer.subscribe([topic], on_revoke=self.revoked, on_lost=self.on_lost)
        self.thread = threading.Thread(target=self.run, name=name)
        self.thread.start()

    def fail(self, reason):
        if self.error is None:
            self.error = "%s: %s" % (self.name, reason)

    def run(self):
        try:
            while not self.stopping.is_set():
                for msg in self.consumer.consume(num_messages=500, timeout=0.2):
                    where = "%d:%d" % (msg.partition(), msg.offset())
                    check(msg.error() is None, "consume error: %s" % msg.error())
                    self.tally.add(key_index(msg.key(), where, self.count))
                    self.consumed += 1
                    self.processed[msg.partition()] = msg.offset() + 1
                self.errors.check()
        except Exception as e:  # noqa: BLE001 - the scenario fails with it
            self.fail(repr(e) if not isinstance(e, Failure) else str(e))
        finally:
            try:
                # Revokes the partitions (so commits what was processed) and leaves the group.
                self.consumer.close()
            except Exception as e:  # noqa: BLE001
                self.fail("close: %r" % e)

    def revoked(self, consumer, partitions):
        offsets = [
            TopicPartition(self.topic, tp.partition, self.processed.pop(tp.partition))
            for tp in partitions
            if tp.partition in self.processed
        ]
        if not offsets:
            return
        try:
            answer = consumer.commit(offsets=offsets, asynchronous=False)
            failed = [tp for tp in answer or [] if tp.error is not None]
            if failed:
                self.fail("commit on revocation: %s" % failed)
            self.commits += 1
        except Exception as e:  # noqa: BLE001 - librdkafka swallows what a callback raises
            self.fail("commit on revocation of %s: %r" % (offsets, e))

    def on_lost(self, _consumer, partitions):
        """Lost, not revoked: another member may own them already, so nothing is committed."""
        self.lost += 1
        for tp in partitions:
            self.processed.pop(tp.partition, None)

    def close(self):
        """Closes the member (on its own thread) and waits for that; False if it did not."""
        self.stopping.set()
        self.thread.join(CALL_TIMEOUT_S * 2)
        return not self.thread.is_alive()

    def stop(self):
        check(self.close(), "%s did not close within %d s" % (self.name, CALL_TIMEOUT_S * 2))


def check_members(members):
    for m in members:
        check(m.error is None, m.error)


class PacedProducer:
    """The producer of group-join-leave, on a thread of its own, sending up to what is
    released."""

    def __init__(self, bootstrap, topic, count):
        self.topic = topic
        self.count = count
        self.released = 0
        self.error = None
        self.closing = threading.Event()
        self.errors = Errors()
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "client.id": "skiff-compat-producer",
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": CALL_TIMEOUT_S * 1000,
                "request.timeout.ms": 15000,
                "error_cb": self.errors,
            }
        )
        self.thread = threading.Thread(target=self.run, name="producer")
        self.thread.start()

    def delivered(self, err, _msg):
        if err is not None and self.error is None:
            self.error = "send: %s" % err

    def run(self):
        try:
            sent = 0
            while sent < self.count and not self.closing.is_set() and self.error is None:
                end = min(self.released, sent + PACE_BURST)
                while sent < end:
                    self.producer.produce(
                        self.topic,
                        key=key(sent),
                        value=b"value-%d" % sent,
                        on_delivery=self.delivered,
                    )
                    sent += 1
                self.producer.poll(0)
                time.sleep(PACE_PAUSE_S)
            left = self.producer.flush(CALL_TIMEOUT_S)
            if left and self.error is None:
                self.error = "%d records undelivered after flush(%d s)" % (left, CALL_TIMEOUT_S)
            self.errors.check()
        except Exception as e:  # noqa: BLE001
            if self.error is None:
                self.error = "producer: %r" % e

    def finish(self):
        """Waits until every record was sent and acknowledged."""
        self.thread.join(CALL_TIMEOUT_S * 2)
        check(
            not self.thread.is_alive(), "the producer did not finish in %d s" % (CALL_TIMEOUT_S * 2)
        )
        check(self.error is None, self.error)

    def close(self):
        self.closing.set()
        self.thread.join(CALL_TIMEOUT_S * 2)


def await_group(admin, group, topic, expected, members):
    """Waits until the group is Stable with exactly `expected` as members (by client id) and every
    partition of the topic assigned to one of them, as DescribeGroups shows it; then ListGroups
    must list it. Returns what was seen: "Stable/<members>/<assignor>"."""
    want = sorted(m.name for m in expected)
    deadline = time.monotonic() + SETTLE_WITHIN_S
    while True:
        check_members(members)
        futures = admin.describe_consumer_groups([group], request_timeout=CALL_TIMEOUT_S)
        try:
            d = futures[group].result(timeout=CALL_TIMEOUT_S)
        except KafkaException as e:
            # The Java Admin client and kadm retry these by themselves, librdkafka's AdminClient
            # does not: Apache Kafka answers NOT_COORDINATOR while it creates and loads
            # __consumer_offsets.
            check(
                e.args[0].code() in COORDINATOR_NOT_READY and time.monotonic() < deadline,
                "describe_consumer_groups(%s): %s" % (group, e.args[0]),
            )
            time.sleep(0.1)
            continue
        clients = sorted(m.client_id for m in d.members)
        assigned = [
            (tp.topic, tp.partition)
            for m in d.members
            if m.assignment is not None
            for tp in m.assignment.topic_partitions
        ]
        covered = sorted(assigned) == [(topic, p) for p in range(GROUP_PARTITIONS)]
        last = "%s with %d members %s, %d partitions assigned, assignor %s" % (
            d.state,
            len(d.members),
            clients,
            len(assigned),
            d.partition_assignor,
        )
        if d.state == ConsumerGroupState.STABLE and clients == want and covered:
            listed = result(
                admin.list_consumer_groups(request_timeout=CALL_TIMEOUT_S), "list_consumer_groups"
            )
            states = {g.group_id: getattr(g, "state", None) for g in listed.valid}
            check(
                group in states and states[group] in (ConsumerGroupState.STABLE, None),
                "DescribeGroups: %s; ListGroups: %s" % (last, states.get(group, "not listed")),
            )
            return "Stable/%d/%s" % (len(want), d.partition_assignor)
        check(
            time.monotonic() < deadline,
            "group %s not Stable with %s and every partition assigned within %d s; "
            "last described: %s" % (group, want, SETTLE_WITHIN_S, last),
        )
        time.sleep(0.1)


def await_consumed(tally, at_least, count, members):
    """Waits until the group has consumed at least `at_least` distinct records."""
    deadline = time.monotonic() + CONSUME_WITHIN_S
    while tally.distinct < at_least:
        check_members(members)
        check(
            time.monotonic() < deadline,
            "the group consumed %d of %d records within %d s, waiting for %d; never consumed: %s..."
            % (tally.distinct, count, CONSUME_WITHIN_S, at_least, tally.list(False, 10)),
        )
        time.sleep(0.02)


def group_join_leave(bootstrap, topic, group, count):
    check(count >= 6, "--count must be at least 6")
    started = time.monotonic()
    tally = Tally(count)
    members = []
    seen = []
    producer = None
    admin_errors = Errors()
    admin = admin_client(bootstrap, admin_errors)
    try:
        create_topic(admin, topic, GROUP_PARTITIONS)
        for m in range(1, 4):
            members.append(Member("member-%d" % m, bootstrap, group, topic, tally, count))
        seen.append(await_group(admin, group, topic, members, members))
        first_stable_ms = int((time.monotonic() - started) * 1000)

        producer = PacedProducer(bootstrap, topic, count)
        producer.released = count // 3
        await_consumed(tally, count // 6, count, members)
        members[0].stop()
        seen.append(await_group(admin, group, topic, members[1:3], members))

        producer.released = 2 * count // 3
        await_consumed(tally, count // 2, count, members)
        members.append(Member("member-4", bootstrap, group, topic, tally, count))
        seen.append(await_group(admin, group, topic, members[1:4], members))

        producer.released = count
        await_consumed(tally, count, count, members)
        producer.finish()
        for m in members[1:4]:
            m.stop()
        check_members(members)

        # Everyone left: the group is Empty, and its commits cover everything.
        futures = admin.describe_consumer_groups([group], request_timeout=CALL_TIMEOUT_S)
        d = result(futures[group], "describe_consumer_groups(%s)" % group)
        check(
            d.state == ConsumerGroupState.EMPTY and not d.members,
            "after every member closed the group is %s with %d members" % (d.state, len(d.members)),
        )
        committed = committed_offsets(admin, group)
        end = end_offsets(admin, topic, GROUP_PARTITIONS)
        check(committed == end, "committed offsets %s, end offsets %s" % (committed, end))
        check(
            sum(end.values()) == count,
            "end offsets %s add up to %d, produced %d" % (end, sum(end.values()), count),
        )
        admin_errors.check()

        duplicates = tally.deliveries - tally.distinct
        lost = sum(m.lost for m in members)
        check(
            duplicates == 0,
            "%d records consumed twice despite the commits on revocation, e.g. %s "
            "(partitions lost %d times)" % (duplicates, tally.list(True, 10), lost),
        )
        return (
            "produced=%d consumed=%d deliveries=%d duplicates=%d partitions=%d per_member=%s "
            "groups=%s "
            "revocation_commits=%d lost=%d first_stable_ms=%d elapsed_ms=%d client=%s result=ok"
            % (
                count,
                tally.distinct,
                tally.deliveries,
                duplicates,
                GROUP_PARTITIONS,
                ",".join(str(m.consumed) for m in members),
                ",".join(seen),
                sum(m.commits for m in members),
                lost,
                first_stable_ms,
                int((time.monotonic() - started) * 1000),
                client_version(),
            )
        )
    finally:
        if producer is not None:
            producer.close()
        for m in members:
            m.close()


# ---- commit-resume-restart ----

# The restart scenario's topic: a few partitions, each with its own committed offset.
RESTART_PARTITIONS = 4


def commit_half(bootstrap, topic, group, count):
    """Before the restart: produce, read the first half of every partition in a group, commit
    exactly that, close."""
    errors = Errors()
    admin = admin_client(bootstrap, errors)
    create_topic(admin, topic, RESTART_PARTITIONS)
    base = int(time.time() * 1000) - 3_600_000
    acks = produce(bootstrap, topic, count, "none", True, base)
    half = {p: end // 2 for p, end in end_offsets(admin, topic, RESTART_PARTITIONS).items()}
    processed = {p: 0 for p in half}
    got = 0
    beyond = 0
    consumer = Consumer(
        group_consumer_config(bootstrap, group, "skiff-compat-before-restart", errors)
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + CONSUME_WITHIN_S
        while processed != half:
            check(
                time.monotonic() < deadline,
                "read up to %s within %d s, the first half is up to %s"
                % (processed, CONSUME_WITHIN_S, half),
            )
            for msg in consumer.consume(num_messages=500, timeout=0.2):
                check(msg.error() is None, "consume error: %s" % msg.error())
                p, o = msg.partition(), msg.offset()
                where = "%d:%d" % (p, o)
                if o >= half[p]:
                    # Fetched, but past the half: not processed, so not committed.
                    beyond += 1
                    continue
                check(
                    o == processed[p],
                    "read %s, expected partition %d at %d" % (where, p, processed[p]),
                )
                i = key_index(msg.key(), where, count)
                check_record(msg, i, acks[i], base, count)
                processed[p] = o + 1
                got += 1
        offsets = [TopicPartition(topic, p, o) for p, o in half.items()]
        answer = consumer.commit(offsets=offsets, asynchronous=False)
        failed = [tp for tp in answer if tp.error is not None]
        check(not failed, "commit %s: %s" % (offsets, failed))
        fetched = consumer.committed(
            [TopicPartition(topic, p) for p in half], timeout=CALL_TIMEOUT_S
        )
        got_back = {tp.partition: tp.offset for tp in fetched}
        check(got_back == half, "committed %s, OffsetFetch answers %s" % (half, got_back))
        errors.check()
    finally:
        consumer.close()
    return "consumed=%d of=%d fetched_beyond=%d committed=%s client=%s result=ok" % (
        got,
        count,
        beyond,
        format_offsets(half),
        client_version(),
    )


def resume(bootstrap, topic, group, count, expect):
    """After the restart: the commits are there, and a new member reads on from exactly them."""
    try:
        expected = {int(p): int(o) for p, o in (part.split(":") for part in expect.split(","))}
    except ValueError as e:
        raise Failure("bad --expect %s" % expect) from e
    check(len(expected) == RESTART_PARTITIONS, "--expect %s lacks partitions" % expect)
    errors = Errors()
    admin = admin_client(bootstrap, errors)
    end = end_offsets(admin, topic, RESTART_PARTITIONS)
    check(
        sum(end.values()) == count,
        "after the restart the end offsets %s add up to %d, produced %d"
        % (end, sum(end.values()), count),
    )
    consumer = Consumer(
        group_consumer_config(bootstrap, group, "skiff-compat-after-restart", errors)
    )
    try:
        # The consumer first: it waits for the coordinator to serve the group (see
        # committed_offsets). Before it subscribes, too: the broker answers a connection's
        # requests in order, and this would otherwise wait behind its fetches.
        fetched = consumer.committed(
            [TopicPartition(topic, p) for p in expected], timeout=CALL_TIMEOUT_S
        )
        got_back = {tp.partition: tp.offset for tp in fetched}
        check(
            got_back == expected,
            "after the restart OffsetFetch (Consumer) answers %s, committed %s"
            % (got_back, expected),
        )
        stored = committed_offsets(admin, group)
        check(
            stored == expected,
            "after the restart OffsetFetch (AdminClient) answers %s, committed before it %s"
            % (stored, expected),
        )
        left = sum(end[p] - expected[p] for p in expected)
        following = dict(expected)
        seen = [False] * count
        got = 0
        consumer.subscribe([topic])
        deadline = time.monotonic() + CONSUME_WITHIN_S
        while got < left:
            check(
                time.monotonic() < deadline,
                "consumed %d of the %d records after the committed offsets within %d s"
                % (got, left, CONSUME_WITHIN_S),
            )
            for msg in consumer.consume(num_messages=500, timeout=0.2):
                check(msg.error() is None, "consume error: %s" % msg.error())
                p, o = msg.partition(), msg.offset()
                where = "%d:%d" % (p, o)
                check(
                    o == following[p],
                    "read %s, expected partition %d at %d (committed %d)"
                    % (where, p, following[p], expected[p]),
                )
                following[p] = o + 1
                i = key_index(msg.key(), where, count)
                check(not seen[i], "record %d consumed twice (again at %s)" % (i, where))
                seen[i] = True
                got += 1
        errors.check()
    finally:
        consumer.close()
    return "resumed_at=%s consumed=%d end=%s client=%s result=ok" % (
        format_offsets(expected),
        got,
        format_offsets(end),
        client_version(),
    )


# ---- admin-topics ----


def expect_failure(what, code, call):
    """Runs an admin call that must fail with the error `code`; returns its message."""
    try:
        call()
    except KafkaException as e:
        err = e.args[0]
        check(
            err.code() == code,
            "%s failed with %s, expected %s" % (what, err, KafkaError(code).name()),
        )
        return err.str()
    raise Failure("%s succeeded, expected %s" % (what, KafkaError(code).name()))


def await_topics(admin, ok, what, within_s):
    """Polls list_topics until `ok` holds for its names, for at most `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        names = set(admin.list_topics(timeout=CALL_TIMEOUT_S).topics)
        if ok(names):
            return names
        check(
            time.monotonic() < deadline,
            "list_topics did not %s within %d s: %s" % (what, within_s, sorted(names)),
        )
        time.sleep(0.1)


def admin_topics(bootstrap, topic):
    rf3 = topic + "-rf3"
    validated = topic + "-validate-only"
    errors = Errors()
    admin = admin_client(bootstrap, errors)
    create_topic(admin, validated, 3, validate_only=True)
    create_topic(admin, topic, 3)
    expect_failure(
        "creating %s again" % topic,
        KafkaError.TOPIC_ALREADY_EXISTS,
        lambda: create_topic(admin, topic, 3),
    )
    rf3_error = expect_failure(
        "creating %s with replication factor 3" % rf3,
        KafkaError.INVALID_REPLICATION_FACTOR,
        lambda: admin.create_topics(
            [NewTopic(rf3, num_partitions=1, replication_factor=3)],
            operation_timeout=CALL_TIMEOUT_S,
            request_timeout=CALL_TIMEOUT_S,
        )[rf3].result(timeout=CALL_TIMEOUT_S),
    )

    # The controller has created it; the broker's metadata may follow a moment later.
    names = await_topics(admin, lambda n: topic in n, "show %s" % topic, 10)
    check(rf3 not in names, "list_topics shows %s, whose creation failed" % rf3)
    check(validated not in names, "list_topics shows %s, only validated" % validated)

    d = result(
        admin.describe_topics(TopicCollection([topic]), request_timeout=CALL_TIMEOUT_S)[topic],
        "describe_topics(%s)" % topic,
    )
    check(
        len(d.partitions) == 3, "describe_topics(%s) has %d partitions" % (topic, len(d.partitions))
    )
    for p, info in enumerate(sorted(d.partitions, key=lambda i: i.id)):
        check(
            info.id == p and info.leader is not None and len(info.replicas) == 1,
            "describe_topics(%s) partition %d: id %d leader %s replicas %s"
            % (topic, p, info.id, info.leader, info.replicas),
        )

    resource = ConfigResource(ResourceType.TOPIC, topic)
    config = result(
        admin.describe_configs([resource], request_timeout=CALL_TIMEOUT_S)[resource],
        "describe_configs(%s)" % topic,
    )
    values = {}
    for name in ("retention.ms", "max.message.bytes"):
        entry = config.get(name)
        check(
            entry is not None and entry.value is not None,
            "describe_configs(%s) lacks %s" % (topic, name),
        )
        try:
            values[name] = int(entry.value)
        except ValueError as e:
            raise Failure("describe_configs(%s) %s = %s" % (topic, name, entry.value)) from e
    # -1 keeps records forever; anything else is a time.
    check(values["retention.ms"] == -1 or values["retention.ms"] > 0, "retention.ms %s" % values)
    check(values["max.message.bytes"] > 0, "max.message.bytes %s" % values)

    deleting = time.monotonic()
    result(
        admin.delete_topics(
            [topic], operation_timeout=CALL_TIMEOUT_S, request_timeout=CALL_TIMEOUT_S
        )[topic],
        "delete_topics(%s)" % topic,
    )
    await_topics(admin, lambda n: topic not in n, "drop %s" % topic, 30)
    deleted_ms = int((time.monotonic() - deleting) * 1000)
    expect_failure(
        "deleting %s again" % topic,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        lambda: admin.delete_topics(
            [topic], operation_timeout=CALL_TIMEOUT_S, request_timeout=CALL_TIMEOUT_S
        )[topic].result(timeout=CALL_TIMEOUT_S),
    )
    errors.check()
    return (
        'partitions=3 retention.ms=%d max.message.bytes=%d deleted_within_ms=%d rf3="%s" '
        "client=%s result=ok"
        % (
            values["retention.ms"],
            values["max.message.bytes"],
            deleted_ms,
            rf3_error,
            client_version(),
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenario",
        choices=[
            "produce-consume",
            "produce-consume-idempotent",
            "group-join-leave",
            "commit-resume-restart",
            "admin-topics",
        ],
    )
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int)
    parser.add_argument(
        "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    parser.add_argument("--group")
    parser.add_argument("--phase", choices=["commit", "resume"])
    parser.add_argument("--expect")
    a = parser.parse_args()
    if a.count is None:
        a.count = 20000 if a.scenario == "group-join-leave" else 10000
    try:
        check(a.count > 0, "--count must be positive")
        if a.scenario in ("group-join-leave", "commit-resume-restart"):
            check(a.group, "--group is required")
        if a.scenario.startswith("produce-consume"):
            line = produce_consume(
                a.bootstrap,
                a.topic,
                a.count,
                a.compression,
                a.scenario == "produce-consume-idempotent",
            )
        elif a.scenario == "group-join-leave":
            line = group_join_leave(a.bootstrap, a.topic, a.group, a.count)
        elif a.scenario == "commit-resume-restart":
            check(a.phase, "--phase is required")
            if a.phase == "commit":
                line = commit_half(a.bootstrap, a.topic, a.group, a.count)
            else:
                check(a.expect, "--expect is required")
                line = resume(a.bootstrap, a.topic, a.group, a.count, a.expect)
        else:
            line = admin_topics(a.bootstrap, a.topic)
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
