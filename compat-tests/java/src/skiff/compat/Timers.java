package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.io.BufferedWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * 5.x timer messages. The 5.3.3 client has {@code Message.setDelayTimeSec}, {@code setDelayTimeMs}
 * and {@code setDeliverTimeMs}; 4.9.8 has none of them, and its applications set the same
 * properties with {@code putUserProperty} (which 4.9.8 allows, the names not being reserved
 * there). Both go through one helper, by reflection, so the source compiles against both.
 *
 * "timer-delays": messages due in 2 s (seconds), 3.5 s (milliseconds), 6 s (absolute), already
 * due (absolute, in the past) and with {@code __STARTDELIVERTIME} (which Apache RocketMQ 5.3.3 does
 * not delay); each must be stored in its topic and received never before its time and at most
 * --max-late-ms after it, carrying Java's timer properties (TIMER_OUT_MS, TIMER_ENQUEUE_MS,
 * TIMER_DEQUEUE_MS, and REAL_TOPIC / REAL_QID, which Java leaves in). A delay over timerMaxDelaySec is
 * refused with MESSAGE_ILLEGAL (13) and Java's remark. A timer message cancelled by a delete marker
 * (TIMER_DEL_UNIQKEY = its topic + "+" + its message id, for the same delivery time, as RocketMQ
 * 5's proxy sends it) is never delivered, and neither is the marker.
 *
 * "timer-produce" / "timer-verify", around a broker stop by the harness: messages due 4 to 12 s
 * after the send are recorded to a file; after the restart every one arrives, none stored in its
 * topic before its time (the store timestamp of the delivered message), and with --no-duplicates
 * none twice.
 */
final class Timers {
    private Timers() {
    }

    private static final String EXPECT = "expect_ms";

    /** Sets a timer property the way the client version can: the 5.x setter, else the property. */
    static void timer(Message m, String setter, String property, long value) throws Exception {
        Method method = null;
        try {
            method = Message.class.getMethod(setter, long.class);
        } catch (NoSuchMethodException e) {
            // 4.9.x: no setter.
        }
        if (method != null) {
            method.invoke(m, value);
        } else {
            m.putUserProperty(property, Long.toString(value));
        }
    }

    private static final class Sent {
        final String seq;
        final long expectMs;
        final int queueId;

        Sent(String seq, long expectMs, int queueId) {
            this.seq = seq;
            this.expectMs = expectMs;
            this.queueId = queueId;
        }
    }

    static void delays(Common.Args a) throws Exception {
        String topic = a.topic("timer");
        long maxLate = a.getInt("max-late-ms", 1000);
        DefaultMQProducer p = Common.producer(a, a.group("timer_p"));
        Map<String, Long> receivedAt = new ConcurrentHashMap<>();
        Map<String, MessageExt> received = new ConcurrentHashMap<>();
        Common.Received all = new Common.Received();
        DefaultMQPushConsumer c = null;
        try {
            // Creates the topic, so the consumer's route exists before the timed sends.
            p.send(Common.msg(topic, "T", "warmup", Common.utf8("warmup")));
            c = new DefaultMQPushConsumer(a.group("timer_c"));
            Common.tune(c, a, a.group("timer_c") + "_i");
            c.setConsumeFromWhere(org.apache.rocketmq.common.consumer.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            c.subscribe(topic, "*");
            c.registerMessageListener((org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently) (
                msgs, ctx) -> {
                long now = System.currentTimeMillis();
                for (MessageExt m : msgs) {
                    String seq = m.getUserProperty(Common.SEQ);
                    all.add(m);
                    if (seq != null) {
                        receivedAt.putIfAbsent(seq, now);
                        received.putIfAbsent(seq, m);
                    }
                }
                return org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
            Common.waitUntil("the warmup message", 60000, () -> received.containsKey("warmup"));

            List<Sent> sent = new ArrayList<>();
            String[][] kinds = {
                {"sec", "setDelayTimeSec", "TIMER_DELAY_SEC", "2000"},
                {"ms", "setDelayTimeMs", "TIMER_DELAY_MS", "3500"},
                {"deliver", "setDeliverTimeMs", "TIMER_DELIVER_MS", "6000"},
                {"past", "setDeliverTimeMs", "TIMER_DELIVER_MS", "-60000"},
            };
            for (String[] k : kinds) {
                Message m = Common.msg(topic, "T", k[0], Common.utf8("timer " + k[0]));
                long now = System.currentTimeMillis();
                long offset = Long.parseLong(k[3]);
                long expect = Math.max(now + offset, now);
                if (k[0].equals("sec")) {
                    timer(m, k[1], k[2], offset / 1000);
                } else if (k[0].equals("ms")) {
                    timer(m, k[1], k[2], offset);
                } else {
                    timer(m, k[1], k[2], now + offset);
                }
                m.putUserProperty(EXPECT, Long.toString(expect));
                SendResult r = p.send(m);
                check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", k[0], r.getSendStatus());
                sent.add(new Sent(k[0], expect, r.getMessageQueue().getQueueId()));
            }
            // The Aliyun ONS property: no timer for Apache RocketMQ 5.3.3, delivered at once.
            Message ons = Common.msg(topic, "T", "ons", Common.utf8("ons"));
            long onsAt = System.currentTimeMillis();
            ons.putUserProperty("__STARTDELIVERTIME", Long.toString(onsAt + 5000));
            SendResult onsSent = p.send(ons);
            sent.add(new Sent("ons", onsAt, onsSent.getMessageQueue().getQueueId()));

            // Cancelled: a timer message, then a delete marker naming it for the same time.
            long cancelAt = System.currentTimeMillis() + 4000;
            Message victim = Common.msg(topic, "T", "cancelled", Common.utf8("cancelled"));
            timer(victim, "setDeliverTimeMs", "TIMER_DELIVER_MS", cancelAt);
            SendResult victimSent = p.send(victim);
            check(victimSent.getSendStatus() == SendStatus.SEND_OK, "send cancelled: %s", victimSent);
            Message marker = Common.msg(topic, "T", "marker", Common.utf8("marker"));
            timer(marker, "setDeliverTimeMs", "TIMER_DELIVER_MS", cancelAt);
            // A reserved name for 5.x's putUserProperty: set as the proxy sets it.
            MessageAccessor.putProperty(marker, "TIMER_DEL_UNIQKEY", topic + "+" + victimSent.getMsgId());
            SendResult markerSent = p.send(marker);
            check(markerSent.getSendStatus() == SendStatus.SEND_OK, "send marker: %s", markerSent);

            // Over timerMaxDelaySec (3 days): refused by the broker.
            Message far = Common.msg(topic, "T", "far", Common.utf8("far"));
            timer(far, "setDelayTimeSec", "TIMER_DELAY_SEC", 3L * 24 * 3600 + 60);
            try {
                SendResult r = p.send(far);
                throw new Common.Fail("a delay over timerMaxDelaySec was accepted: " + r);
            } catch (MQBrokerException e) {
                check(e.getResponseCode() == 13, "over timerMaxDelaySec: code %d (%s), expected 13",
                    e.getResponseCode(), e.getErrorMessage());
                check(e.getErrorMessage().startsWith(
                    "timer message illegal, the delay time should not be bigger than the max delay 259200000ms"),
                    "over timerMaxDelaySec: remark %s", e.getErrorMessage());
            }

            Common.waitUntil("every timer message", 30000, () -> {
                for (Sent s : sent) {
                    if (!receivedAt.containsKey(s.seq)) {
                        return false;
                    }
                }
                return true;
            });
            long settle = cancelAt + maxLate + 1000 - System.currentTimeMillis();
            if (settle > 0) {
                Thread.sleep(settle);
            }
            check(!receivedAt.containsKey("cancelled"), "a message cancelled by TIMER_DEL_UNIQKEY was delivered");
            check(!receivedAt.containsKey("marker"), "the TIMER_DEL_UNIQKEY marker itself was delivered");
            for (Sent s : sent) {
                MessageExt m = received.get(s.seq);
                long at = receivedAt.get(s.seq);
                long stored = m.getStoreTimestamp();
                log("%s: due %d, stored %+d ms, received %+d ms, queue %d", s.seq, s.expectMs, stored - s.expectMs,
                    at - s.expectMs, m.getQueueId());
                check(stored >= s.expectMs, "%s stored %d ms early", s.seq, s.expectMs - stored);
                check(at - s.expectMs <= maxLate, "%s received %d ms late (limit %d)", s.seq, at - s.expectMs,
                    maxLate);
                check(m.getQueueId() == s.queueId, "%s arrived on queue %d, sent to %d", s.seq, m.getQueueId(),
                    s.queueId);
                check(m.getTopic().equals(topic), "%s arrived on topic %s", s.seq, m.getTopic());
                boolean timed = !s.seq.equals("ons") && !s.seq.equals("past");
                if (timed) {
                    // Java keeps them in the delivered message (cleared after the properties
                    // were encoded).
                    check(topic.equals(m.getProperty("REAL_TOPIC"))
                        && Integer.toString(s.queueId).equals(m.getProperty("REAL_QID")),
                        "%s: REAL_TOPIC/REAL_QID %s", s.seq, m.getProperties());
                    for (String key : new String[] {"TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS"}) {
                        check(m.getProperty(key) != null, "%s has no %s: %s", s.seq, key, m.getProperties());
                    }
                    long out = Long.parseLong(m.getProperty("TIMER_OUT_MS"));
                    check(out <= stored && Math.abs(s.expectMs - out) <= 1100, "%s: TIMER_OUT_MS %d for due %d",
                        s.seq, out, s.expectMs);
                } else {
                    check(m.getProperty("TIMER_OUT_MS") == null, "%s went through the timer: %s", s.seq,
                        m.getProperties());
                }
                check(all.count(s.seq) == 1, "%s received %d times", s.seq, all.count(s.seq));
            }
        } finally {
            if (c != null) {
                c.shutdown();
            }
            p.shutdown();
        }
    }

    static void produce(Common.Args a) throws Exception {
        String topic = a.topic("timer_restart");
        int count = a.getInt("count", 40);
        DefaultMQProducer p = Common.producer(a, a.group("timer_rp"));
        try (BufferedWriter out = Files.newBufferedWriter(Paths.get(a.get("out")), StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
            for (int i = 0; i < count; i++) {
                String seq = "t-" + i;
                Message m = Common.msg(topic, "T", seq, Common.utf8("timer " + seq));
                long now = System.currentTimeMillis();
                long delayMs = 4000 + (i * 8000L) / count;
                long expect;
                if (i % 2 == 0) {
                    expect = now + delayMs;
                    timer(m, "setDeliverTimeMs", "TIMER_DELIVER_MS", expect);
                } else {
                    expect = now + delayMs;
                    timer(m, "setDelayTimeMs", "TIMER_DELAY_MS", delayMs);
                }
                SendResult r = p.send(m);
                check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", seq, r.getSendStatus());
                out.write(seq + " " + expect + "\n");
            }
        } finally {
            p.shutdown();
        }
        log("%d timer messages sent", count);
    }

    static void verify(Common.Args a) throws Exception {
        String topic = a.topic("timer_restart");
        boolean noDuplicates = Boolean.parseBoolean(a.get("no-duplicates", "false"));
        Map<String, Long> expect = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Paths.get(a.get("in")), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) {
                String[] f = line.split(" ");
                expect.put(f[0], Long.parseLong(f[1]));
            }
        }
        check(!expect.isEmpty(), "nothing recorded in %s", a.get("in"));
        long latest = expect.values().stream().mapToLong(Long::longValue).max().getAsLong();
        long wait = Math.max(0, latest - System.currentTimeMillis()) + 30000;
        Common.Received got = Common.readAllFromStart(a, a.group("timer_rv"), topic, expect.keySet(), wait);
        int duplicates = 0;
        for (Map.Entry<String, Long> e : expect.entrySet()) {
            for (MessageExt m : got.bySeq.get(e.getKey())) {
                check(m.getStoreTimestamp() >= e.getValue(), "%s stored %d ms early", e.getKey(),
                    e.getValue() - m.getStoreTimestamp());
            }
            duplicates += got.count(e.getKey()) - 1;
        }
        log("all %d timer messages delivered after the restart, none early, %d duplicates", expect.size(),
            duplicates);
        check(!noDuplicates || duplicates == 0, "duplicates after a graceful restart: %s",
            got.duplicated(expect.keySet()));
    }
}
