package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * SQL92 filters (MessageSelector.bySql) evaluated by the broker over user properties and TAGS:
 * a push consumer, a pull consumer (DefaultMQPullConsumer.pull with a selector) and a lite pull
 * consumer each receive exactly the matching messages; a push consumer with an expression that
 * does not parse is refused at start (CHECK_CLIENT_CONFIG). Scenario "sql92-disabled" runs against
 * a broker with enablePropertyFilter=false: a SQL92 consumer is refused at start.
 */
final class Sql92 {
    private static final int COUNT = 40;

    private Sql92() {
    }

    /** Message i: TAGS TagA (even) or TagB (odd), a=i, color=red every fifth, none on the last. */
    static List<String> produce(Common.Args a, String topic) throws Exception {
        DefaultMQProducer p = Common.producer(a, a.group("sql_p"));
        List<String> seqs = new ArrayList<>();
        try {
            for (int i = 0; i < COUNT; i++) {
                String seq = "m" + i;
                Message m = Common.msg(topic, i % 2 == 0 ? "TagA" : "TagB", seq, Common.utf8(seq));
                if (i < COUNT - 1) {
                    m.putUserProperty("a", Integer.toString(i));
                }
                if (i % 5 == 0) {
                    m.putUserProperty("color", "red");
                }
                check(p.send(m).getSendStatus() == SendStatus.SEND_OK, "send %s", seq);
                seqs.add(seq);
            }
        } finally {
            p.shutdown();
        }
        return seqs;
    }

    static Set<String> seqs(int from, int to, boolean evenOnly) {
        Set<String> out = new TreeSet<>();
        for (int i = from; i <= to; i++) {
            if (!evenOnly || i % 2 == 0) {
                out.add("m" + i);
            }
        }
        return out;
    }

