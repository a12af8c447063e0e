package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Scenario 1: every send mode (sync, async, oneway, batch, to a chosen queue) with tags, keys,
 * user properties and bodies from 1 B to ~4 MiB; then everything is read back from offset 0 and
 * compared field by field with what was sent and with the send results.
 */
final class Producer {
    private Producer() {
    }

    /** What one message was sent as, and (unless oneway) what the broker answered. */
    private static final class Sent {
        final Message msg;
        SendResult result;
        /** Index inside a batch (-1 outside): its ids and offsets are the n-th of the result. */
        int batchIndex = -1;

        Sent(Message msg) {
            this.msg = msg;
        }
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("producer");
        String broker = a.get("broker");
        DefaultMQProducer p = Common.producer(a, a.group("producer"));
        Map<String, Sent> sent = new LinkedHashMap<>();
        try {
            emptyBodyIsRefusedByClient(p, topic);
            sendSync(p, topic, sent);
            sendAsync(p, topic, sent);
            sendOneway(p, topic, sent);
            sendBatch(p, topic, sent);
            sendToQueue(p, topic, sent);
        } finally {
            p.shutdown();
        }
        for (Sent s : sent.values()) {
            if (s.result != null) {
                checkResult(s, broker);
            }
        }
        log("sent %d messages, reading them back", sent.size());
        Common.Received got = Common.readAllFromStart(a, a.group("producer_read"), topic, sent.keySet(), 60000);
        List<String> dups = got.duplicated(sent.keySet());
        check(dups.isEmpty(), "messages delivered more than once: %s", dups);
        Map<String, String> batchIds = new java.util.HashMap<>();
        java.util.Set<String> otherIds = new java.util.HashSet<>();
        for (Map.Entry<String, Sent> e : sent.entrySet()) {
            MessageExt m = got.bySeq.get(e.getKey()).get(0);
            compare(e.getKey(), e.getValue(), m, broker, batchIds);
            if (e.getValue().batchIndex < 0) {
                otherIds.add(m.getMsgId());
            }
        }
        checkBatchIds(batchIds, otherIds);
        check(got.foreign.isEmpty(), "unexpected messages without %s: %s", Common.SEQ, got.foreign.keySet());
    }

    /** The Java client refuses an empty body itself (Validators), before any traffic. */
    private static void emptyBodyIsRefusedByClient(DefaultMQProducer p, String topic) throws Exception {
        try {
            p.send(new Message(topic, new byte[0]));
            throw new Common.Fail("a 0 B body was accepted by the client; expected MQClientException");
        } catch (MQClientException expected) {
            log("0 B body refused by the client as expected: %s", expected.getErrorMessage());
        }
    }

    private static Message decorated(String topic, String seq, String tags, byte[] body) {
        Message m = Common.msg(topic, tags, seq, body);
        m.setKeys(Arrays.asList("key-" + seq, "other-" + seq));
        m.putUserProperty("p1", "v1-" + seq);
        m.putUserProperty("unicode", "ümlaut ✓ 値");
        m.putUserProperty("spaces", "a b  c");
        return m;
    }

    private static byte[] compressible(int size) {
        byte[] b = new byte[size];
        byte[] pattern = Common.utf8("skiff compat compressible body 0123456789 ");
        for (int i = 0; i < size; i++) {
            b[i] = pattern[i % pattern.length];
        }
        return b;
    }

