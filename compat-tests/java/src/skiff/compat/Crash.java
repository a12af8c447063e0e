package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
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
 * The crash test's Java side. "crash-produce" sends synchronously from several threads to every
 * queue of a topic, with varying body sizes, until a stop file appears, while the harness kills
 * and restarts the broker; every SEND_OK is appended to a file (seq, uniq id, queue, queue
 * offset), one flushed line each. Failed sends (the broker is down) are skipped, never retried,
 * so no message can be stored twice. "crash-verify" then reads every queue from offset 0 to its
 * max and checks that queue offsets are dense, that no message is stored twice, that every body
 * is intact, and that every acknowledged message is stored at the queue offset it was
 * acknowledged with (with --lossy, missing ones are only counted: ASYNC_FLUSH may lose them).
 */
final class Crash {
    private Crash() {
    }

    /** Body length and bytes follow from the seq alone, so the verifier can regenerate them. */
    static byte[] body(String seq) {
        Random r = new Random(seq.hashCode());
        int pick = r.nextInt(100);
        int len;
        if (pick < 70) {
            len = 1 + r.nextInt(1024);
        } else if (pick < 95) {
            len = 1024 + r.nextInt(16 * 1024);
        } else {
            len = 16 * 1024 + r.nextInt(112 * 1024);
        }
        byte[] b = new byte[len];
        r.nextBytes(b);
        // A readable prefix for whoever looks at the store with a hex dump.
        byte[] p = seq.getBytes(StandardCharsets.UTF_8);
        System.arraycopy(p, 0, b, 0, Math.min(p.length, len));
        return b;
    }

    static String topic(Common.Args a) {
        return a.topic("crash");
    }

