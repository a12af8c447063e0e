package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Store compatibility, in two phases around a broker swap on one data directory that the harness
 * performs (Java broker to Skiff or back, after a clean stop or kill -9):
 *
 * "store-write" fills two topics (one created with 4 queues, one auto-created) with messages of
 * every shape (tags, several keys, unicode properties, bodies from 1 B to 60 KiB, compressed ones,
 * a batch), lets a consumer group consume the first part and commit, sends more, checks that
 * everything is stored where the send results said, and writes (a) a dump of every stored message
 * as this broker serves it ({@link Common#describe}) and (b) the group's committed offsets.
 *
 * "store-read", against the other broker on the same directory: the dump must be identical line
 * for line; keys, uniq ids and offset ids must be found through the index; the group must have
 * the same committed offsets and resume exactly there; and new messages must follow the old ones.
 */
final class StoreCompat {
    private static final int QUEUES_A = 4;
    /** Sampling of the index lookups in store-read (every n-th message). */
    private static final int QUERY_EVERY = 7;

    private StoreCompat() {
    }

    /** What one message was sent as and where the broker said it put it. */
    private static final class Sent {
        final Message msg;
        final String seq;
        String topic;
        int queueId;
        long queueOffset;
        /** Not checked for batch members: the 5.x client gives the batch one UNIQ_KEY. */
        String uniqId;

        Sent(String seq, Message msg) {
            this.seq = seq;
            this.msg = msg;
        }
    }

    static String topicA(Common.Args a) {
        return a.topic("store_a");
    }

    static String topicB(Common.Args a) {
        return a.topic("store_b");
    }

    static String group(Common.Args a) {
        return a.group("store_g");
    }

    static Message message(String topic, String seq, int i) {
        byte[] body;
        if (i % 5 == 0) {
            // Incompressible and large: these fill the 1 MiB CommitLog segments.
            body = new byte[8 * 1024 + new Random(i).nextInt(52 * 1024)];
            new Random(seq.hashCode()).nextBytes(body);
        } else {
            StringBuilder s = new StringBuilder("body of " + seq + " ");
            int len = 1 + (i * 397) % 6000;
            while (s.length() < len) {
                s.append((char) ('a' + s.length() % 26));
            }
            body = Common.utf8(s.substring(0, len));
        }
        String tags = i % 3 == 0 ? null : (i % 3 == 1 ? "TagA" : "TagB");
        Message m = new Message(topic, tags, body);
        m.setKeys(Arrays.asList("k-" + seq, "shared-" + (i % 7)));
        m.putUserProperty(Common.SEQ, seq);
        m.putUserProperty("prop", "värde ✓ " + i + " with spaces");
        return m;
    }

    static void write(Common.Args a) throws Exception {
        String topicA = topicA(a);
        String topicB = topicB(a);
        createTopic(a, topicA, QUEUES_A);
        DefaultMQProducer p = Common.producer(a, a.group("store_p"));
        Map<String, Sent> sent = new LinkedHashMap<>();
        Map<Integer, Long> committed = new TreeMap<>();
        List<String> firstA = new ArrayList<>();
        try {
            String brokerName = p.fetchPublishMessageQueues(topicA).get(0).getBrokerName();
            send(p, topicA, "a1", 240, sent, brokerName);
            send(p, topicB, "b1", 60, sent, brokerName);
            sendBatch(p, topicB, "b1batch", sent, new MessageQueue(topicB, brokerName, 1));
            for (Sent s : sent.values()) {
                if (s.topic.equals(topicA)) {
                    committed.merge(s.queueId, s.queueOffset + 1, Math::max);
                    firstA.add(s.seq);
                }
            }
            consumeAndCommit(a, topicA, firstA, committed, brokerName);
            send(p, topicA, "a2", 80, sent, brokerName);
            send(p, topicB, "b2", 20, sent, brokerName);
            fillToFileEnd(p, topicB, a.getInt("cq-entries", 60), sent, brokerName);
        } finally {
            p.shutdown();
        }
        Map<String, MessageExt> stored = new HashMap<>();
        List<String> dump = dump(a, "w", new String[] {topicA, topicB}, stored);
        for (Sent s : sent.values()) {
            compare(s, stored.get(s.seq));
        }
        check(stored.size() == sent.size(), "%d messages stored, %d sent", stored.size(), sent.size());
        Files.write(Paths.get(a.get("dump")), dump, StandardCharsets.UTF_8);
        List<String> offsets = new ArrayList<>();
        committed.forEach((q, o) -> offsets.add(topicA + "@" + group(a) + " " + q + " " + o));
        Files.write(Paths.get(a.get("offsets")), offsets, StandardCharsets.UTF_8);
        log("%d messages stored and dumped; group %s committed %s on %s", stored.size(), group(a), committed, topicA);
    }

    private static void createTopic(Common.Args a, String topic, int queues) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(a.namesrv());
        admin.setInstanceName("store_admin");
        admin.start();
        try {
            admin.createAndUpdateTopicConfig(a.get("broker"), new TopicConfig(topic, queues, queues, 6));
            Common.waitUntil("the route of " + topic, 30000, () -> {
                try {
                    var route = admin.examineTopicRouteInfo(topic);
                    return route.getQueueDatas().size() == 1 && route.getQueueDatas().get(0).getWriteQueueNums() == queues;
                } catch (Exception e) {
                    return false;
                }
            });
        } finally {
            admin.shutdown();
        }
    }

    /** Sends n messages, most to the queue the client picks, every 4th to a chosen queue. */
    private static void send(DefaultMQProducer p, String topic, String phase, int n, Map<String, Sent> sent,
        String brokerName) throws Exception {
        for (int i = 0; i < n; i++) {
            String seq = phase + "-" + i;
            Sent s = new Sent(seq, message(topic, seq, i));
            SendResult r = i % 4 == 3 ? p.send(s.msg, new MessageQueue(topic, brokerName, i % 3)) : p.send(s.msg);
            check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", seq, r.getSendStatus());
            s.topic = topic;
            s.queueId = r.getMessageQueue().getQueueId();
            s.queueOffset = r.getQueueOffset();
            s.uniqId = r.getMsgId();
            sent.put(seq, s);
        }
    }

    /**
     * Sends to queue 0 of `topic` until it ends exactly at the end of a ConsumeQueue file of
     * `entries` entries: the reader must then start the next file itself.
     */
    private static void fillToFileEnd(DefaultMQProducer p, String topic, int entries, Map<String, Sent> sent,
        String brokerName) throws Exception {
        MessageQueue q0 = new MessageQueue(topic, brokerName, 0);
        long next = sent.values().stream().filter(s -> s.topic.equals(topic) && s.queueId == 0)
            .mapToLong(s -> s.queueOffset + 1).max().orElse(0);
        for (int i = 0; next % entries != 0 || next == 0; i++, next++) {
            String seq = "fill-" + i;
            Sent s = new Sent(seq, message(topic, seq, i));
            SendResult r = p.send(s.msg, q0);
            check(r.getSendStatus() == SendStatus.SEND_OK && r.getQueueOffset() == next, "send %s: %s at %d, expected %d",
                seq, r.getSendStatus(), r.getQueueOffset(), next);
            s.topic = topic;
            s.queueId = 0;
            s.queueOffset = next;
            s.uniqId = r.getMsgId();
            sent.put(seq, s);
        }
    }

    private static void sendBatch(DefaultMQProducer p, String topic, String phase, Map<String, Sent> sent,
        MessageQueue mq) throws Exception {
        List<Message> batch = new ArrayList<>();
        List<Sent> members = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            String seq = phase + "-" + i;
            Sent s = new Sent(seq, message(topic, seq, i * 5 + 1));
            members.add(s);
            batch.add(s.msg);
        }
        SendResult r = p.send(batch, mq);
        check(r.getSendStatus() == SendStatus.SEND_OK, "batch: %s", r.getSendStatus());
        for (int i = 0; i < members.size(); i++) {
            Sent s = members.get(i);
            s.topic = topic;
            s.queueId = mq.getQueueId();
            s.queueOffset = r.getQueueOffset() + i;
            sent.put(s.seq, s);
        }
    }

    /**
     * A push consumer of the group consumes `seqs` (everything sent to the topic so far), records
     * offsets up to `committed` and shuts down, which commits them; then the broker must answer
     * those offsets.
     */
    private static void consumeAndCommit(Common.Args a, String topic, List<String> seqs, Map<Integer, Long> committed,
        String brokerName) throws Exception {
        Common.Received got = new Common.Received();
        DefaultMQPushConsumer c = Common.pushConsumer(a, group(a), "store_g1", topic, "*", got);
        c.start();
        try {
            Common.waitUntil("the group to consume " + seqs.size(), 60000, () -> got.hasAll(seqs));
            var store = c.getDefaultMQPushConsumerImpl().getOffsetStore();
            Common.waitUntil("the consumer to record offsets " + committed, 30000, () -> committed.entrySet().stream()
                .allMatch(e -> store.readOffset(new MessageQueue(topic, brokerName, e.getKey()),
                    ReadOffsetType.READ_FROM_MEMORY) == e.getValue()));
        } finally {
            c.shutdown();
        }
        Map<Integer, Long> onBroker = committedOffsets(a, topic, brokerName, committed);
        check(onBroker.equals(committed), "the broker has offsets %s for %s, committed %s", onBroker, group(a),
            committed);
    }

    /**
     * The group's offsets as the broker answers them (QUERY_CONSUMER_OFFSET), polled until they
     * equal `expect` or 30 s pass.
     */
    private static Map<Integer, Long> committedOffsets(Common.Args a, String topic, String brokerName,
        Map<Integer, Long> expect) throws Exception {
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(group(a));
        Common.tune(c, a, "store_offsets");
        c.start();
        Map<Integer, Long> got = new TreeMap<>();
        try {
            long deadline = System.currentTimeMillis() + 30000;
            do {
                got.clear();
                for (int q : expect.keySet()) {
                    try {
                        got.put(q, c.fetchConsumeOffset(new MessageQueue(topic, brokerName, q), true));
                    } catch (Exception e) {
                        got.put(q, -2L);
                    }
                }
                if (got.equals(expect)) {
                    break;
                }
                Thread.sleep(100);
            } while (System.currentTimeMillis() < deadline);
        } finally {
            c.shutdown();
        }
        return got;
    }

    /**
     * Reads every queue of `topics` from offset 0 to its max (dense offsets, or fail) and returns
     * one {@link Common#describe} line per message, by topic, queue and offset; fills `bySeq`.
     */
    static List<String> dump(Common.Args a, String role, String[] topics, Map<String, MessageExt> bySeq)
        throws Exception {
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(a.group("store_dump_" + role));
        Common.tune(c, a, "store_dump_" + role);
        c.start();
        List<String> lines = new ArrayList<>();
        try {
            for (String topic : topics) {
                List<MessageQueue> mqs = new ArrayList<>();
                Common.waitUntil("the route of " + topic, 30000, () -> {
                    try {
                        mqs.addAll(c.fetchSubscribeMessageQueues(topic));
                        return !mqs.isEmpty();
                    } catch (Exception e) {
                        return false;
                    }
                });
                mqs.sort(Comparator.comparingInt(MessageQueue::getQueueId));
                for (MessageQueue mq : mqs) {
                    check(c.minOffset(mq) == 0, "%s: min offset %d", mq, c.minOffset(mq));
                    long max = c.maxOffset(mq);
                    lines.add("QUEUE " + topic + " " + mq.getQueueId() + " max " + max);
                    long next = 0;
                    while (next < max) {
                        PullResult r = c.pull(mq, "*", next, 32);
                        check(r.getPullStatus() == PullStatus.FOUND, "%s: pull at %d (max %d): %s", mq, next, max, r);
                        for (MessageExt m : r.getMsgFoundList()) {
                            check(m.getQueueOffset() == next, "%s: expected offset %d, got %d", mq, next,
                                m.getQueueOffset());
                            lines.add(Common.describe(m));
                            check(bySeq.put(m.getUserProperty(Common.SEQ), m) == null, "%s stored twice",
                                m.getUserProperty(Common.SEQ));
                            next++;
                        }
                    }
                }
            }
        } finally {
            c.shutdown();
        }
        return lines;
    }

    private static void compare(Sent s, MessageExt m) {
        check(m != null, "%s was acknowledged but is not stored", s.seq);
        check(m.getTopic().equals(s.topic) && m.getQueueId() == s.queueId && m.getQueueOffset() == s.queueOffset,
            "%s acknowledged at %s/%d/%d, stored at %s/%d/%d", s.seq, s.topic, s.queueId, s.queueOffset, m.getTopic(),
            m.getQueueId(), m.getQueueOffset());
        check(s.uniqId == null || s.uniqId.equals(m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)),
            "%s: uniq id %s, acknowledged as %s", s.seq, m.getMsgId(), s.uniqId);
        check(Arrays.equals(s.msg.getBody(), m.getBody()), "%s: body differs", s.seq);
        check(java.util.Objects.equals(s.msg.getTags(), m.getTags()), "%s: tags %s, sent %s", s.seq, m.getTags(),
            s.msg.getTags());
        check(s.msg.getKeys().equals(m.getKeys()), "%s: keys %s, sent %s", s.seq, m.getKeys(), s.msg.getKeys());
        check(s.msg.getUserProperty("prop").equals(m.getUserProperty("prop")), "%s: property %s, sent %s", s.seq,
            m.getUserProperty("prop"), s.msg.getUserProperty("prop"));
    }

    static void read(Common.Args a) throws Exception {
        String topicA = topicA(a);
        String topicB = topicB(a);
        List<String> written = Files.readAllLines(Paths.get(a.get("dump")), StandardCharsets.UTF_8);
        Map<String, MessageExt> stored = new HashMap<>();
        List<String> served = dump(a, "r", new String[] {topicA, topicB}, stored);
        List<String> diffs = new ArrayList<>();
        for (int i = 0; i < Math.max(written.size(), served.size()) && diffs.size() < 6; i++) {
            String w = i < written.size() ? written.get(i) : "(nothing)";
            String s = i < served.size() ? served.get(i) : "(nothing)";
            if (!w.equals(s)) {
                diffs.add("line " + (i + 1) + "\n  written: " + w + "\n  served:  " + s);
            }
        }
        check(diffs.isEmpty(), "the messages are not served as the other broker stored them (%d lines written, %d "
            + "served):\n%s", written.size(), served.size(), String.join("\n", diffs));
        log("all %d stored messages served unchanged", stored.size());

        DefaultMQProducer p = Common.producer(a, a.group("store_read_p"));
        try {
            String brokerName = p.fetchPublishMessageQueues(topicA).get(0).getBrokerName();
            queryIndex(a, p, stored);
            resumeGroup(a, topicA, stored, brokerName);
            appendAfter(a, p, new String[] {topicA, topicB}, stored, brokerName);
        } finally {
            p.shutdown();
        }
    }

    /**
     * Every QUERY_EVERY-th message is found by offset id (a CommitLog read), and by key and by
     * uniq id (the index files), unchanged. With --index lossy (after a kill -9 of the writer)
     * index lookups may find nothing: the Java broker itself drops index files newer than its
     * checkpoint's index timestamp when it recovers, and does not rebuild them for messages its
     * ConsumeQueues already hold. Whatever is found must still be the right message.
     */
    private static void queryIndex(Common.Args a, DefaultMQProducer p, Map<String, MessageExt> stored)
        throws Exception {
        boolean lossy = a.get("index", "strict").equals("lossy");
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(a.namesrv());
        admin.setInstanceName("store_query");
        admin.start();
        int n = 0;
        int asked = 0;
        int byKeyFound = 0;
        int byUniqFound = 0;
        int byUniqAsked = 0;
        try {
            for (MessageExt m : new TreeMap<>(stored).values()) {
                if (n++ % QUERY_EVERY != 0) {
                    continue;
                }
                asked++;
                String seq = m.getUserProperty(Common.SEQ);
                String want = Common.describe(m);
                MessageExt byOffsetId = admin.viewMessage(m.getTopic(), Common.offsetMsgId(m));
                check(want.equals(Common.describe(byOffsetId)), "offset id %s of %s found %s", Common.offsetMsgId(m), seq,
                    Common.describe(byOffsetId));
                List<MessageExt> byKey = indexLookup(lossy, () -> admin.queryMessage(m.getTopic(), "k-" + seq, 32, 0,
                    Long.MAX_VALUE).getMessageList());
                if (!byKey.isEmpty()) {
                    check(byKey.size() == 1, "key k-%s: %d messages", seq, byKey.size());
                    check(want.equals(Common.describe(byKey.get(0))), "key k-%s found\n  %s\nnot\n  %s", seq,
                        Common.describe(byKey.get(0)), want);
                    byKeyFound++;
                }
                // The members of a batch share the batch's uniq id (see Sent.uniqId).
                if (!seq.contains("batch")) {
                    byUniqAsked++;
                    String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
                    List<MessageExt> byUniq = indexLookup(lossy, () -> {
                        MessageExt found = p.getDefaultMQProducerImpl().queryMessageByUniqKey(m.getTopic(), uniq);
                        check(found != null || lossy, "uniq id %s of %s: not found", uniq, seq);
                        return found == null ? List.of() : List.of(found);
                    });
                    if (!byUniq.isEmpty()) {
                        check(want.equals(Common.describe(byUniq.get(0))), "uniq id %s of %s found %s", uniq, seq,
                            Common.describe(byUniq.get(0)));
                        byUniqFound++;
                    }
                }
            }
        } finally {
            admin.shutdown();
        }
        log("%d messages found by offset id, %d of %d by key, %d of %d by uniq id%s", asked, byKeyFound, asked,
            byUniqFound, byUniqAsked, lossy ? " (lookups may miss after a kill -9)" : "");
    }

    private interface Lookup {
        List<MessageExt> find() throws Exception;
    }

    /** What an index lookup found; nothing (NO_MESSAGE) is a failure unless `lossy`. */
    private static List<MessageExt> indexLookup(boolean lossy, Lookup lookup) throws Exception {
        try {
            return lookup.find();
        } catch (MQClientException e) {
            if (lossy && e.getResponseCode() == 208) {
                return List.of();
            }
            throw e;
        }
    }

    /**
     * The group committed on the other broker: the same offsets are answered here, and the group
     * resumes exactly there (the second phase of the topic, nothing of the first).
     */
    private static void resumeGroup(Common.Args a, String topicA, Map<String, MessageExt> stored, String brokerName)
        throws Exception {
        Map<Integer, Long> committed = new TreeMap<>();
        for (String line : Files.readAllLines(Paths.get(a.get("offsets")), StandardCharsets.UTF_8)) {
            String[] f = line.split(" ");
            committed.put(Integer.parseInt(f[1]), Long.parseLong(f[2]));
        }
        Map<Integer, Long> onBroker = committedOffsets(a, topicA, brokerName, committed);
        check(onBroker.equals(committed), "group %s has offsets %s here, committed %s on the other broker", group(a),
            onBroker, committed);
        List<String> after = new ArrayList<>();
        List<String> before = new ArrayList<>();
        for (MessageExt m : stored.values()) {
            if (m.getTopic().equals(topicA)) {
                (m.getQueueOffset() >= committed.get(m.getQueueId()) ? after : before)
                    .add(m.getUserProperty(Common.SEQ));
            }
        }
        check(!after.isEmpty() && !before.isEmpty(), "nothing to resume: %d before, %d after", before.size(),
            after.size());
        Common.Received got = new Common.Received();
        DefaultMQPushConsumer c = Common.pushConsumer(a, group(a), "store_g2", topicA, "*", got);
        c.start();
        try {
            Common.waitUntil("the group to resume with " + after.size() + " messages", 60000, () -> got.hasAll(after));
        } catch (Common.Fail f) {
            throw new Common.Fail(f.getMessage() + "; missing " + got.missing(after));
        } finally {
            c.shutdown();
        }
        List<String> replayed = new ArrayList<>();
        for (String s : before) {
            if (got.count(s) > 0) {
                replayed.add(s);
            }
        }
        check(replayed.isEmpty(), "the group received %d messages before its committed offsets: %s", replayed.size(),
            replayed.subList(0, Math.min(10, replayed.size())));
        log("group %s resumed at %s: %d messages, none before", group(a), committed, after.size());
    }

    /**
     * One new message per queue of `topics` lands right after the stored ones and reads back (the
     * broker may index it a moment after acknowledging it).
     */
    private static void appendAfter(Common.Args a, DefaultMQProducer p, String[] topics,
        Map<String, MessageExt> stored, String brokerName) throws Exception {
        Map<MessageQueue, Long> max = new java.util.LinkedHashMap<>();
        for (String topic : topics) {
            for (MessageQueue mq : p.fetchPublishMessageQueues(topic)) {
                max.put(new MessageQueue(topic, brokerName, mq.getQueueId()), 0L);
            }
        }
        for (MessageExt m : stored.values()) {
            max.merge(new MessageQueue(m.getTopic(), brokerName, m.getQueueId()), m.getQueueOffset() + 1, Math::max);
        }
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(a.group("store_append_c"));
        Common.tune(c, a, "store_append_c");
        c.start();
        try {
            for (Map.Entry<MessageQueue, Long> e : max.entrySet()) {
                MessageQueue mq = e.getKey();
                String seq = "appended-" + mq.getTopic() + "-" + mq.getQueueId();
                SendResult r = p.send(message(mq.getTopic(), seq, mq.getQueueId() * 5), mq);
                check(r.getSendStatus() == SendStatus.SEND_OK && r.getQueueOffset() == e.getValue(),
                    "%s: %s at offset %d, expected %d", seq, r.getSendStatus(), r.getQueueOffset(), e.getValue());
                Object[] last = new Object[1];
                long sentAt = System.currentTimeMillis();
                try {
                    Common.waitUntil(seq + " to read back at " + mq + " offset " + e.getValue(), 10000, () -> {
                        try {
                            PullResult got = c.pull(mq, "*", e.getValue(), 1);
                            last[0] = got;
                            return got.getPullStatus() == PullStatus.FOUND
                                && seq.equals(got.getMsgFoundList().get(0).getUserProperty(Common.SEQ));
                        } catch (Exception ex) {
                            last[0] = ex;
                            return false;
                        }
                    });
                } catch (Common.Fail f) {
                    throw new Common.Fail(f.getMessage() + "; the last pull answered " + last[0]);
                }
                if (System.currentTimeMillis() - sentAt > 100) {
                    log("%s read back only after %d ms", seq, System.currentTimeMillis() - sentAt);
                }
            }
        } finally {
            c.shutdown();
        }
        log("new messages follow the stored ones on all %d queues", max.size());
    }
}
