package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Delay levels and retries. The broker runs with short levels
 * (messageDelayLevel = "1s 2s 3s 1s 1s ..."), passed to both Apache and Skiff by the harness; the
 * level delays are given with --levels so that the checks know them.
 *
 * <ul>
 *   <li>{@code delay-levels}: messages at levels 1, 2, 3 and 99 (clamped to the highest) reach a
 *       push consumer no earlier than their delay and less than a second late, on the queue the
 *       send result named, with REAL_TOPIC / REAL_QID as the broker stores them.</li>
 *   <li>{@code retry-dlq}: a consumer that always answers RECONSUME_LATER, with maxReconsumeTimes
 *       2, gets the message three times (reconsume times 0, 1, 2, the same msgId and properties,
 *       spaced by levels 3 and 4), then the message is in %DLQ%group with ORIGIN_MESSAGE_ID,
 *       RETRY_TOPIC and reconsume times 3.</li>
 *   <li>{@code orderly-dlq}: an orderly consumer that always suspends, with maxReconsumeTimes 2,
 *       gets the message three times, then it is in %DLQ%group.</li>
 *   <li>{@code delay-produce} / {@code delay-verify}: delayed messages sent before a broker restart
 *       or kill -9 (or before the Java broker hands its store to Skiff) are all delivered after it,
 *       none early; with --once true, none twice.</li>
 * </ul>
 */
final class DelayRetry {
    private DelayRetry() {
    }

