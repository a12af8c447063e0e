package skiff.compat;

import java.net.InetSocketAddress;
import java.net.URLEncoder;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Helpers shared by the scenarios. Everything here uses only public client API that exists with
 * the same signature in 4.9.8 and 5.3.3, so one source set compiles against both.
 */
final class Common {
    /** User property that identifies a test message across send and receive. */
    static final String SEQ = "seq";

    private Common() {
    }

    /** A scenario failure with a readable reason (printed as "FAIL: reason"). */
    static final class Fail extends RuntimeException {
        Fail(String reason) {
            super(reason);
        }
    }

    static void check(boolean ok, String fmt, Object... args) {
        if (!ok) {
            throw new Fail(String.format(fmt, args));
        }
    }

    static void log(String fmt, Object... args) {
        System.out.printf("[%tT.%<tL] %s%n", System.currentTimeMillis(), String.format(fmt, args));
        System.out.flush();
    }

    /** Polls `cond` every 50 ms until it holds; fails after `timeoutMs` naming `what`. */
    static void waitUntil(String what, long timeoutMs, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new Fail("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    /** Command line `--key value` pairs. */
    static final class Args {
        final String scenario;
        private final Map<String, String> values = new HashMap<>();

        Args(String[] argv) {
            check(argv.length >= 1, "usage: Main <scenario> --namesrv host:port [--key value]...");
            scenario = argv[0];
            for (int i = 1; i < argv.length; i += 2) {
                check(argv[i].startsWith("--") && i + 1 < argv.length, "bad argument %s", argv[i]);
                values.put(argv[i].substring(2), argv[i + 1]);
            }
        }

        String get(String key) {
            String v = values.get(key);
            check(v != null, "missing argument --%s", key);
            return v;
        }

        String get(String key, String dflt) {
            return values.getOrDefault(key, dflt);
        }

        int getInt(String key, int dflt) {
            return Integer.parseInt(get(key, Integer.toString(dflt)));
        }

        String namesrv() {
            return get("namesrv");
        }

        /** Unique suffix for topic and group names, so scenarios can share one broker. */
        String id() {
            return get("id");
        }

        String topic(String what) {
            return "compat_" + what + "_" + id();
        }

        String group(String what) {
            return "compat_" + what + "_" + id();
        }
    }

    /** Shortened client periods so that waits are seconds, not the 20-30 s defaults. */
    static void tune(ClientConfig c, Args a, String instance) {
        c.setNamesrvAddr(a.namesrv());
        c.setInstanceName(instance);
        c.setPollNameServerInterval(1000);
        c.setHeartbeatBrokerInterval(1000);
        c.setPersistConsumerOffsetInterval(1000);
        c.setVipChannelEnabled(false);
    }

    static DefaultMQProducer producer(Args a, String group) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        tune(p, a, group + "_p");
        p.setSendMsgTimeout(10000);
        p.start();
        return p;
    }

    /** Collects what a push consumer receives, keyed by the SEQ property. */
    static final class Received {
        final ConcurrentHashMap<String, List<MessageExt>> bySeq = new ConcurrentHashMap<>();
        final ConcurrentHashMap<String, Integer> foreign = new ConcurrentHashMap<>();

        void add(MessageExt m) {
            String seq = m.getUserProperty(SEQ);
            if (seq == null) {
                foreign.merge(m.getMsgId(), 1, Integer::sum);
                return;
            }
            bySeq.computeIfAbsent(seq, k -> java.util.Collections.synchronizedList(new ArrayList<>())).add(m);
        }

        int count(String seq) {
            List<MessageExt> l = bySeq.get(seq);
            return l == null ? 0 : l.size();
        }

        boolean hasAll(Collection<String> seqs) {
            for (String s : seqs) {
                if (!bySeq.containsKey(s)) {
                    return false;
                }
            }
            return true;
        }

        List<String> missing(Collection<String> seqs) {
            List<String> out = new ArrayList<>();
            for (String s : seqs) {
                if (!bySeq.containsKey(s)) {
                    out.add(s);
                }
            }
            return out;
        }

        List<String> duplicated(Collection<String> seqs) {
            List<String> out = new ArrayList<>();
            for (String s : seqs) {
                if (count(s) > 1) {
                    out.add(s + "x" + count(s));
                }
            }
            return out;
        }
    }

    /** A push consumer (clustering unless told otherwise) that records into `into`. */
    static DefaultMQPushConsumer pushConsumer(Args a, String group, String instance, String topic,
        String expression, Received into) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        tune(c, a, instance);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, expression);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                into.add(m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        return c;
    }

