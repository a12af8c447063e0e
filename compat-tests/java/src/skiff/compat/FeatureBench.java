package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Benchmarks of issue 7's transactions and SQL92 filters (see docs/benchmarks.md). Each prints
 * one "RESULT ..." line for the harness.
 *
 * <p>"tx-bench": one TransactionMQProducer shared by --threads sending threads (as Apache's
 * benchmark TransactionProducer does), --size byte bodies, the local transaction answers
 * COMMIT_MESSAGE at once. After --warmup-sec seconds it measures --rounds windows of
 * --duration-sec seconds each (transactional sends that returned SEND_OK with COMMIT_MESSAGE, per
 * second), then checks that every committed message is visible in the topic (the commit is a
 * oneway END_TRANSACTION, so a broker that only accepted halves would be caught here).
 *
 * <p>"sql-bench": a backlog of --count messages (--size byte bodies, user property a = i % 10),
 * sent in batches of 100, then --rounds + 1 new push consumer groups, one after the other, each
 * with MessageSelector.bySql("a = 0") from the first offset, draining the 10% that match; the
 * first group is the warm-up. A round's rate is the matched messages over the time from the
 * first matched message received to the last. The listener takes up to --consume-batch (32)
 * messages a call, so that the client's per-call cost does not hide the broker's.
 *
 * <p>With --broker-pid, each round also reports the broker's CPU time (from /proc) per
 * transaction, or per matching message delivered.
 */
final class FeatureBench {
    private FeatureBench() {
    }

    /** The sum of the max offsets of the topic's queues: how many messages it holds. */
    private static long stored(DefaultMQProducer p, String topic) throws Exception {
        long n = 0;
        for (MessageQueue mq : p.fetchPublishMessageQueues(topic)) {
            n += p.maxOffset(mq);
        }
        return n;
    }

    /**
     * CPU seconds (user + system) process `pid` has used, from /proc (clock ticks of 1/100 s, as
     * Linux reports them on this platform); 0 when unknown. With the machine shared, a broker's CPU
     * per operation is steadier than its rate.
     */
    static double cpuSecs(int pid) {
        if (pid <= 0) {
            return 0;
        }
        try {
            String stat = new String(java.nio.file.Files.readAllBytes(
                java.nio.file.Paths.get("/proc/" + pid + "/stat")), java.nio.charset.StandardCharsets.UTF_8);
            String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
            return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / 100.0;
        } catch (Exception e) {
            return 0;
        }
    }

    private static long median(long[] v) {
        long[] s = Arrays.copyOf(v, v.length);
        Arrays.sort(s);
        return s[s.length / 2];
    }

    private static String join(long[] v) {
        StringBuilder b = new StringBuilder();
        for (long x : v) {
            b.append(b.length() == 0 ? "" : ",").append(x);
        }
        return b.toString();
    }

