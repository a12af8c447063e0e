package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Cross-protocol, RocketMQ to Kafka (tests/kafka_cross.rs, Skiff only): the producer sends
 * {@code --count} messages to {@code --topic} (a new one, created by the send), one by one and the
 * last 20 as a batch, with keys (none, one, two, non-ASCII), tags (none or one), user properties
 * and text, binary and compressible 8 KiB bodies. A lite pull consumer reads them back, to learn
 * where each was stored and when it was born, and {@code --manifest} (see {@link CrossManifest})
 * lists each as the record a Kafka consumer must then read: partition = queue id, offset = queue
 * offset, timestamp = born time, key = KEYS, value = body, headers = the user properties.
 */
final class CrossToKafka {
    /** The last messages, sent as one batch. */
    private static final int BATCH = 20;

    private CrossToKafka() {
    }

    /** A message sent and the user properties put on it. */
    private static final class Sent {
        final Message msg;
        final Map<String, String> properties = new LinkedHashMap<>();
        SendResult result;
        /** Index inside the batch (-1 outside): its offset is the n-th from the result's. */
        int batchIndex = -1;

        Sent(Message msg) {
            this.msg = msg;
        }

        void put(String name, String value) {
            msg.putUserProperty(name, value);
            properties.put(name, value);
        }
    }

    private static byte[] body(int i) {
        if (i % 250 == 6) {
            // Over the producers' compressMsgBodyOverHowmuch (4 KiB): sent zlib-compressed.
            StringBuilder b = new StringBuilder();
            while (b.length() < 8192) {
                b.append("compressible body ").append(i).append(' ');
            }
            return Common.utf8(b.toString());
        }
        if (i % 2 == 0) {
            byte[] bin = new byte[1 + (i * 13) % 3000];
            new Random(i).nextBytes(bin);
            return bin;
        }
        return Common.utf8("body-" + i + " ✓");
    }

    private static Sent message(String topic, int i) {
        String tags = i % 3 == 0 ? null : i % 3 == 1 ? "TagA" : "TagB";
        Sent s = new Sent(new Message(topic, tags, body(i)));
        if (i % 4 == 1) {
            s.msg.setKeys("key-" + i);
        } else if (i % 4 == 2) {
            s.msg.setKeys(Arrays.asList("a-" + i, "b-" + i));
        } else if (i % 4 == 3) {
            s.msg.setKeys("ключ-" + i + "-✓");
        }
        s.put(Common.SEQ, Integer.toString(i));
        s.put("p1", "v1-" + i);
        if (i % 2 == 0) {
            s.put("unicode", "ümlaut ✓ 値 " + i);
        }
        if (i % 3 == 0) {
            s.put("spaces", "a b  c");
        }
        return s;
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.get("topic");
        int count = a.getInt("count", 1000);
        check(count > BATCH, "--count must be over %d", BATCH);
        Map<String, Sent> sent = new LinkedHashMap<>();
        DefaultMQProducer p = Common.producer(a, a.group("cross_to_kafka"));
        try {
            for (int i = 0; i < count - BATCH; i++) {
                Sent s = message(topic, i);
                s.result = p.send(s.msg);
                check(s.result.getSendStatus() == SendStatus.SEND_OK, "message %d: %s", i, s.result);
                sent.put(Integer.toString(i), s);
            }
            List<Message> batch = new ArrayList<>();
            List<Sent> members = new ArrayList<>();
            for (int i = count - BATCH; i < count; i++) {
                Sent s = message(topic, i);
                s.batchIndex = members.size();
                batch.add(s.msg);
                members.add(s);
                sent.put(Integer.toString(i), s);
            }
            SendResult r = p.send(batch);
            check(r.getSendStatus() == SendStatus.SEND_OK, "the batch: %s", r);
            for (Sent s : members) {
                s.result = r;
            }
        } finally {
            p.shutdown();
        }
        log("sent %d messages to %s, reading them back", sent.size(), topic);
        Common.Received got = Common.readAllFromStart(a, a.group("cross_to_kafka_read"), topic, sent.keySet(), 60000);
        List<String> dups = got.duplicated(sent.keySet());
        check(dups.isEmpty(), "messages delivered more than once: %s", dups);
        check(got.foreign.isEmpty(), "unexpected messages without %s: %s", Common.SEQ, got.foreign.keySet());
        List<CrossManifest.Entry> entries = new ArrayList<>();
        for (Map.Entry<String, Sent> e : sent.entrySet()) {
            String seq = e.getKey();
            Sent s = e.getValue();
            MessageExt m = got.bySeq.get(seq).get(0);
            int index = Math.max(0, s.batchIndex);
            check(m.getQueueId() == s.result.getMessageQueue().getQueueId()
                && m.getQueueOffset() == s.result.getQueueOffset() + index,
                "message %s read at %d:%d, sent to %d:%d", seq, m.getQueueId(), m.getQueueOffset(),
                s.result.getMessageQueue().getQueueId(), s.result.getQueueOffset() + index);
            check(Arrays.equals(m.getBody(), s.msg.getBody()), "message %s read back with another body", seq);
            check(Objects.equals(m.getKeys(), s.msg.getKeys()), "message %s read back with KEYS %s, sent %s", seq,
                m.getKeys(), s.msg.getKeys());
            check(Objects.equals(m.getTags(), s.msg.getTags()), "message %s read back with TAGS %s, sent %s", seq,
                m.getTags(), s.msg.getTags());
            List<CrossManifest.Header> headers = new ArrayList<>();
            for (Map.Entry<String, String> prop : s.properties.entrySet()) {
                check(prop.getValue().equals(m.getUserProperty(prop.getKey())), "message %s read back with %s=%s",
                    seq, prop.getKey(), m.getUserProperty(prop.getKey()));
                headers.add(new CrossManifest.Header(prop.getKey(), Common.utf8(prop.getValue())));
            }
            String keys = s.msg.getKeys();
            entries.add(new CrossManifest.Entry(m.getQueueId(), m.getQueueOffset(), m.getBornTimestamp(),
                keys == null ? null : Common.utf8(keys), s.msg.getBody(), headers));
        }
        CrossManifest.write(Path.of(a.get("manifest")), entries);
        log("wrote the %d messages to %s", entries.size(), a.get("manifest"));
    }
}
