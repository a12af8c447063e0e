package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * POP consumption by the 5.x DefaultMQPushConsumer, unchanged: the group is switched to POP with
 * DefaultMQAdminExt.setMessageRequestMode, the consumer only turns client rebalance off (so it
 * asks the broker for its assignment, QUERY_ASSIGNMENT), and then pops, acks and changes
 * invisible time by itself. The 5.x-only methods are called by reflection so that the sources
 * still compile against the 4.9 client (which has no POP; the harness runs these with 5.x only).
 *
 * <ul>
 * <li>{@code pop-consume}: two consumers share the queues; every message is consumed exactly
 * once, with a POP_CK handle; one returned RECONSUME_LATER and one whose listener threw come back
 * after the invisible time with reconsumeTimes 1, and then never again.</li>
 * <li>{@code pop-hold}: consumes, acks half of the messages and leaves the others un-acked (the
 * listener blocks), writes the seqs to {@code --out} and exits without acking them.</li>
 * <li>{@code pop-return}: after a broker restart or kill -9, the un-acked messages come back
 * and the acked ones never do.</li>
 * </ul>
 */
final class Pop {
    private static final int QUEUES = 4;

    private Pop() {
    }

    static void consume(Common.Args a) throws Exception {
        String topic = a.topic("pop");
        String group = a.group("pop");
        setUp(a, topic, group);
        ConcurrentHashMap<String, List<MessageExt>> got = new ConcurrentHashMap<>();
        Set<String> byFirst = ConcurrentHashMap.newKeySet();
        Set<String> bySecond = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer c1 = popConsumer(a, group, "pop1", topic, (m) -> {
            byFirst.add(seq(m));
            return record(got, m);
        });
        DefaultMQPushConsumer c2 = popConsumer(a, group, "pop2", topic, (m) -> {
            bySecond.add(seq(m));
            return record(got, m);
        });
        c1.start();
        c2.start();
        DefaultMQProducer p = Common.producer(a, a.group("pop_p"));
        List<String> seqs = new ArrayList<>();
        try {
            for (int batch = 0; batch < 10; batch++) {
                for (int i = 0; i < 10; i++) {
                    String seq = "m-" + (batch * 10 + i);
                    send(p, topic, seq);
                    seqs.add(seq);
                }
                Thread.sleep(200);
            }
            Common.waitUntil("every message to be popped", 60000, () -> got.keySet().containsAll(seqs));
            // The failed two come back after the client's 10 s invisible time (delay level 1).
            Common.waitUntil("the failed messages to come back", 90000,
                () -> got.get("m-7").size() >= 2 && got.get("m-13").size() >= 2);
            // Anything delivered twice would come back within the 10 s invisible time.
            Thread.sleep(12000);
        } finally {
            c1.shutdown();
            c2.shutdown();
            p.shutdown();
        }
        for (String seq : seqs) {
            List<MessageExt> copies = got.get(seq);
            int expected = seq.equals("m-7") || seq.equals("m-13") ? 2 : 1;
            check(copies.size() == expected, "%s was consumed %d times, expected %d", seq, copies.size(), expected);
            for (MessageExt m : copies) {
                check(m.getProperty("POP_CK") != null, "%s has no POP_CK: not consumed by POP", seq);
                check(m.getTopic().equals(topic), "%s came with topic %s", seq, m.getTopic());
            }
            if (expected == 2) {
                check(copies.get(0).getReconsumeTimes() == 0 && copies.get(1).getReconsumeTimes() == 1,
                    "%s reconsume times %d then %d, expected 0 then 1", seq,
                    copies.get(0).getReconsumeTimes(), copies.get(1).getReconsumeTimes());
            }
        }
        check(!byFirst.isEmpty() && !bySecond.isEmpty(), "the queues were not shared: %d and %d",
            byFirst.size(), bySecond.size());
        log("consumed %d by POP; first consumer %d, second %d", seqs.size(), byFirst.size(), bySecond.size());
    }

