package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.Arrays;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * "timer-bench": schedules --count timer messages (TIMER_DELIVER_MS) due uniformly over the
 * --window-sec seconds after the sending starts (none sooner than --lead-sec), with --threads
 * sending threads, and measures each one's lateness when a push consumer receives it (receive
 * time minus due time), how late the broker stored its delivered copy (store timestamp minus due
 * time: the broker's part, without the consumer's) and how many were stored before their due
 * time. Prints one line, "RESULT count=… early=… p50=… p99=… p999=… max=… min=… stored_p50=…
 * stored_p99=… stored_p999=… stored_max=…" (milliseconds), for the harness.
 */
final class TimerBench {
    private TimerBench() {
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("timer_bench");
        int count = a.getInt("count", 100000);
        long windowMs = a.getInt("window-sec", 120) * 1000L;
        long leadMs = a.getInt("lead-sec", 20) * 1000L;
        int threads = a.getInt("threads", 4);
        DefaultMQProducer p = Common.producer(a, a.group("timer_bench_p"));
        p.send(new Message(topic, "warmup", Common.utf8("warmup")));
        long[] lateness = new long[count];
        long[] storedLateness = new long[count];
        AtomicInteger received = new AtomicInteger();
        AtomicInteger early = new AtomicInteger();
        ConcurrentHashMap<Integer, Boolean> seen = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(a.group("timer_bench_c"));
        Common.tune(c, a, a.group("timer_bench_c") + "_i");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setConsumeThreadMin(4);
        c.setConsumeThreadMax(4);
        c.setConsumeMessageBatchMaxSize(32);
        c.subscribe(topic, "bench");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            long now = System.currentTimeMillis();
            for (MessageExt m : msgs) {
                int i = Integer.parseInt(m.getUserProperty("i"));
                long due = Long.parseLong(m.getUserProperty("due"));
                if (seen.putIfAbsent(i, Boolean.TRUE) == null) {
                    lateness[i] = now - due;
                    storedLateness[i] = m.getStoreTimestamp() - due;
                    received.incrementAndGet();
                    if (m.getStoreTimestamp() < due) {
                        early.incrementAndGet();
                    }
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();

        long start = System.currentTimeMillis();
        AtomicInteger next = new AtomicInteger();
        AtomicLong failures = new AtomicLong();
        Thread[] senders = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            senders[t] = new Thread(() -> {
                int i;
                while ((i = next.getAndIncrement()) < count) {
                    long due = start + leadMs + (windowMs - leadMs) * i / count;
                    Message m = new Message(topic, "bench", Common.utf8("timer bench " + i));
                    m.putUserProperty("i", Integer.toString(i));
                    m.putUserProperty("due", Long.toString(due));
                    try {
                        Timers.timer(m, "setDeliverTimeMs", "TIMER_DELIVER_MS", due);
                        if (p.send(m).getSendStatus() != SendStatus.SEND_OK) {
                            failures.incrementAndGet();
                        }
                    } catch (Exception e) {
                        failures.incrementAndGet();
                    }
                }
            });
            senders[t].start();
        }
        for (Thread t : senders) {
            t.join();
        }
        long sentIn = System.currentTimeMillis() - start;
        log("sent %d in %d ms (%d failed); the first is due %d ms after the start", count, sentIn,
            failures.get(), leadMs);
        check(failures.get() == 0, "%d sends failed", failures.get());
        check(sentIn < leadMs, "sending took %d ms, longer than the lead of %d ms: raise --lead-sec", sentIn,
            leadMs);
        Common.waitUntil("every timer message", windowMs + 120000, () -> received.get() >= count);
        c.shutdown();
        p.shutdown();
        long[] sorted = Arrays.copyOf(lateness, count);
        Arrays.sort(sorted);
        long[] stored = Arrays.copyOf(storedLateness, count);
        Arrays.sort(stored);
        System.out.printf("RESULT count=%d early=%d p50=%d p99=%d p999=%d max=%d min=%d"
            + " stored_p50=%d stored_p99=%d stored_p999=%d stored_max=%d%n", count, early.get(),
            sorted[count / 2], sorted[(int) (count * 0.99)], sorted[(int) (count * 0.999)], sorted[count - 1],
            sorted[0], stored[count / 2], stored[(int) (count * 0.99)], stored[(int) (count * 0.999)],
            stored[count - 1]);
    }
}
