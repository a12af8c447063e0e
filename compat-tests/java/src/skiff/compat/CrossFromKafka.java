package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Cross-protocol, Kafka to RocketMQ (tests/kafka_cross.rs, Skiff only): the records the Kafka
 * Java producer wrote to {@code --topic} (listed in {@code --manifest}, see {@link CrossManifest})
 * are pulled with {@code *} from every queue, offset 0 to the queue's maximum, and each must be
 * there exactly once as docs/kafka.md maps it: as many queues as partitions, queue id = partition,
 * queue offset = Kafka offset, body = value (empty for a tombstone), born timestamp = record
 * timestamp, KEYS = the key when it is property text, each text header a user property (the first
 * of a repeated name; not a system name such as TAGS), a UNIQ_KEY, and the exact key, tombstone
 * flag and headers in KAFKA_RECORD.
 *
 * <p>A DefaultMQPullConsumer, not a push or lite pull consumer: the 4.9.8 client reads an empty
 * body as null, and its ProcessQueue.putMessage, which those two go through, takes the length of
 * every body; the NullPointerException drops the whole pulled batch (5.3.3 checks for null).
 * Kafka records with empty or null values thus make a 4.9.8 push consumer skip messages.
 */
final class CrossFromKafka {
    /** {@code KAFKA_RECORD}'s version byte and flags (model/src/keyed.rs). */
    private static final int FORMAT = 1;
    private static final int HAS_KEY = 0x1;
    private static final int NULL_VALUE = 0x2;

    private CrossFromKafka() {
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.get("topic");
        int partitions = a.getInt("partitions", 4);
        Map<String, CrossManifest.Entry> expected = new LinkedHashMap<>();
        for (CrossManifest.Entry e : CrossManifest.read(Path.of(a.get("manifest")))) {
            check(expected.put(e.where(), e) == null, "the manifest has %s twice", e.where());
        }
        Map<Integer, Integer> perQueue = new TreeMap<>();
        for (CrossManifest.Entry e : expected.values()) {
            perQueue.merge(e.partition, 1, Integer::sum);
        }
        Map<String, MessageExt> got = new LinkedHashMap<>();
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(a.group("cross_from_kafka"));
        Common.tune(c, a, "cross_from_kafka");
        c.start();
        try {
            Set<MessageQueue> mqs = c.fetchSubscribeMessageQueues(topic);
            check(mqs.size() == partitions, "%s has %d queues, created with %d partitions: %s", topic, mqs.size(),
                partitions, mqs);
            for (MessageQueue mq : mqs) {
                int records = perQueue.getOrDefault(mq.getQueueId(), 0);
                long min = c.minOffset(mq);
                long max = c.maxOffset(mq);
                check(min == 0 && max == records, "queue %d has offsets %d to %d, the partition %d records",
                    mq.getQueueId(), min, max, records);
                readQueue(c, mq, max, got);
            }
        } finally {
            c.shutdown();
        }
        List<String> problems = new ArrayList<>();
        Set<String> unexpected = new HashSet<>(got.keySet());
        unexpected.removeAll(expected.keySet());
        if (!unexpected.isEmpty()) {
            problems.add("messages the Kafka producer did not send, at " + unexpected);
        }
        for (CrossManifest.Entry e : expected.values()) {
            MessageExt m = got.get(e.where());
            if (m == null) {
                problems.add("the record at " + e.where() + " was not read");
            } else {
                compare(topic, e, m, problems);
            }
        }
        check(problems.isEmpty(), "%d problems in %d records, the first: %s", problems.size(), expected.size(),
            problems.subList(0, Math.min(10, problems.size())));
        log("all %d records arrived once, as mapped", expected.size());
    }

    /** Pulls `mq` with {@code *} from offset 0 to `max`, each offset once and in order. */
    private static void readQueue(DefaultMQPullConsumer c, MessageQueue mq, long max, Map<String, MessageExt> into)
        throws Exception {
        long next = 0;
        long deadline = System.currentTimeMillis() + 60000;
        while (next < max) {
            check(System.currentTimeMillis() < deadline, "queue %d read to offset %d of %d within 60 s",
                mq.getQueueId(), next, max);
            PullResult r = c.pull(mq, "*", next, 32);
            if (r.getPullStatus() != PullStatus.FOUND) {
                check(r.getPullStatus() == PullStatus.NO_NEW_MSG || r.getPullStatus() == PullStatus.NO_MATCHED_MSG,
                    "pull of queue %d at %d: %s", mq.getQueueId(), next, r);
                continue;
            }
            for (MessageExt m : r.getMsgFoundList()) {
                check(m.getQueueId() == mq.getQueueId() && m.getQueueOffset() == next,
                    "pull of queue %d expected offset %d, got %d:%d", mq.getQueueId(), next, m.getQueueId(),
                    m.getQueueOffset());
                into.put(m.getQueueId() + ":" + m.getQueueOffset(), m);
                next++;
            }
            check(r.getNextBeginOffset() == next, "pull of queue %d: next offset %d after %d", mq.getQueueId(),
                r.getNextBeginOffset(), next);
        }
    }