    static void produce(Common.Args a) throws Exception {
        String topic = topic(a);
        int queues = a.getInt("queues", 8);
        int threads = a.getInt("threads", 4);
        Path stop = Paths.get(a.get("stop"));
        createTopic(a, topic, queues);
        DefaultMQProducer p = Common.producer(a, a.group("crash_p"));
        p.setSendMsgTimeout(3000);
        p.setRetryTimesWhenSendFailed(0);
        List<MessageQueue> mqs = new ArrayList<>(p.fetchPublishMessageQueues(topic));
        check(mqs.size() == queues, "%s has %d write queues, expected %d", topic, mqs.size(), queues);
        AtomicLong acked = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        Map<String, Long> notOk = new ConcurrentHashMap<>();
        try (BufferedWriter out = Files.newBufferedWriter(Paths.get(a.get("out")), StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final int thread = t;
                Thread w = new Thread(() -> {
                    Random r = new Random(a.getInt("seed", 1) * 31L + thread);
                    for (long n = 0; !Files.exists(stop); n++) {
                        String seq = "t" + thread + "-" + n;
                        MessageQueue mq = mqs.get(r.nextInt(mqs.size()));
                        Message m = new Message(topic, "T" + (n % 3), seq, body(seq));
                        m.putUserProperty(Common.SEQ, seq);
                        SendResult res;
                        try {
                            res = p.send(m, mq);
                        } catch (Exception e) {
                            failed.incrementAndGet();
                            sleep(20);
                            continue;
                        }
                        if (res.getSendStatus() != SendStatus.SEND_OK) {
                            notOk.merge(res.getSendStatus().toString(), 1L, Long::sum);
                            continue;
                        }
                        String line = seq + " " + res.getMsgId() + " " + res.getMessageQueue().getQueueId() + " "
                            + res.getQueueOffset() + "\n";
                        synchronized (out) {
                            try {
                                out.write(line);
                                out.flush();
                            } catch (Exception e) {
                                throw new RuntimeException(e);
                            }
                        }
                        acked.incrementAndGet();
                    }
                }, "crash-sender-" + t);
                w.start();
                workers.add(w);
            }
            for (Thread w : workers) {
                w.join();
            }
        } finally {
            p.shutdown();
        }
        log("%d acknowledged, %d sends failed, other answers %s", acked.get(), failed.get(), notOk);
        check(acked.get() > 0, "no message was acknowledged");
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Creates the topic with `queues` queues (the broker may still be starting). */
    private static void createTopic(Common.Args a, String topic, int queues) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(a.namesrv());
        admin.setInstanceName("crash_admin");
        admin.start();
        try {
            Common.waitUntil("the topic " + topic + " to be created", 30000, () -> {
                try {
                    admin.createAndUpdateTopicConfig(a.get("broker"), new TopicConfig(topic, queues, queues, 6));
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

    /** One acknowledged message as the producer recorded it. */
    private static final class Acked {
        final String seq;
        final String msgId;
        final int queueId;
        final long queueOffset;

        Acked(String line) {
            String[] f = line.split(" ");
            check(f.length == 4, "bad record line '%s'", line);
            seq = f[0];
            msgId = f[1];
            queueId = Integer.parseInt(f[2]);
            queueOffset = Long.parseLong(f[3]);
        }
    }

    static void verify(Common.Args a) throws Exception {
        String topic = topic(a);
        boolean lossy = Boolean.parseBoolean(a.get("lossy", "false"));
        int queues = a.getInt("queues", 8);
        List<Acked> acked = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(a.get("in")), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) {
                acked.add(new Acked(line));
            }
        }
        check(!acked.isEmpty(), "nothing recorded in %s", a.get("in"));

        DefaultMQPullConsumer c = new DefaultMQPullConsumer(a.group("crash_verify"));
        Common.tune(c, a, "crash_verify");
        c.start();
        // queue id -> (queue offset -> uniq id), and uniq id -> where it is stored
        Map<Integer, Map<Long, String>> stored = new TreeMap<>();
        Map<String, String> where = new HashMap<>();
        long total = 0;
        try {
            List<MessageQueue> mqs = new ArrayList<>(c.fetchSubscribeMessageQueues(topic));
            check(mqs.size() == queues, "%s has %d queues, expected %d: %s", topic, mqs.size(), queues, mqs);
            for (MessageQueue mq : mqs) {
                Map<Long, String> q = new HashMap<>();
                stored.put(mq.getQueueId(), q);
                total += readQueue(c, mq, q, where);
            }
        } finally {
            c.shutdown();
        }

        int missing = 0;
        List<String> firstMissing = new ArrayList<>();
        for (Acked r : acked) {
            String at = stored.getOrDefault(r.queueId, Map.of()).get(r.queueOffset);
            if (!r.msgId.equals(at)) {
                missing++;
                if (firstMissing.size() < 10) {
                    firstMissing.add(String.format("%s (%s) acknowledged at queue %d offset %d, found %s there%s", r.seq,
                        r.msgId, r.queueId, r.queueOffset, at,
                        where.containsKey(r.msgId) ? ", it is at " + where.get(r.msgId) : ", and nowhere else"));
                }
            }
        }
        Map<Integer, Integer> maxOffsets = new TreeMap<>();
        stored.forEach((q, m) -> maxOffsets.put(q, m.size()));
        log("queues (max offsets) %s: %d messages stored, all dense and intact", maxOffsets, total);
        if (lossy) {
            log("%d of %d acknowledged messages are missing (allowed with ASYNC_FLUSH): %s", missing, acked.size(),
                firstMissing);
        } else {
            check(missing == 0, "%d of %d acknowledged messages are missing, first: %s", missing, acked.size(),
                firstMissing);
        }
        // The harness reads this line.
        System.out.println("CHECKED " + (acked.size() - missing) + " " + acked.size() + " " + total);
    }

    /**
     * Pulls `mq` from 0 to its max offset, checking that the queue offsets are exactly 0, 1, 2, ...
     * and that each body is the one its seq defines. Returns the number of messages.
     */
    private static long readQueue(DefaultMQPullConsumer c, MessageQueue mq, Map<Long, String> into,
        Map<String, String> where) throws Exception {
        long min = c.minOffset(mq);
        long max = c.maxOffset(mq);
        check(min == 0, "queue %d: min offset %d, expected 0 (nothing is ever deleted here)", mq.getQueueId(), min);
        long next = 0;
        while (next < max) {
            PullResult r = c.pull(mq, "*", next, 32);
            check(r.getPullStatus() == PullStatus.FOUND && !r.getMsgFoundList().isEmpty(),
                "queue %d: pull at offset %d (max %d) answered %s", mq.getQueueId(), next, max, r);
            for (MessageExt m : r.getMsgFoundList()) {
                check(m.getQueueOffset() == next, "queue %d: expected offset %d, got %d (a gap or a duplicate)",
                    mq.getQueueId(), next, m.getQueueOffset());
                String uniq = m.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
                String seq = m.getUserProperty(Common.SEQ);
                check(uniq != null && seq != null, "queue %d offset %d: no uniq id or seq: %s", mq.getQueueId(), next, m);
                check(Arrays.equals(m.getBody(), body(seq)), "queue %d offset %d: the body of %s is corrupt (%d bytes)",
                    mq.getQueueId(), next, seq, m.getBody() == null ? -1 : m.getBody().length);
                check(seq.equals(m.getKeys()), "queue %d offset %d: keys %s, expected %s", mq.getQueueId(), next,
                    m.getKeys(), seq);
                String here = "queue " + mq.getQueueId() + " offset " + next;
                String before = where.put(uniq, here);
                check(before == null, "%s (%s) is stored twice: at %s and at %s", seq, uniq, before, here);
                into.put(next, uniq);
                next++;
            }
            check(r.getNextBeginOffset() == next, "queue %d: next begin offset %d after offset %d", mq.getQueueId(),
                r.getNextBeginOffset(), next - 1);
        }
        return next;
    }
}