    private static byte[] random(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static void sendSync(DefaultMQProducer p, String topic, Map<String, Sent> sent) throws Exception {
        Map<String, byte[]> bodies = new LinkedHashMap<>();
        bodies.put("sync-1B", new byte[] {0x42});
        bodies.put("sync-utf8", Common.utf8("héllo wörld ✓"));
        bodies.put("sync-4KiB", compressible(4096));
        bodies.put("sync-4KiB+1", compressible(4097));
        bodies.put("sync-4KiB+1-random", random(4097, 1));
        bodies.put("sync-1MiB-random", random(1 << 20, 2));
        bodies.put("sync-4MiB-compressible", compressible((4 << 20) - 1024));
        for (Map.Entry<String, byte[]> e : bodies.entrySet()) {
            Sent s = new Sent(decorated(topic, e.getKey(), "TagSync", e.getValue()));
            s.result = p.send(s.msg);
            sent.put(e.getKey(), s);
        }
        // A message without tags, keys or extra properties.
        Sent bare = new Sent(Common.msg(topic, null, "sync-bare", Common.utf8("bare")));
        bare.result = p.send(bare.msg);
        sent.put("sync-bare", bare);
    }

    private static void sendAsync(DefaultMQProducer p, String topic, Map<String, Sent> sent) throws Exception {
        int n = 20;
        CountDownLatch done = new CountDownLatch(n);
        AtomicReference<Throwable> error = new AtomicReference<>();
        for (int i = 0; i < n; i++) {
            String seq = "async-" + i;
            Sent s = new Sent(decorated(topic, seq, "TagAsync", Common.utf8("async body " + i)));
            sent.put(seq, s);
            p.send(s.msg, new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    s.result = r;
                    done.countDown();
                }

                @Override
                public void onException(Throwable t) {
                    error.compareAndSet(null, t);
                    done.countDown();
                }
            });
        }
        check(done.await(30, TimeUnit.SECONDS), "async sends did not complete in 30 s");
        check(error.get() == null, "async send failed: %s", error.get());
    }

    private static void sendOneway(DefaultMQProducer p, String topic, Map<String, Sent> sent) throws Exception {
        for (int i = 0; i < 10; i++) {
            String seq = "oneway-" + i;
            Sent s = new Sent(decorated(topic, seq, "TagOneway", Common.utf8("oneway body " + i)));
            p.sendOneway(s.msg);
            sent.put(seq, s);
        }
    }

    private static void sendBatch(DefaultMQProducer p, String topic, Map<String, Sent> sent) throws Exception {
        List<Message> batch = new ArrayList<>();
        List<Sent> entries = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            String seq = "batch-" + i;
            Sent s = new Sent(decorated(topic, seq, "TagBatch", Common.utf8("batch body " + i)));
            s.batchIndex = i;
            batch.add(s.msg);
            entries.add(s);
            sent.put(seq, s);
        }
        SendResult r = p.send(batch);
        for (Sent s : entries) {
            s.result = r;
        }
    }

    private static void sendToQueue(DefaultMQProducer p, String topic, Map<String, Sent> sent) throws Exception {
        List<MessageQueue> mqs = p.fetchPublishMessageQueues(topic);
        check(!mqs.isEmpty(), "no publish queues for %s", topic);
        MessageQueue last = mqs.get(mqs.size() - 1);
        for (int i = 0; i < 3; i++) {
            String seq = "queue-" + i;
            Sent s = new Sent(decorated(topic, seq, "TagQueue", Common.utf8("to queue " + last.getQueueId())));
            s.result = p.send(s.msg, last);
            check(s.result.getMessageQueue().getQueueId() == last.getQueueId(),
                "send to queue %d landed on %s", last.getQueueId(), s.result.getMessageQueue());
            sent.put(seq, s);
        }
    }

    /**
     * Batch members read back with the ids the send result listed, one each. Or, with the 5.x
     * client, all with one id: that client also gives the batch itself a UNIQ_KEY and the Java
     * broker appends the batch's properties to each member's, so the batch's key wins. Either way
     * no other message may carry these ids.
     */
    private static void checkBatchIds(Map<String, String> gotToWant, java.util.Set<String> otherIds) {
        boolean own = gotToWant.size() == 10 && gotToWant.entrySet().stream().allMatch(e -> e.getKey().equals(e.getValue()));
        boolean shared = gotToWant.size() == 1 && !gotToWant.containsValue(gotToWant.keySet().iterator().next());
        check(own || shared, "batch members read back with ids %s (got -> sent)", gotToWant);
        for (String id : gotToWant.keySet()) {
            check(!otherIds.contains(id), "batch id %s also carried by another message", id);
        }
    }

    private static String nth(String commaList, int n) {
        String[] parts = commaList.split(",");
        check(n < parts.length, "id list %s has no entry %d", commaList, n);
        return parts[n];
    }

    private static void checkResult(Sent s, String broker) throws Exception {
        SendResult r = s.result;
        String seq = s.msg.getUserProperty(Common.SEQ);
        check(r.getSendStatus() == SendStatus.SEND_OK, "%s: status %s", seq, r.getSendStatus());
        check(r.getMsgId() != null && !r.getMsgId().isEmpty(), "%s: no msgId in %s", seq, r);
        check(r.getOffsetMsgId() != null, "%s: no offsetMsgId in %s", seq, r);
        check(r.getMessageQueue() != null && r.getMessageQueue().getQueueId() >= 0, "%s: bad queue in %s", seq, r);
        check(r.getQueueOffset() >= 0, "%s: negative queueOffset in %s", seq, r);
        MessageId id = MessageDecoder.decodeMessageId(nth(r.getOffsetMsgId(), Math.max(0, s.batchIndex)));
        String addr = id.getAddress().toString().replaceFirst("^.*/", "");
        check(addr.equals(broker), "%s: offsetMsgId %s names %s, broker is %s", seq, r.getOffsetMsgId(), addr, broker);
    }

    private static void compare(String seq, Sent s, MessageExt m, String broker, Map<String, String> batchIds)
        throws Exception {
        Message want = s.msg;
        check(m.getTopic().equals(want.getTopic()), "%s: topic %s", seq, m.getTopic());
        check(Arrays.equals(m.getBody(), want.getBody()), "%s: body differs (got %d bytes, sent %d)", seq,
            m.getBody() == null ? -1 : m.getBody().length, want.getBody().length);
        check(java.util.Objects.equals(m.getTags(), want.getTags()), "%s: tags %s, sent %s", seq, m.getTags(),
            want.getTags());
        check(java.util.Objects.equals(m.getKeys(), want.getKeys()), "%s: keys %s, sent %s", seq, m.getKeys(),
            want.getKeys());
        for (String k : new String[] {"p1", "unicode", "spaces"}) {
            check(java.util.Objects.equals(m.getUserProperty(k), want.getUserProperty(k)),
                "%s: property %s is %s, sent %s", seq, k, m.getUserProperty(k), want.getUserProperty(k));
        }
        String storeHost = m.getStoreHost().toString().replaceFirst("^.*/", "");
        check(storeHost.equals(broker), "%s: storeHost %s, broker is %s", seq, storeHost, broker);
        if (s.result == null) {
            return;
        }
        SendResult r = s.result;
        check(m.getQueueId() == r.getMessageQueue().getQueueId(), "%s: consumed from queue %d, sent to %d", seq,
            m.getQueueId(), r.getMessageQueue().getQueueId());
        int index = Math.max(0, s.batchIndex);
        check(m.getQueueOffset() == r.getQueueOffset() + index, "%s: queueOffset %d, send result said %d",
            seq, m.getQueueOffset(), r.getQueueOffset() + index);
        String wantId = nth(r.getMsgId(), index);
        if (s.batchIndex >= 0) {
            // Checked for the whole batch in checkBatchIds.
            batchIds.put(m.getMsgId(), wantId);
        } else {
            check(m.getMsgId().equals(wantId), "%s: msgId %s, send result said %s", seq, m.getMsgId(), r.getMsgId());
        }
        String offsetId = ((MessageClientExt) m).getOffsetMsgId();
        check(offsetId.equals(nth(r.getOffsetMsgId(), index)), "%s: offsetMsgId %s, send result said %s",
            seq, offsetId, r.getOffsetMsgId());
        long physical = MessageDecoder.decodeMessageId(offsetId).getOffset();
        check(physical == m.getCommitLogOffset(), "%s: offsetMsgId offset %d, commitLogOffset %d", seq, physical,
            m.getCommitLogOffset());
    }
}
