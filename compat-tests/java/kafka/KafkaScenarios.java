// The Kafka scenarios of tests/kafka.rs: the official Java client (kafka-clients, pom.xml beside
// this file) against a broker's Kafka listener. Launched as a single source file:
//
//   java -cp <classpath> KafkaScenarios.java produce-consume[-idempotent] --bootstrap HOST:PORT
//        --topic T [--count 10000] [--compression none|gzip|snappy|lz4|zstd]
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

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
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
            boolean idempotent = scenario.equals("produce-consume-idempotent");
            if (!idempotent && !scenario.equals("produce-consume")) {
                throw new Failure("unknown scenario '" + scenario
                        + "' (expected produce-consume or produce-consume-idempotent)");
            }
            System.out.println(produceConsume(
                    required(a, "bootstrap"),
                    required(a, "topic"),
                    Integer.parseInt(a.getOrDefault("count", "10000")),
                    a.getOrDefault("compression", "none"),
                    idempotent));
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
        check(count > 0, "--count must be positive");
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
                check(r.key() != null, "record at " + where + " has a null key");
                String key = new String(r.key(), StandardCharsets.UTF_8);
                int i;
                try {
                    check(key.startsWith("key-"), "record at " + where + " has key " + key);
                    i = Integer.parseInt(key.substring(4));
                } catch (NumberFormatException e) {
                    throw new Failure("record at " + where + " has key " + key);
                }
                check(i >= 0 && i < count, "record at " + where + " has key " + key);
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
}