    static void checkExactly(String who, Common.Received got, Set<String> wanted) {
        Set<String> received = new TreeSet<>(got.bySeq.keySet());
        check(received.equals(wanted), "%s received %s, expected %s", who, received, wanted);
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("sql92");
        produce(a, topic);

        // Push: TAGS and a number range.
        Set<String> pushWanted = seqs(10, 19, true);
        Common.Received pushed = new Common.Received();
        DefaultMQPushConsumer push = new DefaultMQPushConsumer(a.group("sql_push"));
        Common.tune(push, a, "sql_push");
        push.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        push.subscribe(topic, MessageSelector.bySql("a BETWEEN 10 AND 19 AND TAGS = 'TagA'"));
        push.registerMessageListener(
            (org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    pushed.add(m);
                }
                return org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        push.start();
        try {
            Common.waitUntil("the SQL92 push consumer to receive " + pushWanted, 60000,
                () -> pushed.hasAll(pushWanted));
            Thread.sleep(1000);
            checkExactly("push consumer", pushed, pushWanted);
        } finally {
            push.shutdown();
        }

        // Pull: every queue from offset 0 until nothing is left.
        Set<String> pullWanted = seqs(30, 38, false);
        pullWanted.addAll(seqs(0, 0, false));
        pullWanted.addAll(seqs(5, 5, false));
        pullWanted.addAll(seqs(10, 10, false));
        pullWanted.addAll(seqs(15, 15, false));
        pullWanted.addAll(seqs(20, 20, false));
        pullWanted.addAll(seqs(25, 25, false));
        String either = "a >= 30 OR color = 'red'";
        Common.Received pulled = new Common.Received();
        DefaultMQPullConsumer pull = new DefaultMQPullConsumer(a.group("sql_pull"));
        Common.tune(pull, a, "sql_pull");
        pull.start();
        try {
            for (MessageQueue mq : pull.fetchSubscribeMessageQueues(topic)) {
                long offset = 0;
                for (int round = 0; round < 100; round++) {
                    PullResult r = pullOnce(pull, mq, either, offset);
                    if (r.getPullStatus() == PullStatus.FOUND) {
                        for (MessageExt m : r.getMsgFoundList()) {
                            pulled.add(m);
                        }
                    }
                    if (r.getPullStatus() == PullStatus.NO_NEW_MSG || r.getPullStatus() == PullStatus.OFFSET_ILLEGAL) {
                        break;
                    }
                    offset = r.getNextBeginOffset();
                }
            }
            checkExactly("pull consumer", pulled, pullWanted);
            sparse(a, pull);
        } finally {
            pull.shutdown();
        }

        // Lite pull: subscribe with a selector; strings, IN and IS NULL.
        Set<String> liteWanted = seqs(39, 39, false);
        liteWanted.addAll(seqs(1, 3, false));
        Common.Received lite = new Common.Received();
        DefaultLitePullConsumer lc = new DefaultLitePullConsumer(a.group("sql_lite"));
        Common.tune(lc, a, "sql_lite");
        lc.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        lc.subscribe(topic, MessageSelector.bySql("a IN ('1', '2', '3') OR a IS NULL"));
        lc.start();
        try {
            long deadline = System.currentTimeMillis() + 60000;
            while (!lite.hasAll(liteWanted) && System.currentTimeMillis() < deadline) {
                for (MessageExt m : lc.poll(500)) {
                    lite.add(m);
                }
            }
            for (MessageExt m : lc.poll(1000)) {
                lite.add(m);
            }
            checkExactly("lite pull consumer", lite, liteWanted);
        } finally {
            lc.shutdown();
        }

        // A bad expression is refused when the consumer starts.
        expectRefusedAtStart(a, topic, "sql_bad", "a > ");
        log("SQL92: push %d, pull %d, lite pull %d messages, exactly the matching ones; bad SQL refused",
            pushWanted.size(), pullWanted.size(), liteWanted.size());
    }

    /**
     * A selective filter over a long queue: one pull scans past the 32 entries of a read and
     * returns both matches among 150 messages, as Java's getMessage does.
     */
    static void sparse(Common.Args a, DefaultMQPullConsumer pull) throws Exception {
        String topic = a.topic("sql92_sparse");
        DefaultMQProducer p = Common.producer(a, a.group("sql_sparse_p"));
        try {
            for (int i = 0; i < 150; i++) {
                Message m = Common.msg(topic, "T", "s" + i, Common.utf8("s" + i));
                m.putUserProperty("a", Integer.toString(i));
                check(p.send(m, (mqs, msg, arg) -> mqs.get(0), null).getSendStatus() == SendStatus.SEND_OK,
                    "send s%d", i);
            }
        } finally {
            p.shutdown();
        }
        MessageQueue q0 = null;
        for (MessageQueue mq : pull.fetchSubscribeMessageQueues(topic)) {
            if (mq.getQueueId() == 0) {
                q0 = mq;
            }
        }
        check(q0 != null, "no queue 0 in %s", topic);
        PullResult r = pullOnce(pull, q0, "a IN ('7', '140')", 0);
        List<String> got = new ArrayList<>();
        if (r.getMsgFoundList() != null) {
            for (MessageExt m : r.getMsgFoundList()) {
                got.add(m.getUserProperty(Common.SEQ));
            }
        }
        check(r.getPullStatus() == PullStatus.FOUND && got.size() == 2 && got.contains("s7") && got.contains("s140"),
            "one pull over 150 messages returned %s %s (next offset %d), expected s7 and s140",
            r.getPullStatus(), got, r.getNextBeginOffset());
    }

    /**
     * One pull with a SQL92 selector. The client refuses SQL92 pulls to a broker whose version it
     * has not learnt yet (from a heartbeat response), so early attempts are retried.
     */
    static PullResult pullOnce(DefaultMQPullConsumer pull, MessageQueue mq, String sql, long offset)
        throws Exception {
        for (int attempt = 0; ; attempt++) {
            try {
                return pull.pull(mq, MessageSelector.bySql(sql), offset, 32);
            } catch (MQClientException e) {
                if (attempt >= 40 || e.getMessage() == null || !e.getMessage().contains("does not upgrade")) {
                    throw e;
                }
                Thread.sleep(250);
            }
        }
    }

    /** Starts a push consumer with `sql`; the start must throw (CHECK_CLIENT_CONFIG refused). */
    static void expectRefusedAtStart(Common.Args a, String topic, String group, String sql) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(a.group(group));
        Common.tune(c, a, group);
        c.subscribe(topic, MessageSelector.bySql(sql));
        c.registerMessageListener(
            (org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently) (msgs, ctx) ->
                org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        try {
            c.start();
            c.shutdown();
            throw new Common.Fail("a push consumer with SQL92 \"" + sql + "\" started; the broker should refuse it");
        } catch (MQClientException expected) {
            log("refused at start as expected: %s", expected.getMessage().split("\n")[0]);
            c.shutdown();
        }
    }

    /** enablePropertyFilter=false: even a valid SQL92 subscription is refused at start. */
    static void runDisabled(Common.Args a) throws Exception {
        String topic = a.topic("sql92_off");
        produce(a, topic);
        expectRefusedAtStart(a, topic, "sql_off", "a > 1");
    }
}
