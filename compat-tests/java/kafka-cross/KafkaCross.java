// The Kafka side of the cross-protocol tests (tests/kafka_cross.rs): the official Java client
// (kafka-clients, pom.xml beside this file) against Skiff's Kafka listener, while the official
// RocketMQ clients (the cross-from-kafka and cross-to-kafka scenarios of java/src/skiff/compat/)
// use the same topics through the RocketMQ port. Launched as a single source file:
//
//   java -cp <classpath> KafkaCross.java produce --bootstrap HOST:PORT --topic T --count N
//        --partitions P --manifest FILE
//   java -cp <classpath> KafkaCross.java consume --bootstrap HOST:PORT --topic T --manifest FILE
//
// It prints one result line, `... result=ok` and exits 0, or `result=fail: reason` and exits 1.
// The client's threads are not daemons, so the exit is explicit.
//
// The two sides meet in a manifest: one line per record, as Kafka sees it, tab-separated:
//
//   partition  offset  timestamp  key  value  headers
//
// key and value in base64 (`-` for null), headers as comma-separated `name:value` pairs, each
// in base64 (a null value `-`), in order; an empty field for none.
//
// produce: creates the topic with P partitions (Admin createTopics), then a producer (acks=all,
// idempotent, linger 5 ms) sends N records with explicit, unordered timestamps: UTF-8 keys (one
// null, one empty, one holding RocketMQ's separator 0x01, one not UTF-8), values that are text,
// binary, 16 KiB, empty, and one tombstone, and headers: text "h", binary "bin", "rep" twice,
// sometimes a null "nul", a non-ASCII name, and "TAGS" (a RocketMQ system name). It writes what
// each record was acknowledged as to the manifest, for the RocketMQ consumer to check.
//
// consume: reads the manifest a RocketMQ producer wrote (queue id, queue offset, born timestamp,
// KEYS, body, user properties) and checks that a consumer without a group, assigned every
// partition from the beginning, reads each message exactly once as that record: key = KEYS,
// value = body, timestamp = born time (CreateTime), partition = queue id, offset = queue offset,
// headers = the user properties and nothing else (no TAGS, KEYS, UNIQ_KEY...); and that the end
// offsets are the queues' message counts.

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
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