    static Message msg(String topic, String tags, String seq, byte[] body) {
        Message m = new Message(topic, tags, body);
        m.putUserProperty(SEQ, seq);
        return m;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Reads every queue of `topic` from offset 0 with an assign-mode lite pull consumer of a new
     * group (`group` must be one no one used before) until all
     * `expected` SEQ values have arrived (or `timeoutMs` passes); returns everything received.
     */
    static Received readAllFromStart(Args a, String group, String topic, Collection<String> expected,
        long timeoutMs) throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        tune(c, a, group + "_lite");
        c.setAutoCommit(false);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.start();
        Received got = new Received();
        try {
            Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
            check(!mqs.isEmpty(), "topic %s has no queues", topic);
            // The group is new, so CONSUME_FROM_FIRST_OFFSET starts every queue at 0. No seek(): in
            // the 5.x client a seek cancels the queue's pull task with an interrupt, and an
            // interrupted pull closes the connection that the other requests share (they then fail
            // with "send request failed"), or delivers its stale batch a second time.
            c.assign(mqs);
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (!got.hasAll(expected) && System.currentTimeMillis() < deadline) {
                for (MessageExt m : c.poll(500)) {
                    got.add(m);
                }
            }
        } finally {
            c.shutdown();
        }
        List<String> missing = got.missing(expected);
        check(missing.isEmpty(), "%d of %d messages never arrived on %s, first: %s", missing.size(),
            expected.size(), topic, missing.subList(0, Math.min(10, missing.size())));
        return got;
    }

    /**
     * Everything the broker stored for a message, as one line: queue and CommitLog position,
     * sizes, flags, CRC, hosts, timestamps, every stored property (sorted, URL-encoded) and a
     * SHA-256 of the body. The client adds MIN_OFFSET and MAX_OFFSET to pulled messages; they
     * describe the queue at pull time, not the message, and are left out. Two brokers serving the
     * same stored message must give the same line.
     */
    static String describe(MessageExt m) throws Exception {
        Map<String, String> props = new TreeMap<>(m.getProperties());
        props.remove(MessageConst.PROPERTY_MIN_OFFSET);
        props.remove(MessageConst.PROPERTY_MAX_OFFSET);
        StringBuilder b = new StringBuilder();
        b.append(m.getTopic()).append(' ').append(m.getQueueId()).append(' ').append(m.getQueueOffset())
            .append(" offsetId=").append(offsetMsgId(m))
            .append(" commitLogOffset=").append(m.getCommitLogOffset())
            .append(" storeSize=").append(m.getStoreSize())
            .append(" sysFlag=").append(m.getSysFlag())
            .append(" flag=").append(m.getFlag())
            .append(" bodyCRC=").append(m.getBodyCRC())
            .append(" born=").append(m.getBornTimestamp()).append('@').append(m.getBornHost())
            .append(" stored=").append(m.getStoreTimestamp()).append('@').append(m.getStoreHost())
            .append(" reconsumeTimes=").append(m.getReconsumeTimes())
            .append(" preparedTransactionOffset=").append(m.getPreparedTransactionOffset())
            .append(" props=");
        for (Map.Entry<String, String> e : props.entrySet()) {
            b.append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
                .append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8)).append('&');
        }
        byte[] body = m.getBody() == null ? new byte[0] : m.getBody();
        b.append(" body=").append(body.length).append(':').append(hex(MessageDigest.getInstance("SHA-256").digest(body)));
        return b.toString();
    }

    /** The offset message id of a stored message: store host (IPv4) and port, CommitLog offset. */
    static String offsetMsgId(MessageExt m) {
        InetSocketAddress host = (InetSocketAddress) m.getStoreHost();
        ByteBuffer id = ByteBuffer.allocate(16);
        id.put(host.getAddress().getAddress()).putInt(host.getPort()).putLong(m.getCommitLogOffset());
        return hex(id.array());
    }

    static String hex(byte[] bytes) {
        StringBuilder b = new StringBuilder();
        for (byte x : bytes) {
            b.append(String.format("%02X", x & 0xff));
        }
        return b.toString();
    }
}