    private static void compare(String topic, CrossManifest.Entry e, MessageExt m, List<String> problems) {
        String what = "the record at " + e.where();
        if (!topic.equals(m.getTopic())) {
            problems.add(what + " came from topic " + m.getTopic());
        }
        byte[] body = m.getBody() == null ? new byte[0] : m.getBody();
        byte[] value = e.value == null ? new byte[0] : e.value;
        if (!Arrays.equals(body, value)) {
            problems.add(what + " has body " + CrossManifest.show(body) + ", value " + CrossManifest.show(e.value));
        }
        if (m.getBornTimestamp() != e.timestamp) {
            problems.add(what + " has born timestamp " + m.getBornTimestamp() + ", record timestamp " + e.timestamp);
        }
        String keys = CrossManifest.propertyText(e.key);
        if (!Objects.equals(m.getKeys(), keys)) {
            problems.add(what + " has KEYS " + m.getKeys() + ", key " + CrossManifest.show(e.key) + " so expected "
                + keys);
        }
        // The readable mirror: each header whose name and value are property text, whose name is no
        // system property's and was not used before, as a user property; the others not at all.
        Set<String> used = new HashSet<>();
        for (CrossManifest.Header h : e.headers) {
            boolean first = used.add(h.name);
            String text = CrossManifest.propertyText(h.value);
            boolean mirrored = first && text != null && CrossManifest.propertyText(Common.utf8(h.name)) != null
                && !MessageConst.STRING_HASH_SET.contains(h.name) && !h.name.equals("KAFKA_RECORD");
            String property = m.getProperty(h.name);
            if (mirrored && !text.equals(property)) {
                problems.add(what + " has property " + h.name + "=" + property + ", header value " + text);
            } else if (first && !mirrored && property != null) {
                problems.add(what + " has property " + h.name + "=" + property + " from header value "
                    + CrossManifest.show(h.value) + ", which is not to be mirrored");
            }
        }
        if (m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == null) {
            problems.add(what + " has no UNIQ_KEY");
        }
        String exact = m.getProperty("KAFKA_RECORD");
        if (exact == null) {
            problems.add(what + " has no KAFKA_RECORD property");
        } else {
            String diff = exactDiff(exact, e);
            if (diff != null) {
                problems.add(what + ": KAFKA_RECORD " + diff);
            }
        }
    }

    /**
     * Null when KAFKA_RECORD holds exactly the record's key, tombstone flag and headers, else what
     * differs. Its layout (docs/kafka.md): base64 of a version byte (1), a flags byte (0x1 a key
     * follows, 0x2 the value is null), the key, a 32-bit header count, then each header's name and
     * value, every one as a 32-bit length (-1 for a null value) and its bytes.
     */
    private static String exactDiff(String exact, CrossManifest.Entry e) {
        ByteBuffer b;
        try {
            b = ByteBuffer.wrap(Base64.getDecoder().decode(exact));
        } catch (IllegalArgumentException x) {
            return "is not base64: " + x.getMessage();
        }
        try {
            int format = b.get();
            if (format != FORMAT) {
                return "has version " + format;
            }
            int flags = b.get();
            byte[] key = (flags & HAS_KEY) != 0 ? bytes(b) : null;
            if (!Arrays.equals(key, e.key)) {
                return "has key " + CrossManifest.show(key) + ", sent " + CrossManifest.show(e.key);
            }
            boolean tombstone = (flags & NULL_VALUE) != 0;
            if (tombstone != (e.value == null)) {
                return "has tombstone flag " + tombstone + ", sent value " + CrossManifest.show(e.value);
            }
            int count = b.getInt();
            if (count != e.headers.size()) {
                return "has " + count + " headers, sent " + e.headers.size();
            }
            for (int i = 0; i < count; i++) {
                byte[] name = bytes(b);
                byte[] value = bytes(b);
                CrossManifest.Header h = e.headers.get(i);
                if (name == null || !h.name.equals(new String(name, StandardCharsets.UTF_8))
                    || !Arrays.equals(value, h.value)) {
                    return "has header " + i + " " + CrossManifest.show(name) + "=" + CrossManifest.show(value)
                        + ", sent " + h.name + "=" + CrossManifest.show(h.value);
                }
            }
            if (b.hasRemaining()) {
                return "has " + b.remaining() + " bytes after the headers";
            }
        } catch (BufferUnderflowException x) {
            return "ends early";
        }
        return null;
    }

    /** A 32-bit length and that many bytes; -1 is null. */
    private static byte[] bytes(ByteBuffer b) {
        int len = b.getInt();
        if (len < 0) {
            return null;
        }
        if (len > b.remaining()) {
            throw new BufferUnderflowException();
        }
        byte[] out = new byte[len];
        b.get(out);
        return out;
    }
}