public final class KafkaCross {
    /** The bound of the consumer's poll loop: every record must have arrived within it. */
    private static final Duration CONSUME_WITHIN = Duration.ofSeconds(60);
    /** The bound of each single client call that waits for the broker. */
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);
    /** Property names a RocketMQ message uses for itself, which must never read as headers. */
    private static final List<String> SYSTEM_NAMES = List.of("TAGS", "KEYS", "UNIQ_KEY", "WAIT", "CLUSTER",
            "MSG_REGION", "TRACE_ON", "MIN_OFFSET", "MAX_OFFSET", "KAFKA_RECORD", "PGROUP", "DELAY");

    private KafkaCross() {
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
            String mode = argv.length > 0 ? argv[0] : "";
            String line;
            switch (mode) {
                case "produce":
                    line = produce(required(a, "bootstrap"), required(a, "topic"),
                            Integer.parseInt(required(a, "count")), Integer.parseInt(required(a, "partitions")),
                            Path.of(required(a, "manifest")));
                    break;
                case "consume":
                    line = consume(required(a, "bootstrap"), required(a, "topic"), Path.of(required(a, "manifest")));
                    break;
                default:
                    throw new Failure("unknown mode '" + mode + "' (expected produce or consume)");
            }
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

    /** `--key value` pairs after the mode. */
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

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // ---- the manifest ----

    /** One record as Kafka sees it, a line of the manifest. */
    record Entry(int partition, long offset, long timestamp, byte[] key, byte[] value, List<Header> headers) {
        String where() {
            return partition + ":" + offset;
        }
    }

    static String b64(byte[] b) {
        return b == null ? "-" : Base64.getEncoder().encodeToString(b);
    }

    static byte[] unb64(String s) {
        return s.equals("-") ? null : Base64.getDecoder().decode(s);
    }

    static String line(Entry e) {
        List<String> headers = new ArrayList<>();
        for (Header h : e.headers()) {
            headers.add(b64(utf8(h.key())) + ":" + b64(h.value()));
        }
        return e.partition() + "\t" + e.offset() + "\t" + e.timestamp() + "\t" + b64(e.key()) + "\t"
                + b64(e.value()) + "\t" + String.join(",", headers);
    }

    static Entry parse(String line) throws Failure {
        String[] f = line.split("\t", -1);
        check(f.length == 6, "manifest line with " + f.length + " fields: " + line);
        List<Header> headers = new ArrayList<>();
        if (!f[5].isEmpty()) {
            for (String pair : f[5].split(",", -1)) {
                String[] kv = pair.split(":", -1);
                check(kv.length == 2 && !kv[0].equals("-"), "manifest header " + pair + " in: " + line);
                headers.add(new RecordHeader(new String(unb64(kv[0]), StandardCharsets.UTF_8), unb64(kv[1])));
            }
        }
        return new Entry(Integer.parseInt(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]), unb64(f[3]),
                unb64(f[4]), headers);
    }

    /** Written aside and renamed: the reader never sees half a manifest. */
    static void writeManifest(Path path, List<Entry> entries) throws IOException {
        StringBuilder b = new StringBuilder();
        for (Entry e : entries) {
            b.append(line(e)).append('\n');
        }
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        Files.createDirectories(path.toAbsolutePath().getParent());
        Files.writeString(tmp, b.toString(), StandardCharsets.UTF_8);
        Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    static List<Entry> readManifest(Path path) throws IOException, Failure {
        List<Entry> entries = new ArrayList<>();
        for (String line : Files.readAllLines(path, StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) {
                entries.add(parse(line));
            }
        }
        check(!entries.isEmpty(), "the manifest " + path + " is empty");
        return entries;
    }

    // ---- produce: what record i holds ----

    static byte[] key(int i) {
        switch (i) {
            case 7:
                return null;
            case 11:
                // RocketMQ's property separator: the key cannot be KEYS.
                return utf8("sep\u0001-" + i);
            case 13:
                // Not UTF-8.
                return new byte[] {(byte) 0xff, (byte) 0xfe, (byte) i};
            case 17:
                return new byte[0];
            default:
                return utf8(i % 3 == 0 ? "key-" + i : i % 3 == 1 ? "clé-" + i + " ✓ 値" : "k-" + i);
        }
    }

    /** The one tombstone. */
    static int tombstoneAt(int count) {
        return count / 2 + 1;
    }

    static byte[] value(int i, int count) {
        if (i == tombstoneAt(count)) {
            return null;
        }
        if (i % 100 == 0) {
            return new byte[0];
        }
        if (i % 250 == 9) {
            byte[] big = new byte[16 * 1024];
            new Random(i).nextBytes(big);
            return big;
        }
        if (i % 2 == 1) {
            byte[] bin = new byte[1 + (i * 37) % 2048];
            new Random(i).nextBytes(bin);
            return bin;
        }
        return utf8("value-" + i + " ✓");
    }

    static List<Header> headers(int i) {
        List<Header> h = new ArrayList<>();
        h.add(new RecordHeader("h", utf8("v-" + i)));
        h.add(new RecordHeader("bin", new byte[] {0x00, 0x01, 0x02, (byte) 0xff, (byte) i}));
        h.add(new RecordHeader("rep", utf8("first-" + i)));
        if (i % 10 == 5) {
            h.add(new RecordHeader("nul", (byte[]) null));
        }
        if (i % 50 == 3) {
            h.add(new RecordHeader("TAGS", utf8("not-a-tag")));
        }
        if (i % 7 == 0) {
            h.add(new RecordHeader("ünï-ключ", utf8("✓ " + i)));
        }
        h.add(new RecordHeader("rep", utf8("second-" + i)));
        return h;
    }

    static String produce(String bootstrap, String topic, int count, int partitions, Path manifest)
            throws Exception {
        check(count > tombstoneAt(count) && count > 17, "--count must be over 17");
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        ap.put("client.id", "skiff-cross-admin");
        ap.put("default.api.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all()
                    .get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }

        // An hour back, and out of order: a batch's timestamps are deltas from its first, which
        // may then be negative.
        long base = System.currentTimeMillis() / 1000 * 1000 - 3_600_000L;
        long[] timestamps = new long[count];
        for (int i = 0; i < count; i++) {
            timestamps[i] = base + (i * 7919L) % count * 3;
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "skiff-cross-producer");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        p.put("max.block.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        p.put("request.timeout.ms", "15000");
        p.put("delivery.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        List<Future<RecordMetadata>> sent = new ArrayList<>(count);
        AtomicReference<Exception> firstError = new AtomicReference<>();
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
        int known;
        try {
            known = producer.partitionsFor(topic).size();
            // Stops at the first failure: each further send() could block for max.block.ms.
            for (int i = 0; i < count && firstError.get() == null; i++) {
                // No partition: the default partitioner picks it from the key (sticky for null).
                sent.add(producer.send(
                        new ProducerRecord<>(topic, null, timestamps[i], key(i), value(i, count), headers(i)),
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
        check(known == partitions, "the topic was created with " + partitions + " partitions, metadata has " + known);
        if (firstError.get() != null) {
            throw new Failure("a send failed after " + sent.size() + " of " + count + " were sent: "
                    + firstError.get());
        }
        List<Entry> entries = new ArrayList<>(count);
        Map<String, Integer> positions = new HashMap<>();
        int[] perPartition = new int[partitions];
        for (int i = 0; i < count; i++) {
            RecordMetadata md = sent.get(i).get(1, TimeUnit.SECONDS);
            check(md.hasOffset() && md.offset() >= 0, "record " + i + " acknowledged without an offset");
            check(md.timestamp() == timestamps[i],
                    "record " + i + " acknowledged with timestamp " + md.timestamp() + ", sent " + timestamps[i]);
            Integer other = positions.put(md.partition() + ":" + md.offset(), i);
            check(other == null, "records " + other + " and " + i + " acknowledged at " + md.partition() + ":"
                    + md.offset());
            perPartition[md.partition()]++;
            entries.add(new Entry(md.partition(), md.offset(), timestamps[i], key(i), value(i, count), headers(i)));
        }
        writeManifest(manifest, entries);
        return "produced=" + count + " topic=" + topic + " partitions=" + Arrays.toString(perPartition)
                + " client=kafka-clients-" + AppInfoParser.getVersion() + " result=ok";
    }

    // ---- consume ----

    static String consume(String bootstrap, String topic, Path manifest) throws Exception {
        Map<String, Entry> expected = new LinkedHashMap<>();
        Map<Integer, Integer> perPartition = new TreeMap<>();
        for (Entry e : readManifest(manifest)) {
            check(expected.put(e.where(), e) == null, "the manifest has " + e.where() + " twice");
            perPartition.merge(e.partition(), 1, Integer::sum);
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", "skiff-cross-consumer");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        // No group.id: assign mode, nothing committed.
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("default.api.timeout.ms", String.valueOf(CALL_TIMEOUT.toMillis()));
        long started = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, CALL_TIMEOUT);
            check(infos != null && !infos.isEmpty(), "partitionsFor(" + topic + ") found no partitions");
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo info : infos) {
                tps.add(new TopicPartition(topic, info.partition()));
            }
            for (int partition : perPartition.keySet()) {
                check(tps.contains(new TopicPartition(topic, partition)),
                        "queue " + partition + " holds messages, the topic's partitions are " + tps);
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<String, Boolean> seen = new HashMap<>();
            // Every difference, not just the first: a failure then tells all that is wrong.
            List<String> problems = new ArrayList<>();
            long deadline = System.nanoTime() + CONSUME_WITHIN.toNanos();
            while (seen.size() < expected.size()) {
                check(System.nanoTime() < deadline, "consumed " + seen.size() + " of " + expected.size()
                        + " records within " + CONSUME_WITHIN.toSeconds() + " s");
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    String where = r.partition() + ":" + r.offset();
                    Entry e = expected.get(where);
                    check(e != null, "record at " + where + " was not sent by the RocketMQ producer");
                    check(seen.put(where, true) == null, "record at " + where + " consumed twice");
                    checkRecord(r, e, problems);
                }
            }
            long consumeMs = (System.nanoTime() - started) / 1_000_000;
            check(problems.isEmpty(), problems.size() + " problems in " + expected.size() + " records, the first: "
                    + problems.subList(0, Math.min(10, problems.size())));
            Map<TopicPartition, Long> end = consumer.endOffsets(tps, CALL_TIMEOUT);
            Map<TopicPartition, Long> begin = consumer.beginningOffsets(tps, CALL_TIMEOUT);
            for (TopicPartition tp : tps) {
                long n = perPartition.getOrDefault(tp.partition(), 0);
                check(Long.valueOf(n).equals(end.get(tp)), tp + " end offset " + end.get(tp) + ", the queue holds "
                        + n + " messages");
                check(Long.valueOf(0).equals(begin.get(tp)), tp + " beginning offset " + begin.get(tp));
            }
            return "consumed=" + expected.size() + " topic=" + topic + " partitions=" + perPartition
                    + " consume_ms=" + consumeMs + " client=kafka-clients-" + AppInfoParser.getVersion()
                    + " result=ok";
        }
    }

    static String show(byte[] b) {
        if (b == null) {
            return "null";
        }
        return b.length <= 64 ? "\"" + new String(b, StandardCharsets.UTF_8) + "\" " + Arrays.toString(b)
                : b.length + " bytes starting " + Arrays.toString(Arrays.copyOf(b, 8));
    }

    /** Adds to `problems` how the record differs from the message `e` lists. */
    static void checkRecord(ConsumerRecord<byte[], byte[]> r, Entry e, List<String> problems) {
        String what = "the message at " + e.where();
        if (!Arrays.equals(r.key(), e.key())) {
            problems.add(what + " has key " + show(r.key()) + ", KEYS was " + show(e.key()));
        }
        if (!Arrays.equals(r.value(), e.value())) {
            problems.add(what + " has value " + show(r.value()) + ", the body was " + show(e.value()));
        }
        if (r.timestampType() != TimestampType.CREATE_TIME) {
            problems.add(what + " has timestamp type " + r.timestampType());
        }
        if (r.timestamp() != e.timestamp()) {
            problems.add(what + " has timestamp " + r.timestamp() + ", born " + e.timestamp());
        }
        Map<String, byte[]> got = new TreeMap<>();
        for (Header h : r.headers()) {
            if (SYSTEM_NAMES.contains(h.key())) {
                problems.add(what + " has the system property " + h.key() + " as a header");
            }
            if (got.put(h.key(), h.value()) != null) {
                problems.add(what + " has header " + h.key() + " twice");
            }
        }
        Map<String, byte[]> want = new TreeMap<>();
        for (Header h : e.headers()) {
            want.put(h.key(), h.value());
        }
        if (!got.keySet().equals(want.keySet())) {
            problems.add(what + " has headers " + got.keySet() + ", its user properties were " + want.keySet());
        }
        for (Map.Entry<String, byte[]> w : want.entrySet()) {
            if (got.containsKey(w.getKey()) && !Arrays.equals(got.get(w.getKey()), w.getValue())) {
                problems.add(what + " header " + w.getKey() + " is " + show(got.get(w.getKey()))
                        + ", the property was " + show(w.getValue()));
            }
        }
    }
}
