package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Orderly consumption (MessageListenerOrderly, queue locks on the broker): per-key order through a
 * MessageQueueSelector over 4 queues and global order on one queue, while consumers join, leave and
 * restart (same instance name, so the same client id). Every consumer run must see each key's
 * messages in order (a step back is a redelivery after a rebalance, allowed; a step forward over a
 * message is not: no run here regains a queue it lost), and together they must see every message.
 */
final class Orderly {
    private static final int KEYS = 8;
    private static final int PER_KEY = 24;
    private static final int GLOBAL = 60;

    private Orderly() {
    }

    /** Per instance, per key, the sequence numbers in the order they were consumed. */
    static final class Seen {
        final Map<String, Map<String, List<Integer>>> byInstance = new ConcurrentHashMap<>();
        final Map<String, Boolean> all = new ConcurrentHashMap<>();

        void add(String instance, MessageExt m) {
            String key = m.getKeys();
            int seq = Integer.parseInt(m.getUserProperty("N"));
            byInstance.computeIfAbsent(instance, k -> new ConcurrentHashMap<>())
                .computeIfAbsent(key, k -> java.util.Collections.synchronizedList(new ArrayList<>())).add(seq);
            all.put(key + "#" + seq, Boolean.TRUE);
        }

        int distinct() {
            return all.size();
        }

        /** Steps forward over a message, per instance and key. */
        List<String> violations() {
            List<String> out = new ArrayList<>();
            byInstance.forEach((instance, keys) -> keys.forEach((key, seqs) -> {
                synchronized (seqs) {
                    for (int i = 1; i < seqs.size(); i++) {
                        if (seqs.get(i) > seqs.get(i - 1) + 1) {
                            out.add(instance + "/" + key + ": " + seqs.get(i - 1) + " then " + seqs.get(i));
                        }
                    }
                }
            }));
            return out;
        }
    }

    /** A consumer whose client id ends in `instance`; what it sees is recorded under `label`. */
    static DefaultMQPushConsumer consumer(Common.Args a, String group, String instance, String label, String topic,
        Seen seen) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        Common.tune(c, a, instance);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                seen.add(label, m);
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        c.start();
        return c;
    }

    static void send(DefaultMQProducer p, String topic, String key, int n, boolean global) throws Exception {
        Message m = new Message(topic, "T", key, Common.utf8(key + "-" + n));
        m.putUserProperty("N", Integer.toString(n));
        MessageQueueSelector selector = (mqs, msg, arg) -> global
            ? mqs.get(0)
            : mqs.get(Math.abs(arg.hashCode() % mqs.size()));
        check(p.send(m, selector, key).getSendStatus() == SendStatus.SEND_OK, "send %s-%d", key, n);
    }

    static void run(Common.Args a) throws Exception {
        // Rebalance and re-lock every second instead of every 20 s, so that the scenario takes
        // seconds (read by the client's static fields: set before any client class loads).
        System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
        System.setProperty("rocketmq.client.rebalance.lockInterval", "1000");
        String keyed = a.topic("orderly_keys");
        String global = a.topic("orderly_global");
        DefaultMQProducer p = Common.producer(a, a.group("orderly_p"));
        List<DefaultMQPushConsumer> running = new ArrayList<>();
        Seen keys = new Seen();
        Seen one = new Seen();
        try {
            // The first half before any consumer starts.
            for (int n = 0; n < PER_KEY / 2; n++) {
                for (int k = 0; k < KEYS; k++) {
                    send(p, keyed, "key" + k, n, false);
                }
            }
            for (int n = 0; n < GLOBAL / 2; n++) {
                send(p, global, "global", n, true);
            }
            String group = a.group("orderly_keys_c");
            String globalGroup = a.group("orderly_global_c");
            DefaultMQPushConsumer c1 = consumer(a, group, "c1", "c1", keyed, keys);
            DefaultMQPushConsumer g1 = consumer(a, globalGroup, "g1", "g1", global, one);
            running.add(c1);
            running.add(g1);
            Common.waitUntil("the first consumer to start consuming", 60000,
                () -> keys.distinct() >= KEYS * 2 && one.distinct() >= 5);
            // A second member joins: the queues are shared out, locks change hands.
            DefaultMQPushConsumer c2 = consumer(a, group, "c2", "c2", keyed, keys);
            DefaultMQPushConsumer g2 = consumer(a, globalGroup, "g2", "g2", global, one);
            running.add(c2);
            running.add(g2);
            for (int n = PER_KEY / 2; n < PER_KEY; n++) {
                for (int k = 0; k < KEYS; k++) {
                    send(p, keyed, "key" + k, n, false);
                }
            }
            for (int n = GLOBAL / 2; n < GLOBAL; n++) {
                send(p, global, "global", n, true);
            }
            Thread.sleep(2000);
            // The first leaves, then comes back with the same client id (a restart).
            c1.shutdown();
            g1.shutdown();
            running.remove(c1);
            running.remove(g1);
            running.add(consumer(a, group, "c1", "c1-restarted", keyed, keys));
            running.add(consumer(a, globalGroup, "g1", "g1-restarted", global, one));
            Common.waitUntil("every keyed message (" + KEYS * PER_KEY + ")", 90000,
                () -> keys.distinct() == KEYS * PER_KEY);
            Common.waitUntil("every global message (" + GLOBAL + ")", 90000, () -> one.distinct() == GLOBAL);
            check(keys.violations().isEmpty(), "per-key order broken: %s", keys.violations());
            check(one.violations().isEmpty(), "global order broken: %s", one.violations());
            log("orderly: %d keyed and %d global messages in order across join, leave and restart",
                keys.distinct(), one.distinct());
        } finally {
            for (DefaultMQPushConsumer c : running) {
                c.shutdown();
            }
            p.shutdown();
        }
    }
}