    /** Milliseconds of each level, from --levels "1000,2000,...". */
    private static long[] levels(Common.Args a) {
        String[] parts = a.get("levels").split(",");
        long[] out = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            out[i] = Long.parseLong(parts[i].trim());
        }
        return out;
    }

    private static long delayOf(long[] levels, int level) {
        return levels[Math.min(level, levels.length) - 1];
    }

    static void delayLevels(Common.Args a) throws Exception {
        long[] levels = levels(a);
        String topic = a.topic("delay");
        DefaultMQProducer p = Common.producer(a, a.group("delay_p"));
        Map<String, Long> receivedAt = new ConcurrentHashMap<>();
        Map<String, MessageExt> received = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(a.group("delay_c"));
        Common.tune(c, a, "delay_c");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                String seq = m.getUserProperty(Common.SEQ);
                receivedAt.putIfAbsent(seq, now);
                received.putIfAbsent(seq, m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        Map<String, Integer> levelOf = new TreeMap<>();
        Map<String, SendResult> sent = new TreeMap<>();
        try {
            c.start();
            // Route and rebalance first, so that the consumer waits for the messages, not the
            // other way round.
            SendResult warm = p.send(Common.msg(topic, "warm", "warm", Common.utf8("warm")));
            check(warm.getSendStatus() == SendStatus.SEND_OK, "warm-up send %s", warm);
            Common.waitUntil("the warm-up message", 60000, () -> received.containsKey("warm"));
            int[] asked = {1, 2, 3, 99, 1, 3};
            for (int i = 0; i < asked.length; i++) {
                String seq = "d" + i + "-level" + asked[i];
                Message m = Common.msg(topic, "TagD", seq, Common.utf8(seq));
                m.setDelayTimeLevel(asked[i]);
                SendResult r = p.send(m);
                check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", seq, r);
                levelOf.put(seq, asked[i]);
                sent.put(seq, r);
            }
            Common.waitUntil("every delayed message", 60000, () -> received.keySet().containsAll(levelOf.keySet()));
            for (Map.Entry<String, Integer> e : levelOf.entrySet()) {
                String seq = e.getKey();
                long delay = delayOf(levels, e.getValue());
                MessageExt m = received.get(seq);
                SendResult r = sent.get(seq);
                long stored = m.getStoreTimestamp() - m.getBornTimestamp();
                long got = receivedAt.get(seq) - m.getBornTimestamp();
                log("%s: delay %d ms, re-put after %d ms, received after %d ms, properties %s", seq, delay,
                    stored, got, new TreeMap<>(m.getProperties()));
                check(stored >= delay, "%s re-put %d ms after it was born, before its delay of %d ms", seq, stored,
                    delay);
                check(stored < delay + 1000, "%s re-put %d ms late", seq, stored - delay);
                check(got < delay + 2000, "%s received %d ms late", seq, got - delay);
                check(m.getTopic().equals(topic), "%s arrived on %s", seq, m.getTopic());
                check(m.getQueueId() == r.getMessageQueue().getQueueId(), "%s arrived on queue %d, sent to %d", seq,
                    m.getQueueId(), r.getMessageQueue().getQueueId());
                check(m.getMsgId().equals(r.getMsgId()), "%s msgId %s, sent as %s", seq, m.getMsgId(), r.getMsgId());
                check(topic.equals(m.getProperty("REAL_TOPIC")), "%s REAL_TOPIC %s", seq, m.getProperty("REAL_TOPIC"));
                check(String.valueOf(m.getQueueId()).equals(m.getProperty("REAL_QID")), "%s REAL_QID %s", seq,
                    m.getProperty("REAL_QID"));
                int stored_level = Math.min(e.getValue(), levels.length);
                check(String.valueOf(stored_level).equals(m.getProperty("DELAY")), "%s DELAY %s, expected %d", seq,
                    m.getProperty("DELAY"), stored_level);
                check("TagD".equals(m.getTags()), "%s tags %s", seq, m.getTags());
                // The stored properties go out as they were: the producer's WAIT stays.
                check("true".equals(m.getProperty("WAIT")), "%s WAIT %s", seq, m.getProperty("WAIT"));
            }
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    /** One delivery to a failing consumer. */
    private static final class Delivery {
        final long at;
        final MessageExt m;

        Delivery(long at, MessageExt m) {
            this.at = at;
            this.m = m;
        }
    }

    static void retryDlq(Common.Args a) throws Exception {
        long[] levels = levels(a);
        String topic = a.topic("retry");
        String group = a.group("retry_c");
        DefaultMQProducer p = Common.producer(a, a.group("retry_p"));
        List<Delivery> deliveries = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        Common.tune(c, a, "retry_c");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setMaxReconsumeTimes(2);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                deliveries.add(new Delivery(System.currentTimeMillis(), m));
            }
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        });
        try {
            c.start();
            Message m = Common.msg(topic, "TagR", "retry-1", Common.utf8("retry me"));
            m.setKeys("retry-key");
            m.putUserProperty("custom", "value with spaces");
            SendResult r = p.send(m);
            check(r.getSendStatus() == SendStatus.SEND_OK, "send: %s", r);
            Common.waitUntil("three deliveries", 60000, () -> deliveries.size() >= 3);
            for (int i = 0; i < deliveries.size(); i++) {
                MessageExt d = deliveries.get(i).m;
                log("delivery %d after %d ms: topic %s reconsumeTimes %d msgId %s properties %s", i,
                    deliveries.get(i).at - deliveries.get(0).at, d.getTopic(), d.getReconsumeTimes(), d.getMsgId(),
                    new TreeMap<>(d.getProperties()));
            }
            for (int i = 0; i < 3; i++) {
                MessageExt d = deliveries.get(i).m;
                check(d.getReconsumeTimes() == i, "delivery %d has reconsumeTimes %d", i, d.getReconsumeTimes());
                check(d.getTopic().equals(topic), "delivery %d on topic %s", i, d.getTopic());
                check(d.getMsgId().equals(r.getMsgId()), "delivery %d msgId %s, sent as %s", i, d.getMsgId(),
                    r.getMsgId());
                check("retry me".equals(new String(d.getBody(), StandardCharsets.UTF_8)), "delivery %d body", i);
                check("TagR".equals(d.getTags()) && "retry-key".equals(d.getKeys())
                    && "value with spaces".equals(d.getUserProperty("custom")), "delivery %d lost properties: %s", i,
                    d.getProperties());
                if (i > 0) {
                    check(topic.equals(d.getProperty("RETRY_TOPIC")), "delivery %d RETRY_TOPIC %s", i,
                        d.getProperty("RETRY_TOPIC"));
                    check(("%RETRY%" + group).equals(d.getProperty("REAL_TOPIC")), "delivery %d REAL_TOPIC %s", i,
                        d.getProperty("REAL_TOPIC"));
                    check("false".equals(d.getProperty("WAIT")), "delivery %d WAIT %s", i, d.getProperty("WAIT"));
                    check(String.valueOf(3 + i - 1).equals(d.getProperty("DELAY")), "delivery %d DELAY %s", i,
                        d.getProperty("DELAY"));
                    check(r.getOffsetMsgId().equals(d.getProperty("ORIGIN_MESSAGE_ID")),
                        "delivery %d ORIGIN_MESSAGE_ID %s, the first offset id is %s", i,
                        d.getProperty("ORIGIN_MESSAGE_ID"), r.getOffsetMsgId());
                    long waited = deliveries.get(i).at - deliveries.get(i - 1).at;
                    long delay = delayOf(levels, 3 + i - 1);
                    check(waited >= delay, "delivery %d came %d ms after the previous one, before level %d (%d ms)", i,
                        waited, 3 + i - 1, delay);
                }
            }
            String dlq = "%DLQ%" + group;
            Common.Received dead = Common.readAllFromStart(a, a.group("retry_dlq_reader"), dlq,
                Collections.singletonList("retry-1"), 60000);
            MessageExt d = dead.bySeq.get("retry-1").get(0);
            log("in %s: reconsumeTimes %d properties %s", dlq, d.getReconsumeTimes(), new TreeMap<>(d.getProperties()));
            check(dead.count("retry-1") == 1, "%d copies in the DLQ", dead.count("retry-1"));
            check(d.getReconsumeTimes() == 3, "DLQ reconsumeTimes %d", d.getReconsumeTimes());
            check(r.getOffsetMsgId().equals(d.getProperty("ORIGIN_MESSAGE_ID")), "DLQ ORIGIN_MESSAGE_ID %s",
                d.getProperty("ORIGIN_MESSAGE_ID"));
            check(topic.equals(d.getProperty("RETRY_TOPIC")), "DLQ RETRY_TOPIC %s", d.getProperty("RETRY_TOPIC"));
            check(d.getMsgId().equals(r.getMsgId()), "DLQ msgId %s", d.getMsgId());
            check("0".equals(d.getProperty("DELAY")), "DLQ DELAY %s", d.getProperty("DELAY"));
            check("retry-key".equals(d.getKeys()) && "value with spaces".equals(d.getUserProperty("custom")),
                "DLQ lost properties: %s", d.getProperties());
            Thread.sleep(delayOf(levels, 5) + 500);
            check(deliveries.size() == 3, "%d deliveries, expected 3", deliveries.size());
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    static void orderlyDlq(Common.Args a) throws Exception {
        String topic = a.topic("orderly");
        String group = a.group("orderly_c");
        DefaultMQProducer p = Common.producer(a, a.group("orderly_p"));
        // The client counts reconsume times on the message object itself: record them as seen.
        List<Integer> deliveries = Collections.synchronizedList(new ArrayList<>());
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        Common.tune(c, a, "orderly_c");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setMaxReconsumeTimes(2);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            ctx.setSuspendCurrentQueueTimeMillis(100);
            for (MessageExt m : msgs) {
                deliveries.add(m.getReconsumeTimes());
            }
            return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
        });
        try {
            c.start();
            Message m = Common.msg(topic, "TagO", "orderly-1", Common.utf8("in order"));
            SendResult r = p.send(m);
            check(r.getSendStatus() == SendStatus.SEND_OK, "send: %s", r);
            Common.waitUntil("three deliveries", 60000, () -> deliveries.size() >= 3);
            String dlq = "%DLQ%" + group;
            Common.Received dead = Common.readAllFromStart(a, a.group("orderly_dlq_reader"), dlq,
                Collections.singletonList("orderly-1"), 60000);
            MessageExt d = dead.bySeq.get("orderly-1").get(0);
            log("in %s: reconsumeTimes %d properties %s", dlq, d.getReconsumeTimes(), new TreeMap<>(d.getProperties()));
            check(dead.count("orderly-1") == 1, "%d copies in the DLQ", dead.count("orderly-1"));
            check(d.getMsgId().equals(r.getMsgId()), "DLQ msgId %s, sent as %s", d.getMsgId(), r.getMsgId());
            // The orderly consumer sends the copy itself, naming the client's msgId as the origin.
            check(r.getMsgId().equals(d.getProperty("ORIGIN_MESSAGE_ID")), "DLQ ORIGIN_MESSAGE_ID %s",
                d.getProperty("ORIGIN_MESSAGE_ID"));
            check(topic.equals(d.getProperty("RETRY_TOPIC")), "DLQ RETRY_TOPIC %s", d.getProperty("RETRY_TOPIC"));
            // The 5.x client sends reconsume times + 1 (3), past the limit; the 4.9 client sends 2,
            // and the broker takes it to the dead letters because the group holds queue locks.
            check(String.valueOf(d.getReconsumeTimes()).equals(d.getProperty("RECONSUME_TIME"))
                && (d.getReconsumeTimes() == 2 || d.getReconsumeTimes() == 3), "DLQ reconsumeTimes %d, RECONSUME_TIME %s",
                d.getReconsumeTimes(), d.getProperty("RECONSUME_TIME"));
            check("2".equals(d.getProperty("MAX_RECONSUME_TIMES")), "DLQ MAX_RECONSUME_TIMES %s",
                d.getProperty("MAX_RECONSUME_TIMES"));
            check("-1".equals(d.getProperty("DELAY")), "DLQ DELAY %s", d.getProperty("DELAY"));
            check(deliveries.subList(0, 3).equals(java.util.Arrays.asList(0, 1, 2)), "deliveries with reconsume times %s",
                deliveries);
            Thread.sleep(1000);
            check(deliveries.size() == 3, "%d deliveries, expected 3", deliveries.size());
        } finally {
            c.shutdown();
            p.shutdown();
        }
    }

    static void delayProduce(Common.Args a) throws Exception {
        String topic = a.topic("delay_restart") + a.get("batch", "");
        DefaultMQProducer p = Common.producer(a, a.group("delay_restart_p"));
        List<String> lines = new ArrayList<>();
        try {
            int count = a.getInt("count", 20);
            int fixed = a.getInt("level", 0);
            for (int i = 0; i < count; i++) {
                int level = fixed > 0 ? fixed : 2 + i % 2;
                String seq = "r" + i + "-level" + level;
                Message m = Common.msg(topic, "TagK", seq, Common.utf8(seq));
                m.setDelayTimeLevel(level);
                SendResult r = p.send(m);
                check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", seq, r);
                lines.add(seq + " " + level);
            }
        } finally {
            p.shutdown();
        }
        Files.write(Paths.get(a.get("out")), lines, StandardCharsets.UTF_8);
        log("sent %d delayed messages", lines.size());
    }

    static void delayVerify(Common.Args a) throws Exception {
        long[] levels = levels(a);
        String topic = a.topic("delay_restart") + a.get("batch", "");
        Map<String, Integer> levelOf = new TreeMap<>();
        for (String line : Files.readAllLines(Paths.get(a.get("in")), StandardCharsets.UTF_8)) {
            String[] parts = line.trim().split(" ");
            levelOf.put(parts[0], Integer.parseInt(parts[1]));
        }
        Common.Received got = Common.readAllFromStart(a, a.group("delay_restart_reader_" + a.get("round")), topic,
            levelOf.keySet(), 60000);
        int twice = 0;
        for (Map.Entry<String, Integer> e : levelOf.entrySet()) {
            long delay = delayOf(levels, e.getValue());
            for (MessageExt m : got.bySeq.get(e.getKey())) {
                long stored = m.getStoreTimestamp() - m.getBornTimestamp();
                check(stored >= delay, "%s delivered %d ms after it was born, before its delay of %d ms", e.getKey(),
                    stored, delay);
            }
            twice += got.count(e.getKey()) > 1 ? 1 : 0;
        }
        check(twice == 0 || !"true".equals(a.get("once", "false")), "%d messages delivered twice", twice);
        log("all %d delayed messages delivered after the restart (%d twice, as at-least-once allows)",
            levelOf.size(), twice);
    }
}