    static void hold(Common.Args a) throws Exception {
        String topic = a.topic("pophold");
        String group = a.group("pophold");
        setUp(a, topic, group);
        Set<String> acked = ConcurrentHashMap.newKeySet();
        Set<String> held = ConcurrentHashMap.newKeySet();
        CountDownLatch never = new CountDownLatch(1);
        DefaultMQPushConsumer c = popConsumer(a, group, "pophold", topic, (m) -> {
            String seq = seq(m);
            if (Integer.parseInt(seq.substring(2)) % 4 == 0) {
                held.add(seq);
                try {
                    never.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
            acked.add(seq);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        set(c, "setPopInvisibleTime", long.class, 20000L);
        c.start();
        DefaultMQProducer p = Common.producer(a, a.group("pophold_p"));
        try {
            for (int i = 0; i < 40; i++) {
                send(p, topic, "h-" + i);
            }
            Common.waitUntil("30 acked and 10 held", 60000, () -> acked.size() == 30 && held.size() == 10);
            // The acks are sent asynchronously after the listener returns.
            Thread.sleep(3000);
        } finally {
            p.shutdown();
        }
        Files.write(Paths.get(a.get("out")),
            ("held " + String.join(",", held) + "\nacked " + String.join(",", acked) + "\n")
                .getBytes(StandardCharsets.UTF_8));
        log("holding %d un-acked, %d acked", held.size(), acked.size());
        // Exit without acking what is held (Main halts the JVM).
    }

    static void comeBack(Common.Args a) throws Exception {
        String topic = a.topic("pophold");
        String group = a.group("pophold");
        List<String> lines = Files.readAllLines(Path.of(a.get("in")));
        Set<String> held = Set.of(lines.get(0).substring(5).split(","));
        Set<String> acked = Set.of(lines.get(1).substring(6).split(","));
        ConcurrentHashMap<String, List<MessageExt>> got = new ConcurrentHashMap<>();
        DefaultMQPushConsumer c = popConsumer(a, group, "popback", topic, (m) -> record(got, m));
        c.start();
        try {
            Common.waitUntil("the un-acked messages to come back", 120000, () -> got.keySet().containsAll(held));
            // An acked message coming back would come with them or within another invisible time.
            Thread.sleep(5000);
        } finally {
            c.shutdown();
        }
        for (String seq : acked) {
            check(!got.containsKey(seq), "acked message %s came back", seq);
        }
        for (String seq : held) {
            check(got.get(seq).get(0).getReconsumeTimes() >= 1, "%s came back with reconsumeTimes %d", seq,
                got.get(seq).get(0).getReconsumeTimes());
        }
        log("%d un-acked came back, none of %d acked", held.size(), acked.size());
    }

    interface Handler {
        ConsumeConcurrentlyStatus on(MessageExt m);
    }

    private static ConsumeConcurrentlyStatus record(ConcurrentHashMap<String, List<MessageExt>> got, MessageExt m) {
        String seq = seq(m);
        List<MessageExt> copies = got.computeIfAbsent(seq, k -> java.util.Collections.synchronizedList(new ArrayList<>()));
        copies.add(m);
        if (copies.size() == 1 && seq.equals("m-7")) {
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        }
        if (copies.size() == 1 && seq.equals("m-13")) {
            throw new IllegalStateException("the listener fails on purpose");
        }
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    }

    private static String seq(MessageExt m) {
        return m.getUserProperty(Common.SEQ);
    }

    private static void send(DefaultMQProducer p, String topic, String seq) throws Exception {
        SendResult r = p.send(Common.msg(topic, "T", seq, Common.utf8(seq)));
        check(r.getSendStatus() == SendStatus.SEND_OK, "send %s not SEND_OK", seq);
    }

    /** Creates the topic and switches the group to POP on it (all queues shared by everyone). */
    private static void setUp(Common.Args a, String topic, String group) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(a.namesrv());
        admin.setInstanceName("pop_admin");
        admin.start();
        try {
            String broker = a.get("broker");
            admin.createAndUpdateTopicConfig(broker, new TopicConfig(topic, QUEUES, QUEUES, 6));
            @SuppressWarnings({"unchecked", "rawtypes"})
            Class<Enum> modeClass = (Class<Enum>) Class.forName("org.apache.rocketmq.common.message.MessageRequestMode");
            Object pop = Enum.valueOf(modeClass, "POP");
            DefaultMQAdminExt.class
                .getMethod("setMessageRequestMode", String.class, String.class, String.class, modeClass, int.class,
                    long.class)
                .invoke(admin, broker, topic, group, pop, 0, 5000L);
        } finally {
            admin.shutdown();
        }
    }

    private static DefaultMQPushConsumer popConsumer(Common.Args a, String group, String instance, String topic,
        Handler handler) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        Common.tune(c, a, instance);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.setConsumeMessageBatchMaxSize(1);
        set(c, "setClientRebalance", boolean.class, false);
        set(c, "setPopBatchNums", int.class, 4);
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            ConsumeConcurrentlyStatus status = ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            for (MessageExt m : msgs) {
                status = handler.on(m);
            }
            return status;
        });
        return c;
    }

    private static void set(Object target, String setter, Class<?> type, Object value) throws Exception {
        target.getClass().getMethod(setter, type).invoke(target, value);
    }
}
