// The Kafka scenarios of tests/kafka.rs: the official Java client against a broker's Kafka
// listener. One source for two client lines: kafka-clients 4.1 (pom.xml beside this file) and 3.9
// (kafka-clients-3.9/pom.xml), so it uses only APIs both have. Launched as a single source file:
//
//   java -cp <classpath> KafkaScenarios.java SCENARIO --bootstrap HOST:PORT --topic T [...]
//
//   produce-consume[-idempotent] [--count 10000] [--compression none|gzip|snappy|lz4|zstd]
//   group-join-leave --group G [--count 20000]
//   commit-resume-restart --group G --phase commit [--count 10000]
//   commit-resume-restart --group G --phase resume --expect P:OFFSET,... [--count 10000]
//   admin-topics
//
// It prints one result line, `... result=ok` and exits 0, or `result=fail: reason` and exits 1.
// The client's threads are not daemons, so the exit is explicit.
//
// produce-consume: a producer (acks=all, no idempotence, linger 5 ms, the given compression) sends
// `count` records to a topic that does not exist yet, so that its first Metadata request creates
// it. Record i has key "key-<i>", a value of varying length (empty, about 1 KiB, or a few hundred
// bytes; one record is a tombstone with a null value), the timestamp base + i, and the headers
// h="v<i>", a binary "bin" = {0, 1, 2, 0xff, i} and "rep" twice with different values. A consumer
// without a group assigns itself every partition from the beginning and must read each record
// exactly once, at the partition and offset its send was acknowledged with, intact. Then the
// offset lookups: end offsets are the per-partition counts, beginning offsets 0, and
// offsetsForTimes finds, in every partition, the first record at or after a time in the middle,
// and nothing after the last record.
//
// produce-consume-idempotent: the same with an idempotent producer (enable.idempotence=true, the
// client's default; set explicitly so that a broker without InitProducerId fails the run rather
// than the client quietly producing without it).
//
// group-join-leave: three consumers of one group (subscribe, the classic protocol with the
// client's default assignors, so range and eager rebalancing; each its own client on its own
// thread) consume a new topic of 6 partitions while a producer writes `count` keyed records in
// three paced slices. Once the group is Stable with the three, the first slice goes out; halfway
// through it the first member closes (it leaves the group), and once the group is Stable with the
// other two the second slice goes out; halfway through that a fourth member joins, and once the
// group is Stable with three again the last slice goes out. Each member commits exactly what it
// has processed, synchronously, when partitions are revoked (ConsumerRebalanceListener
// .onPartitionsRevoked with commitSync: at every rebalance, and when it closes), and never
// otherwise. Every record must be consumed, and exactly once: the revocation commits leave no
// window for duplicates, so any is a failure. "Stable" is seen through the Admin API
// (DescribeGroups): that state, exactly the expected members by client id, and each partition
// assigned to one of them; ListGroups must list the group then. At the end, with every member
// closed, the group is Empty and its committed offsets are the end offsets.
//
// commit-resume-restart, in two runs with a broker restart between them. `--phase commit`
// produces `count` records to a new topic of 4 partitions (idempotent, as produce-consume does);
// one group member reads the first half of every partition (in order, intact; what it fetches
// past the half it leaves unprocessed), commits exactly that (commitSync), reads the commits back
// (OffsetFetch) and closes. It prints them as `committed=P:OFFSET,...`. `--phase resume
// --expect` that list, after the restart: OffsetFetch, through the Admin API and through a new
// member of the same group, gives exactly those offsets, and the new member reads on from there:
// in every partition from the committed offset, each record once, to the end.
//
// admin-topics, with the Admin client: createTopics with validateOnly creates nothing; a topic
// with 3 partitions is created; creating it again fails with TopicExistsException, and one with
// replication factor 3 on this one broker with InvalidReplicationFactorException; listTopics
// shows the first (within a bounded wait: metadata may lag the creation) and neither of the
// others; describeTopics gives its 3 partitions, each with a leader and one replica;
// describeConfigs gives retention.ms and max.message.bytes as numbers; deleteTopics deletes it,
// and listTopics stops showing it within 30 s (Apache Kafka deletes asynchronously); deleting it
// again fails with UnknownTopicOrPartitionException.

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.AppInfoParser;
import org.apache.kafka.common.utils.Utils;