    static void tx(Common.Args a) throws Exception {
        String topic = a.topic("tx_bench");
        int threads = a.getInt("threads", 16);
        int size = a.getInt("size", 1024);
        int warmupSec = a.getInt("warmup-sec", 10);
        int durationSec = a.getInt("duration-sec", 30);
        int rounds = a.getInt("rounds", 3);
        LongAdder checks = new LongAdder();
        TransactionMQProducer p = new TransactionMQProducer(a.group("tx_bench_p"));
        Common.tune(p, a, a.group("tx_bench_p") + "_tp");
        p.setSendMsgTimeout(10000);
        p.setDefaultTopicQueueNums(8);
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.increment();
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        p.start();
        byte[] body = new byte[size];
        ThreadLocalRandom.current().nextBytes(body);
        // The first send creates the topic; the route is then known to every thread.
        SendResult first = p.sendMessageInTransaction(new Message(topic, "tx", body), null);
        check(first.getSendStatus() == SendStatus.SEND_OK, "first transactional send: %s", first);
        LongAdder ok = new LongAdder();
        LongAdder failed = new LongAdder();
        ok.increment();
        AtomicLong lastError = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        Thread[] senders = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            senders[t] = new Thread(() -> {
                while (!stop.get()) {
                    try {
                        TransactionSendResult r =
                            p.sendMessageInTransaction(new Message(topic, "tx", body), null);
                        if (r.getSendStatus() == SendStatus.SEND_OK
                            && r.getLocalTransactionState() == LocalTransactionState.COMMIT_MESSAGE) {
                            ok.increment();
                        } else {
                            failed.increment();
                        }
                    } catch (Exception e) {
                        failed.increment();
                        if (lastError.getAndSet(System.currentTimeMillis()) == 0) {
                            log("send failed: %s", e);
                        }
                    }
                }
            });
            senders[t].start();
        }
        Thread.sleep(warmupSec * 1000L);
        int brokerPid = a.getInt("broker-pid", 0);
        long[] tps = new long[rounds];
        long[] cpuUs = new long[rounds];
        for (int r = 0; r < rounds; r++) {
            long c0 = ok.sum();
            double cpu0 = cpuSecs(brokerPid);
            long t0 = System.nanoTime();
            Thread.sleep(durationSec * 1000L);
            long c1 = ok.sum();
            double cpu1 = cpuSecs(brokerPid);
            long t1 = System.nanoTime();
            tps[r] = (c1 - c0) * 1_000_000_000L / (t1 - t0);
            cpuUs[r] = (long) ((cpu1 - cpu0) * 1e6 / Math.max(1, c1 - c0));
            log("round %d: %d transactional sends/s, broker CPU %d us per transaction (%.2f cores)", r + 1,
                tps[r], cpuUs[r], (cpu1 - cpu0) * 1e9 / (t1 - t0));
        }
        stop.set(true);
        for (Thread t : senders) {
            t.join();
        }
        long sent = ok.sum();
        log("%d committed sends, %d failed; waiting until all are visible in the topic", sent, failed.sum());
        Common.waitUntil("every committed message in the topic", 120000, () -> {
            try {
                return stored(p, topic) >= sent;
            } catch (Exception e) {
                return false;
            }
        });
        long visible = stored(p, topic);
        p.shutdown();
        check(failed.sum() == 0, "%d transactional sends failed", failed.sum());
        System.out.printf("RESULT tps=%s median=%d cpu_us=%s cpu_us_median=%d sent=%d visible=%d failed=%d checks=%d "
            + "threads=%d size=%d%n", join(tps), median(tps), join(cpuUs), median(cpuUs), sent, visible, failed.sum(),
            checks.sum(), threads, size);
    }

    static void sql(Common.Args a) throws Exception {
        String topic = a.topic("sql_bench");
        int count = a.getInt("count", 500000);
        int size = a.getInt("size", 128);
        int rounds = a.getInt("rounds", 3);
        int threads = a.getInt("threads", 4);
        String sql = "a = 0";
        DefaultMQProducer p = new DefaultMQProducer(a.group("sql_bench_p"));
        Common.tune(p, a, a.group("sql_bench_p") + "_p");
        p.setSendMsgTimeout(10000);
        p.setDefaultTopicQueueNums(8);
        p.start();
        byte[] body = new byte[size];
        ThreadLocalRandom.current().nextBytes(body);
        long sendStart = System.currentTimeMillis();
        AtomicInteger nextBatch = new AtomicInteger();
        AtomicLong failures = new AtomicLong();
        int batch = 100;
        int batches = (count + batch - 1) / batch;
        // The first batch creates the topic before the other threads send.
        Runnable sender = () -> {
            int b;
            while ((b = nextBatch.getAndIncrement()) < batches) {
                List<Message> msgs = new ArrayList<>(batch);
                for (int i = b * batch; i < Math.min(count, (b + 1) * batch); i++) {
                    Message m = new Message(topic, "sql", body);
                    m.putUserProperty("a", Integer.toString(i % 10));
                    m.putUserProperty("i", Integer.toString(i));
                    msgs.add(m);
                }
                try {
                    if (p.send(msgs).getSendStatus() != SendStatus.SEND_OK) {
                        failures.incrementAndGet();
                    }
                } catch (Exception e) {
                    failures.incrementAndGet();
                    log("batch send failed: %s", e);
                }
            }
        };
        List<Message> firstBatch = new ArrayList<>();
        nextBatch.set(1);
        for (int i = 0; i < Math.min(count, batch); i++) {
            Message m = new Message(topic, "sql", body);
            m.putUserProperty("a", Integer.toString(i % 10));
            m.putUserProperty("i", Integer.toString(i));
            firstBatch.add(m);
        }
        check(p.send(firstBatch).getSendStatus() == SendStatus.SEND_OK, "first batch");
        Thread[] senders = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            senders[t] = new Thread(sender);
            senders[t].start();
        }
        for (Thread t : senders) {
            t.join();
        }
        check(failures.get() == 0, "%d batch sends failed", failures.get());
        Common.waitUntil("the whole backlog stored", 60000, () -> {
            try {
                return stored(p, topic) >= count;
            } catch (Exception e) {
                return false;
            }
        });
        log("backlog of %d messages stored in %d ms", count, System.currentTimeMillis() - sendStart);
        p.shutdown();

        int matching = (count + 9) / 10;
        int brokerPid = a.getInt("broker-pid", 0);
        int consumeBatch = a.getInt("consume-batch", 32);
        long[] tps = new long[rounds];
        long[] fromStart = new long[rounds];
        long[] cpuUs = new long[rounds];
        for (int r = 0; r <= rounds; r++) {
            String group = a.group("sql_bench_c" + r);
            AtomicIntegerArray seen = new AtomicIntegerArray(count);
            AtomicInteger received = new AtomicInteger();
            AtomicInteger wrong = new AtomicInteger();
            AtomicLong firstAt = new AtomicLong();
            AtomicLong lastAt = new AtomicLong();
            DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
            Common.tune(c, a, group + "_i");
            c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            c.setConsumeMessageBatchMaxSize(consumeBatch);
            c.subscribe(topic, MessageSelector.bySql(sql));
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                long now = System.nanoTime();
                for (MessageExt m : msgs) {
                    int i = Integer.parseInt(m.getUserProperty("i"));
                    if (i % 10 != 0) {
                        wrong.incrementAndGet();
                    } else if (seen.getAndSet(i, 1) == 0) {
                        firstAt.compareAndSet(0, now);
                        if (received.incrementAndGet() == matching) {
                            lastAt.set(now);
                        }
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            double cpu0 = cpuSecs(brokerPid);
            long start = System.nanoTime();
            c.start();
            Common.waitUntil("every matching message of round " + r, 600000, () -> lastAt.get() != 0);
            double cpu1 = cpuSecs(brokerPid);
            c.shutdown();
            long us = (long) ((cpu1 - cpu0) * 1e6 / matching);
            check(wrong.get() == 0, "%d messages that do not match were delivered", wrong.get());
            long drain = lastAt.get() - firstAt.get();
            long rate = matching * 1_000_000_000L / Math.max(1, drain);
            long rateFromStart = matching * 1_000_000_000L / (lastAt.get() - start);
            log("%s %d: %d matching of %d in %d ms from the first received (%d ms from start): %d/s, "
                + "broker CPU %d us per matching message", r == 0 ? "warm-up" : "round", r, matching, count,
                drain / 1_000_000, (lastAt.get() - start) / 1_000_000, rate, us);
            if (r > 0) {
                tps[r - 1] = rate;
                fromStart[r - 1] = rateFromStart;
                cpuUs[r - 1] = us;
            }
        }
        System.out.printf("RESULT tps=%s median=%d from_start=%s from_start_median=%d cpu_us=%s cpu_us_median=%d "
            + "matching=%d count=%d size=%d consume_batch=%d%n", join(tps), median(tps), join(fromStart),
            median(fromStart), join(cpuUs), median(cpuUs), matching, count, size, consumeBatch);
    }
}