public final class KafkaScenarios {
    /** The bound of the consumer's poll loop: every record must have arrived within it. */
    private static final Duration CONSUME_WITHIN = Duration.ofSeconds(60);
    /** The bound of each single client call that waits for the broker (metadata, offsets). */
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);

    private KafkaScenarios() {
    }

    /** A failed check: its message is the reason printed. */
    static final class Failure extends Exception {
        Failure(String message) {
            super(message);
        }
    }

    static void check(boolean ok, String what) throws Failure {
        if (!ok) {
            throw new Failure(what);
        }
    }

    public static void main(String[] argv) {
        int code;
        try {
            Map<String, String> a = args(argv);
            String scenario = argv.length > 0 ? argv[0] : "";
            String bootstrap = required(a, "bootstrap");
            String topic = required(a, "topic");
            String compression = a.getOrDefault("compression", "none");
            String line = switch (scenario) {
                case "produce-consume" -> produceConsume(bootstrap, topic, count(a, 10000), compression, false);
                case "produce-consume-idempotent" ->
                        produceConsume(bootstrap, topic, count(a, 10000), compression, true);
                case "group-join-leave" -> groupJoinLeave(bootstrap, topic, required(a, "group"), count(a, 20000));
                case "commit-resume-restart" -> switch (required(a, "phase")) {
                    case "commit" -> commitHalf(bootstrap, topic, required(a, "group"), count(a, 10000));
                    case "resume" -> resume(bootstrap, topic, required(a, "group"), count(a, 10000),
                            required(a, "expect"));
                    default -> throw new Failure("--phase must be commit or resume");
                };
                case "admin-topics" -> adminTopics(bootstrap, topic);
                default -> throw new Failure("unknown scenario '" + scenario + "' (expected produce-consume,"
                        + " produce-consume-idempotent, group-join-leave, commit-resume-restart or admin-topics)");
            };
            System.out.println(line);
            code = 0;
        } catch (Failure e) {
            System.out.println("result=fail: " + e.getMessage());
            code = 1;
        } catch (Throwable e) {
            e.printStackTrace();
            // The causes too: a client error often says what went wrong only in its cause.
            StringBuilder reason = new StringBuilder(e.toString());
            for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                reason.append("; caused by ").append(c);
            }
            System.out.println("result=fail: " + reason);
            code = 1;
        }
        System.out.flush();
        System.exit(code);
    }

    /** `--key value` pairs after the scenario name. */
    static Map<String, String> args(String[] argv) throws Failure {
        Map<String, String> a = new HashMap<>();
        for (int i = 1; i < argv.length; i += 2) {
            check(argv[i].startsWith("--") && i + 1 < argv.length, "bad arguments: " + Arrays.toString(argv));
            a.put(argv[i].substring(2), argv[i + 1]);
        }
        return a;
    }

    static String required(Map<String, String> a, String key) throws Failure {
        String v = a.get(key);
        check(v != null, "--" + key + " is required");
        return v;
    }

    static int count(Map<String, String> a, int fallback) throws Failure {
        int count = Integer.parseInt(a.getOrDefault("count", String.valueOf(fallback)));
        check(count > 0, "--count must be positive");
        return count;
    }

    /** The i of a record's key "key-<i>", which must be below count. */
    static int keyIndex(byte[] key, String where, int count) throws Failure {
        check(key != null, "record at " + where + " has a null key");
        String text = new String(key, StandardCharsets.UTF_8);
        int i;
        try {
            check(text.startsWith("key-"), "record at " + where + " has key " + text);
            i = Integer.parseInt(text.substring(4));
        } catch (NumberFormatException e) {
            throw new Failure("record at " + where + " has key " + text);
        }
        check(i >= 0 && i < count, "record at " + where + " has key " + text);
        return i;
    }

    // ---- what record i holds ----

    static byte[] key(int i) {
        return ("key-" + i).getBytes(StandardCharsets.UTF_8);
    }

    /** The one tombstone. */
    static int nullValueAt(int count) {
        return count / 2;
    }

    /** Every tenth value is empty, every tenth other one about 1 KiB, the rest up to 300 bytes. */
    static byte[] value(int i, int count) {
        if (i == nullValueAt(count)) {
            return null;
        }
        int len = i % 10 == 0 ? 0 : i % 10 == 1 ? 1024 + i % 64 : (i * 7) % 300;
        byte[] v = new byte[len];
        for (int j = 0; j < len; j++) {
            v[j] = (byte) (i * 31 + j * 7);
        }
        return v;
    }

    static List<Header> headers(int i) {
        List<Header> h = new ArrayList<>();
        h.add(new RecordHeader("h", ("v" + i).getBytes(StandardCharsets.UTF_8)));
        h.add(new RecordHeader("bin", new byte[] {0x00, 0x01, 0x02, (byte) 0xff, (byte) i}));
        h.add(new RecordHeader("rep", "first".getBytes(StandardCharsets.UTF_8)));
        h.add(new RecordHeader("rep", ("second-" + i).getBytes(StandardCharsets.UTF_8)));
        return h;
    }

    /** Where record i was acknowledged. */
    record Ack(int partition, long offset) {
    }

    static String produceConsume(String bootstrap, String topic, int count, String compression,
            boolean idempotent) throws Exception {
        // An hour back: within what a broker accepts as CreateTime (Kafka 4 refuses more than an
        // hour ahead, and keeps a week), and every record's time is distinct and known.
        long base = System.currentTimeMillis() - 3_600_000L;

        long started = System.nanoTime();
        Ack[] acks = produce(bootstrap, topic, count, compression, idempotent, base);
        long produceMs = (System.nanoTime() - started) / 1_000_000;

        started = System.nanoTime();
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "skiff-compat-consumer");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        // No group.id: assign mode, nothing committed.
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("default.api.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, CALL_TIMEOUT);
            check(infos != null && !infos.isEmpty(), "partitionsFor(" + topic + ") found no partitions");
            int partitions = infos.size();
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo info : infos) {
                tps.add(new TopicPartition(topic, info.partition()));
            }
            checkPartitioner(acks, partitions);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<Integer, List<long[]>> stored = consume(consumer, acks, base, count);
            long consumeMs = (System.nanoTime() - started) / 1_000_000;
            checkOffsets(consumer, tps, stored, base, count);
            return "produced=" + count + " consumed=" + count + " partitions=" + partitions
                    + " compression=" + compression + " idempotence=" + idempotent
                    + " produce_ms=" + produceMs + " consume_ms=" + consumeMs
                    + " client=kafka-clients-" + AppInfoParser.getVersion() + " result=ok";
        }
    }

    static Ack[] produce(String bootstrap, String topic, int count, String compression,
            boolean idempotent, long base) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "skiff-compat-producer");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        p.put("enable.idempotence", String.valueOf(idempotent));
        p.put("linger.ms", "5");
        p.put("compression.type", compression);
        // Fail within the bounds of the harness rather than the client's minutes: waiting for
        // metadata, and for each record's acknowledgement with its retries.
        p.put("max.block.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        p.put("request.timeout.ms", "15000");
        p.put("delivery.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        List<Future<RecordMetadata>> sent = new ArrayList<>(count);
        AtomicReference<Exception> firstError = new AtomicReference<>();
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
        try {
            // Stops at the first failure: each further send() could block for max.block.ms.
            for (int i = 0; i < count && firstError.get() == null; i++) {
                // No partition: the default partitioner picks it from the key.
                sent.add(producer.send(
                        new ProducerRecord<>(topic, null, base + i, key(i), value(i, count), headers(i)),
                        (md, e) -> {
                            if (e != null) {
                                firstError.compareAndSet(null, e);
                            }
                        }));
            }
            producer.flush();
        } finally {
            producer.close(CALL_TIMEOUT);
        }
        if (firstError.get() != null) {
            throw new Failure("a send failed after " + sent.size() + " of " + count + " were sent: "
                    + firstError.get());
        }
        Ack[] acks = new Ack[count];
        Set<String> positions = new HashSet<>();
        for (int i = 0; i < count; i++) {
            // flush() returned and no send failed: every future holds its acknowledgement.
            RecordMetadata md = sent.get(i).get(1, TimeUnit.SECONDS);
            check(md.topic().equals(topic), "record " + i + " acknowledged for topic " + md.topic());
            check(md.hasOffset() && md.offset() >= 0, "record " + i + " acknowledged without an offset");
            check(md.timestamp() == base + i,
                    "record " + i + " acknowledged with timestamp " + md.timestamp() + ", sent " + (base + i));
            check(positions.add(md.partition() + ":" + md.offset()),
                    "record " + i + " acknowledged at " + md.partition() + ":" + md.offset() + " like another");
            acks[i] = new Ack(md.partition(), md.offset());
        }
        return acks;
    }

    /** The default partitioner hashes the key (murmur2) over the partitions the metadata has. */
    static void checkPartitioner(Ack[] acks, int partitions) throws Failure {
        for (int i = 0; i < acks.length; i++) {
            int expected = Utils.toPositive(Utils.murmur2(key(i))) % partitions;
            check(acks[i].partition() == expected, "record " + i + " went to partition "
                    + acks[i].partition() + ", its key hashes to " + expected + " of " + partitions);
        }
    }

    /**
     * Polls until every record arrived once, checking each. Returns per partition the stored
     * (offset, timestamp) pairs.
     */
    static Map<Integer, List<long[]>> consume(KafkaConsumer<byte[], byte[]> consumer, Ack[] acks,
            long base, int count) throws Failure {
        boolean[] seen = new boolean[count];
        int got = 0;
        Map<Integer, List<long[]>> stored = new HashMap<>();
        long deadline = System.nanoTime() + CONSUME_WITHIN.toNanos();
        while (got < count) {
            check(System.nanoTime() < deadline,
                    "consumed " + got + " of " + count + " records within " + CONSUME_WITHIN.toSeconds() + " s");
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                String where = r.partition() + ":" + r.offset();
                int i = keyIndex(r.key(), where, count);
                check(!seen[i], "record " + i + " consumed twice (again at " + where + ")");
                seen[i] = true;
                got++;
                checkRecord(r, i, acks[i], base, count);
                stored.computeIfAbsent(r.partition(), k -> new ArrayList<>())
                        .add(new long[] {r.offset(), r.timestamp()});
            }
        }
        return stored;
    }

    static void checkRecord(ConsumerRecord<byte[], byte[]> r, int i, Ack ack, long base, int count)
            throws Failure {
        String what = "record " + i + " at " + r.partition() + ":" + r.offset();
        check(r.partition() == ack.partition() && r.offset() == ack.offset(),
                what + " was acknowledged at " + ack.partition() + ":" + ack.offset());
        byte[] value = value(i, count);
        check(Arrays.equals(r.value(), value),
                what + " has value " + describe(r.value()) + ", sent " + describe(value));
        check(r.timestampType() == TimestampType.CREATE_TIME, what + " has timestamp type " + r.timestampType());
        check(r.timestamp() == base + i, what + " has timestamp " + r.timestamp() + ", sent " + (base + i));
        Header[] got = r.headers().toArray();
        List<Header> sent = headers(i);
        check(got.length == sent.size(), what + " has " + got.length + " headers, sent " + sent.size());
        for (int h = 0; h < got.length; h++) {
            Header s = sent.get(h);
            check(got[h].key().equals(s.key()) && Arrays.equals(got[h].value(), s.value()),
                    what + " header " + h + " is " + got[h].key() + "=" + Arrays.toString(got[h].value())
                            + ", sent " + s.key() + "=" + Arrays.toString(s.value()));
        }
    }

    /** A value for a failure message: null (a tombstone) or its length. */
    static String describe(byte[] value) {
        return value == null ? "null" : value.length + " bytes";
    }

    static void checkOffsets(KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> tps,
            Map<Integer, List<long[]>> stored, long base, int count) throws Failure {
        Map<TopicPartition, Long> end = consumer.endOffsets(tps, CALL_TIMEOUT);
        Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps, CALL_TIMEOUT);
        long sum = 0;
        for (TopicPartition tp : tps) {
            int n = stored.getOrDefault(tp.partition(), List.of()).size();
            Long e = end.get(tp);
            check(e != null && e == n, tp + " end offset " + e + ", holds " + n + " records");
            sum += e;
            check(Long.valueOf(0).equals(begin.get(tp)), tp + " beginning offset " + begin.get(tp));
        }
        check(sum == count, "end offsets add up to " + sum + ", produced " + count);

        // A time in the middle: in each partition the first record (by offset) at or after it.
        long middle = base + count / 2 + 1;
        Map<TopicPartition, Long> query = new HashMap<>();
        for (TopicPartition tp : tps) {
            query.put(tp, middle);
        }
        Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query, CALL_TIMEOUT);
        for (TopicPartition tp : tps) {
            long[] first = null;
            for (long[] rec : stored.getOrDefault(tp.partition(), List.of())) {
                if (rec[1] >= middle && (first == null || rec[0] < first[0])) {
                    first = rec;
                }
            }
            OffsetAndTimestamp at = found.get(tp);
            if (first == null) {
                check(at == null, tp + " offsetsForTimes(" + middle + ") = " + at + ", no record is that late");
            } else {
                check(at != null && at.offset() == first[0] && at.timestamp() == first[1],
                        tp + " offsetsForTimes(" + middle + ") = " + at + ", expected offset " + first[0]
                                + " timestamp " + first[1]);
            }
        }

        // After the last record: nothing, in every partition.
        long after = base + count + 1000;
        for (TopicPartition tp : tps) {
            query.put(tp, after);
        }
        found = consumer.offsetsForTimes(query, CALL_TIMEOUT);
        for (TopicPartition tp : tps) {
            check(found.get(tp) == null, tp + " offsetsForTimes(" + after + ") = " + found.get(tp)
                    + ", after every record");
        }
    }

    // ---- shared by the group and admin scenarios ----

    static Properties adminProps(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "skiff-compat-admin");
        p.put("default.api.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        p.put("request.timeout.ms", "15000");
        return p;
    }

    /** A group member's settings: the classic protocol, nothing committed but by the scenario. */
    static Properties groupConsumerProps(String bootstrap, String group, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId);
        p.put("group.id", group);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("default.api.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        // Members notice a rebalance at their next heartbeat: every 500 ms rather than 3 s. The
        // session stays within what every broker accepts (Skiff and Kafka: at least 6 s).
        p.put("heartbeat.interval.ms", "500");
        p.put("session.timeout.ms", "10000");
        // The rebalance timeout: a member that does not rejoin holds the group up this long.
        p.put("max.poll.interval.ms", "60000");
        return p;
    }

    /** An Admin call's result, within CALL_TIMEOUT. */
    static <T> T await(KafkaFuture<T> future) throws Exception {
        return future.get(CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        await(admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all());
    }

    /** The topic's end offsets (ListOffsets, latest). */
    static Map<TopicPartition, Long> endOffsets(Admin admin, String topic, int partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> query = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            query.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        Map<TopicPartition, Long> end = new TreeMap<>(KafkaScenarios::byPartition);
        await(admin.listOffsets(query).all()).forEach((tp, info) -> end.put(tp, info.offset()));
        return end;
    }

    static int byPartition(TopicPartition a, TopicPartition b) {
        int t = a.topic().compareTo(b.topic());
        return t != 0 ? t : Integer.compare(a.partition(), b.partition());
    }

    /** A group's committed offsets as the broker answers OffsetFetch through the Admin API. */
    static Map<TopicPartition, Long> committedOffsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, Long> committed = new TreeMap<>(KafkaScenarios::byPartition);
        await(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata())
                .forEach((tp, om) -> committed.put(tp, om == null ? null : om.offset()));
        return committed;
    }

    /** "P:OFFSET,..." by partition. */
    static String formatOffsets(Map<TopicPartition, Long> offsets) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<TopicPartition, Long> e : offsets.entrySet()) {
            b.append(b.length() == 0 ? "" : ",").append(e.getKey().partition()).append(':').append(e.getValue());
        }
        return b.toString();
    }

    // ---- group-join-leave ----

    /** The group scenario's topic: more partitions than members, so that every member has some. */
    static final int GROUP_PARTITIONS = 6;
    /** The bound of each wait for the group to settle. */
    static final Duration SETTLE_WITHIN = Duration.ofSeconds(60);
    /** The producer's pace: bursts of this many records ... */
    static final int PACE_BURST = 100;
    /** ... this far apart, about 4 000 records a second, so that a slice lasts a second or two. */
    static final long PACE_PAUSE_MS = 25;

    /** What the group consumed: per record how often. The members' threads share it. */
    static final class Tally {
        final AtomicIntegerArray times;
        final AtomicInteger distinct = new AtomicInteger();
        final AtomicInteger deliveries = new AtomicInteger();

        Tally(int count) {
            times = new AtomicIntegerArray(count);
        }

        void add(int i) {
            deliveries.incrementAndGet();
            if (times.getAndIncrement(i) == 0) {
                distinct.incrementAndGet();
            }
        }

        /** The first few records consumed never or more than once, for a report. */
        String list(boolean duplicates, int limit) {
            List<Integer> found = new ArrayList<>();
            for (int i = 0; i < times.length() && found.size() < limit; i++) {
                if (duplicates ? times.get(i) > 1 : times.get(i) == 0) {
                    found.add(i);
                }
            }
            return found.toString();
        }
    }

    /**
     * One consumer of the group on a thread of its own (a KafkaConsumer is not thread-safe), with
     * its own client id and so its own connections. It commits exactly what it has processed
     * whenever partitions are revoked: before each rebalance (an eager assignor revokes
     * everything) and when it closes.
     */
    static final class Member implements ConsumerRebalanceListener {
        final String name;
        final Thread thread;
        final AtomicReference<String> error = new AtomicReference<>();
        final AtomicInteger consumed = new AtomicInteger();
        final AtomicInteger commits = new AtomicInteger();
        final AtomicInteger lost = new AtomicInteger();
        private final Tally tally;
        private final int count;
        /** Per partition, the offset after the last record processed and not yet committed. */
        private final Map<TopicPartition, Long> processed = new HashMap<>();
        private final KafkaConsumer<byte[], byte[]> consumer;
        private volatile boolean stopping;

        Member(String name, String bootstrap, String group, String topic, Tally tally, int count) {
            this.name = name;
            this.tally = tally;
            this.count = count;
            consumer = new KafkaConsumer<>(groupConsumerProps(bootstrap, group, name));
            consumer.subscribe(List.of(topic), this);
            thread = new Thread(this::run, name);
            thread.start();
        }

        private void run() {
            try {
                // Stopped by the flag, not by wakeup(): a wakeup could land in the closing
                // revocation's commitSync instead.
                while (!stopping) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                        tally.add(keyIndex(r.key(), r.partition() + ":" + r.offset(), count));
                        consumed.incrementAndGet();
                        processed.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
                    }
                }
            } catch (Exception e) {
                error.compareAndSet(null, name + ": " + e);
            } finally {
                try {
                    // Revokes the partitions (so commits what was processed) and leaves the group.
                    consumer.close();
                } catch (Exception e) {
                    error.compareAndSet(null, name + ": close: " + e);
                }
            }
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            for (TopicPartition tp : partitions) {
                Long next = processed.remove(tp);
                if (next != null) {
                    commit.put(tp, new OffsetAndMetadata(next));
                }
            }
            if (commit.isEmpty()) {
                return;
            }
            try {
                consumer.commitSync(commit, CALL_TIMEOUT);
                commits.incrementAndGet();
            } catch (Exception e) {
                error.compareAndSet(null, name + ": commitSync on revocation of " + commit + ": " + e);
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        }

        /** Lost, not revoked: another member may own them already, so nothing is committed. */
        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            lost.incrementAndGet();
            partitions.forEach(processed::remove);
        }

        /** Closes the member (on its own thread) and waits for that; false if it did not close. */
        boolean close() throws InterruptedException {
            stopping = true;
            thread.join(CALL_TIMEOUT.toMillis() * 2);
            return !thread.isAlive();
        }

        void stop() throws Failure, InterruptedException {
            check(close(), name + " did not close within " + CALL_TIMEOUT.toSeconds() * 2 + " s");
        }
    }

    static void checkMembers(List<Member> members) throws Failure {
        for (Member m : members) {
            check(m.error.get() == null, m.error.get());
        }
    }

    /** The producer of group-join-leave, on a thread of its own, sending up to what is released. */
    static final class PacedProducer {
        final Thread thread;
        final AtomicReference<String> error = new AtomicReference<>();
        private final AtomicInteger released = new AtomicInteger();
        private final KafkaProducer<byte[], byte[]> producer;
        private final String topic;
        private final int count;
        private volatile boolean closing;

        PacedProducer(String bootstrap, String topic, int count) {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("client.id", "skiff-compat-producer");
            p.put("key.serializer", ByteArraySerializer.class.getName());
            p.put("value.serializer", ByteArraySerializer.class.getName());
            p.put("acks", "all");
            p.put("linger.ms", "5");
            p.put("max.block.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
            p.put("request.timeout.ms", "15000");
            p.put("delivery.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
            producer = new KafkaProducer<>(p);
            this.topic = topic;
            this.count = count;
            thread = new Thread(this::run, "producer");
            thread.start();
        }

        void release(int upTo) {
            released.set(upTo);
        }

        private void run() {
            try {
                int sent = 0;
                while (sent < count && !closing && error.get() == null) {
                    int end = Math.min(released.get(), sent + PACE_BURST);
                    for (; sent < end; sent++) {
                        byte[] value = ("value-" + sent).getBytes(StandardCharsets.UTF_8);
                        producer.send(new ProducerRecord<>(topic, key(sent), value), (md, e) -> {
                            if (e != null) {
                                error.compareAndSet(null, "send: " + e);
                            }
                        });
                    }
                    Thread.sleep(PACE_PAUSE_MS);
                }
                producer.flush();
            } catch (Exception e) {
                error.compareAndSet(null, "producer: " + e);
            } finally {
                producer.close(CALL_TIMEOUT);
            }
        }

        /** Waits until every record was sent and acknowledged. */
        void finish() throws Failure, InterruptedException {
            thread.join(CALL_TIMEOUT.toMillis() * 2);
            check(!thread.isAlive(), "the producer did not finish within " + CALL_TIMEOUT.toSeconds() * 2 + " s");
            check(error.get() == null, error.get());
        }

        void close() throws InterruptedException {
            closing = true;
            thread.join(CALL_TIMEOUT.toMillis() * 2);
        }
    }

    /**
     * Waits until the group is Stable with exactly `expected` as members (by client id) and every
     * partition of the topic assigned to one of them, as DescribeGroups shows it; then ListGroups
     * must list it. Returns what was seen: "Stable/<members>/<assignor>".
     */
    // state() and listConsumerGroups(): 4.0 added groupState() and listGroups(), which 3.9 lacks.
    @SuppressWarnings({"deprecation", "removal"})
    static String awaitGroup(Admin admin, String group, String topic, List<Member> expected, List<Member> all)
            throws Exception {
        Set<String> want = new TreeSet<>();
        expected.forEach(m -> want.add(m.name));
        long deadline = System.nanoTime() + SETTLE_WITHIN.toNanos();
        String last = "nothing";
        while (true) {
            checkMembers(all);
            ConsumerGroupDescription d = await(admin.describeConsumerGroups(List.of(group)).all()).get(group);
            Set<String> clients = new TreeSet<>();
            List<TopicPartition> assigned = new ArrayList<>();
            for (MemberDescription m : d.members()) {
                clients.add(m.clientId());
                assigned.addAll(m.assignment().topicPartitions());
            }
            Set<TopicPartition> distinct = new HashSet<>(assigned);
            boolean covered = assigned.size() == GROUP_PARTITIONS && distinct.size() == GROUP_PARTITIONS
                    && distinct.stream().allMatch(tp -> tp.topic().equals(topic));
            last = d.state() + " with " + d.members().size() + " members " + clients + ", " + assigned.size()
                    + " partitions assigned (" + distinct.size() + " distinct), assignor " + d.partitionAssignor();
            if (d.state() == ConsumerGroupState.STABLE && d.members().size() == want.size() && clients.equals(want)
                    && covered) {
                String listed = "not listed";
                for (ConsumerGroupListing l : await(admin.listConsumerGroups().all())) {
                    if (l.groupId().equals(group)) {
                        listed = l.state().map(String::valueOf).orElse("listed without a state");
                    }
                }
                check(listed.equals("Stable") || listed.equals("listed without a state"),
                        "DescribeGroups: " + last + "; ListGroups: " + listed);
                return "Stable/" + want.size() + "/" + d.partitionAssignor();
            }
            check(System.nanoTime() < deadline, "group " + group + " not Stable with " + want
                    + " and every partition assigned within " + SETTLE_WITHIN.toSeconds() + " s; last described: "
                    + last);
            Thread.sleep(100);
        }
    }

    /** Waits until the group has consumed at least `atLeast` distinct records. */
    static void awaitConsumed(Tally tally, int atLeast, int count, List<Member> members)
            throws Failure, InterruptedException {
        long deadline = System.nanoTime() + CONSUME_WITHIN.toNanos();
        while (tally.distinct.get() < atLeast) {
            checkMembers(members);
            check(System.nanoTime() < deadline, "the group consumed " + tally.distinct.get() + " of " + count
                    + " records within " + CONSUME_WITHIN.toSeconds() + " s, waiting for " + atLeast
                    + "; never consumed: " + tally.list(false, 10) + "...");
            Thread.sleep(20);
        }
    }

    @SuppressWarnings("deprecation") // state(), as in awaitGroup
    static String groupJoinLeave(String bootstrap, String topic, String group, int count) throws Exception {
        check(count >= 6, "--count must be at least 6");
        long started = System.nanoTime();
        Tally tally = new Tally(count);
        List<Member> members = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        PacedProducer producer = null;
        try (Admin admin = Admin.create(adminProps(bootstrap))) {
            createTopic(admin, topic, GROUP_PARTITIONS);
            for (int m = 1; m <= 3; m++) {
                members.add(new Member("member-" + m, bootstrap, group, topic, tally, count));
            }
            seen.add(awaitGroup(admin, group, topic, members, members));
            long firstStable = (System.nanoTime() - started) / 1_000_000;

            producer = new PacedProducer(bootstrap, topic, count);
            producer.release(count / 3);
            awaitConsumed(tally, count / 6, count, members);
            members.get(0).stop();
            seen.add(awaitGroup(admin, group, topic, members.subList(1, 3), members));

            producer.release(2 * count / 3);
            awaitConsumed(tally, count / 2, count, members);
            members.add(new Member("member-4", bootstrap, group, topic, tally, count));
            seen.add(awaitGroup(admin, group, topic, members.subList(1, 4), members));

            producer.release(count);
            awaitConsumed(tally, count, count, members);
            producer.finish();
            for (Member m : members.subList(1, 4)) {
                m.stop();
            }
            checkMembers(members);

            // Everyone left: the group is Empty, and its commits cover everything.
            ConsumerGroupDescription d = await(admin.describeConsumerGroups(List.of(group)).all()).get(group);
            check(d.state() == ConsumerGroupState.EMPTY && d.members().isEmpty(),
                    "after every member closed the group is " + d.state() + " with " + d.members().size()
                            + " members");
            Map<TopicPartition, Long> end = endOffsets(admin, topic, GROUP_PARTITIONS);
            Map<TopicPartition, Long> committed = committedOffsets(admin, group);
            check(committed.equals(end), "committed offsets " + committed + ", end offsets " + end);
            long sum = end.values().stream().mapToLong(Long::longValue).sum();
            check(sum == count, "end offsets add up to " + sum + ", produced " + count);

            int duplicates = tally.deliveries.get() - tally.distinct.get();
            StringBuilder perMember = new StringBuilder();
            int commits = 0;
            int lost = 0;
            for (Member m : members) {
                perMember.append(perMember.length() == 0 ? "" : ",").append(m.consumed.get());
                commits += m.commits.get();
                lost += m.lost.get();
            }
            check(duplicates == 0, duplicates + " records consumed twice despite the commits on revocation, e.g. "
                    + tally.list(true, 10) + " (partitions lost " + lost + " times)");
            return "produced=" + count + " consumed=" + tally.distinct.get()
                    + " deliveries=" + tally.deliveries.get()
                    + " duplicates=" + duplicates + " partitions=" + GROUP_PARTITIONS + " per_member=" + perMember
                    + " groups=" + String.join(",", seen)
                    + " revocation_commits=" + commits + " lost=" + lost + " first_stable_ms=" + firstStable
                    + " elapsed_ms=" + (System.nanoTime() - started) / 1_000_000
                    + " client=kafka-clients-" + AppInfoParser.getVersion() + " result=ok";
        } finally {
            if (producer != null) {
                producer.close();
            }
            for (Member m : members) {
                m.close();
            }
        }
    }

    // ---- commit-resume-restart ----

    /** The restart scenario's topic: a few partitions, each with its own committed offset. */
    static final int RESTART_PARTITIONS = 4;

    /**
     * Before the restart: produce, read the first half of every partition in a group, commit
     * exactly that, close.
     */
    static String commitHalf(String bootstrap, String topic, String group, int count) throws Exception {
        Map<TopicPartition, Long> half = new TreeMap<>(KafkaScenarios::byPartition);
        long base = System.currentTimeMillis() - 3_600_000L;
        Ack[] acks;
        try (Admin admin = Admin.create(adminProps(bootstrap))) {
            createTopic(admin, topic, RESTART_PARTITIONS);
            acks = produce(bootstrap, topic, count, "none", true, base);
            endOffsets(admin, topic, RESTART_PARTITIONS).forEach((tp, end) -> half.put(tp, end / 2));
        }
        Map<TopicPartition, Long> processed = new TreeMap<>(KafkaScenarios::byPartition);
        half.keySet().forEach(tp -> processed.put(tp, 0L));
        int got = 0;
        int beyond = 0;
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(groupConsumerProps(bootstrap, group, "skiff-compat-before-restart"))) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + CONSUME_WITHIN.toNanos();
            while (!processed.equals(half)) {
                check(System.nanoTime() < deadline, "read up to " + processed + " within "
                        + CONSUME_WITHIN.toSeconds() + " s, the first half is up to " + half);
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    TopicPartition tp = new TopicPartition(topic, r.partition());
                    String where = r.partition() + ":" + r.offset();
                    if (r.offset() >= half.get(tp)) {
                        // Fetched, but past the half: not processed, so not committed.
                        beyond++;
                        continue;
                    }
                    check(r.offset() == processed.get(tp), "read " + where + ", expected " + tp + " at "
                            + processed.get(tp));
                    int i = keyIndex(r.key(), where, count);
                    checkRecord(r, i, acks[i], base, count);
                    processed.put(tp, r.offset() + 1);
                    got++;
                }
            }
            Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
            half.forEach((tp, offset) -> commit.put(tp, new OffsetAndMetadata(offset)));
            consumer.commitSync(commit, CALL_TIMEOUT);
            Map<TopicPartition, OffsetAndMetadata> fetched = consumer.committed(half.keySet(), CALL_TIMEOUT);
            for (TopicPartition tp : half.keySet()) {
                OffsetAndMetadata om = fetched.get(tp);
                check(om != null && om.offset() == half.get(tp),
                        tp + " committed " + half.get(tp) + ", OffsetFetch answers " + om);
            }
        }
        return "consumed=" + got + " of=" + count + " fetched_beyond=" + beyond
                + " committed=" + formatOffsets(half)
                + " client=kafka-clients-" + AppInfoParser.getVersion() + " result=ok";
    }

    /** After the restart: the commits are there, and a new member reads on from exactly them. */
    static String resume(String bootstrap, String topic, String group, int count, String expect) throws Exception {
        Map<TopicPartition, Long> expected = new TreeMap<>(KafkaScenarios::byPartition);
        for (String part : expect.split(",")) {
            String[] po = part.split(":");
            check(po.length == 2, "bad --expect " + expect);
            expected.put(new TopicPartition(topic, Integer.parseInt(po[0])), Long.parseLong(po[1]));
        }
        check(expected.size() == RESTART_PARTITIONS, "--expect " + expect + " lacks partitions");
        Map<TopicPartition, Long> end;
        try (Admin admin = Admin.create(adminProps(bootstrap))) {
            Map<TopicPartition, Long> stored = committedOffsets(admin, group);
            check(stored.equals(expected), "after the restart OffsetFetch (Admin) answers " + stored
                    + ", committed before it " + expected);
            end = endOffsets(admin, topic, RESTART_PARTITIONS);
        }
        long sum = end.values().stream().mapToLong(Long::longValue).sum();
        check(sum == count,
                "after the restart the end offsets " + end + " add up to " + sum + ", produced " + count);
        long left = 0;
        for (TopicPartition tp : expected.keySet()) {
            left += end.get(tp) - expected.get(tp);
        }
        Map<TopicPartition, Long> next = new HashMap<>(expected);
        int got = 0;
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(groupConsumerProps(bootstrap, group, "skiff-compat-after-restart"))) {
            Map<TopicPartition, OffsetAndMetadata> fetched = consumer.committed(expected.keySet(), CALL_TIMEOUT);
            for (TopicPartition tp : expected.keySet()) {
                OffsetAndMetadata om = fetched.get(tp);
                check(om != null && om.offset() == expected.get(tp),
                        "after the restart OffsetFetch (consumer) answers " + tp + " " + om + ", committed "
                                + expected.get(tp));
            }
            consumer.subscribe(List.of(topic));
            boolean[] seen = new boolean[count];
            long deadline = System.nanoTime() + CONSUME_WITHIN.toNanos();
            while (got < left) {
                check(System.nanoTime() < deadline, "consumed " + got + " of the " + left + " records after the"
                        + " committed offsets within " + CONSUME_WITHIN.toSeconds() + " s");
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    TopicPartition tp = new TopicPartition(topic, r.partition());
                    String where = r.partition() + ":" + r.offset();
                    check(r.offset() == next.get(tp), "read " + where + ", expected " + tp + " at " + next.get(tp)
                            + " (committed " + expected.get(tp) + ")");
                    next.put(tp, r.offset() + 1);
                    int i = keyIndex(r.key(), where, count);
                    check(!seen[i], "record " + i + " consumed twice (again at " + where + ")");
                    seen[i] = true;
                    got++;
                }
            }
        }
        return "resumed_at=" + formatOffsets(expected) + " consumed=" + got + " end=" + formatOffsets(end)
                + " client=kafka-clients-" + AppInfoParser.getVersion() + " result=ok";
    }

    // ---- admin-topics ----

    interface Call {
        void run() throws Exception;
    }

    /** Runs an Admin call that must fail with `expected`; returns that exception's message. */
    static String expectFailure(String what, Class<? extends Throwable> expected, Call call) throws Exception {
        try {
            call.run();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            check(expected.isInstance(cause),
                    what + " failed with " + cause + ", expected " + expected.getSimpleName());
            return cause.getMessage();
        }
        throw new Failure(what + " succeeded, expected " + expected.getSimpleName());
    }

    /** Polls listTopics until `ok` holds for its names, for at most `within`. */
    static Set<String> awaitTopics(Admin admin, Predicate<Set<String>> ok, String what, Duration within)
            throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (true) {
            Set<String> names = await(admin.listTopics().names());
            if (ok.test(names)) {
                return names;
            }
            check(System.nanoTime() < deadline, "listTopics did not " + what + " within " + within.toSeconds()
                    + " s: " + new TreeSet<>(names));
            Thread.sleep(100);
        }
    }

    static String adminTopics(String bootstrap, String topic) throws Exception {
        String rf3 = topic + "-rf3";
        String validated = topic + "-validate-only";
        try (Admin admin = Admin.create(adminProps(bootstrap))) {
            await(admin.createTopics(List.of(new NewTopic(validated, 3, (short) 1)),
                    new CreateTopicsOptions().validateOnly(true)).all());
            createTopic(admin, topic, 3);
            expectFailure("creating " + topic + " again", TopicExistsException.class,
                    () -> createTopic(admin, topic, 3));
            String rf3Error = expectFailure("creating " + rf3 + " with replication factor 3",
                    InvalidReplicationFactorException.class,
                    () -> await(admin.createTopics(List.of(new NewTopic(rf3, 1, (short) 3))).all()));

            // The controller has created it; the broker's metadata may follow a moment later.
            Set<String> names =
                    awaitTopics(admin, n -> n.contains(topic), "show " + topic, Duration.ofSeconds(10));
            check(!names.contains(rf3), "listTopics shows " + rf3 + ", whose creation failed");
            check(!names.contains(validated), "listTopics shows " + validated + ", only validated");

            TopicDescription d = await(admin.describeTopics(List.of(topic)).allTopicNames()).get(topic);
            check(d != null && d.partitions().size() == 3, "describeTopics(" + topic + ") = " + d);
            for (int p = 0; p < 3; p++) {
                TopicPartitionInfo info = d.partitions().get(p);
                check(info.partition() == p && info.leader() != null && info.replicas().size() == 1,
                        "describeTopics(" + topic + ") partition " + p + " = " + info);
            }

            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = await(admin.describeConfigs(List.of(resource)).all()).get(resource);
            check(config != null, "describeConfigs(" + topic + ") answered nothing for it");
            Map<String, Long> values = new TreeMap<>();
            for (String name : List.of("retention.ms", "max.message.bytes")) {
                ConfigEntry e = config.get(name);
                check(e != null && e.value() != null, "describeConfigs(" + topic + ") lacks " + name);
                try {
                    values.put(name, Long.parseLong(e.value()));
                } catch (NumberFormatException x) {
                    throw new Failure("describeConfigs(" + topic + ") " + name + " = " + e.value());
                }
            }
            // -1 keeps records forever; anything else is a time.
            check(values.get("retention.ms") == -1 || values.get("retention.ms") > 0, "retention.ms " + values);
            check(values.get("max.message.bytes") > 0, "max.message.bytes " + values);

            long deleting = System.nanoTime();
            await(admin.deleteTopics(List.of(topic)).all());
            awaitTopics(admin, n -> !n.contains(topic), "drop " + topic, Duration.ofSeconds(30));
            long deletedMs = (System.nanoTime() - deleting) / 1_000_000;
            expectFailure("deleting " + topic + " again", UnknownTopicOrPartitionException.class,
                    () -> await(admin.deleteTopics(List.of(topic)).all()));
            return "partitions=3 retention.ms=" + values.get("retention.ms") + " max.message.bytes="
                    + values.get("max.message.bytes") + " deleted_within_ms=" + deletedMs
                    + " rf3=\"" + rf3Error + "\" client=kafka-clients-" + AppInfoParser.getVersion()
                    + " result=ok";
        }
    }
}
