package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * ACL 1.0 with the official client's {@code AclClientRPCHook} (in rocketmq-acl for 4.9.x, in
 * rocketmq-client for 5.x; same package). Each mode takes {@code --ak}/{@code --sk} (omitted: no
 * hook, an unsigned client) and {@code --expect ok} or {@code --expect <text>}: the refusal's
 * message (Java's AclException text) must contain it.
 *
 * <ul>
 *   <li>{@code acl-send-receive}: sends 3 messages to {@code --topic}, then a push consumer of
 *       {@code --group} receives them.</li>
 *   <li>{@code acl-send}: one send to {@code --topic}.</li>
 *   <li>{@code acl-pull}: one pull of queue 0 of {@code --topic} as {@code --group}.</li>
 *   <li>{@code acl-admin}: UPDATE_AND_CREATE_TOPIC of {@code --topic} on {@code --broker}.</li>
 * </ul>
 */
final class Acl {
    private Acl() {
    }

    private static RPCHook hook(Common.Args a) {
        String ak = a.get("ak", "");
        if (ak.isEmpty()) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(ak, a.get("sk")));
    }

    /** Passes when {@code expect} is "ok" and {@code error} is null, or the error says {@code expect}. */
    private static void judge(Common.Args a, Throwable error) {
        String expect = a.get("expect");
        if (expect.equals("ok")) {
            if (error != null) {
                throw new Common.Fail("expected success, got " + chain(error));
            }
            return;
        }
        check(error != null, "expected a refusal containing '%s', but the call succeeded", expect);
        String text = chain(error);
        log("refused as expected: %s", text);
        check(text.contains(expect), "expected a refusal containing '%s', got %s", expect, text);
    }

    private static String chain(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage()).append(" | ");
        }
        return sb.toString();
    }

    static void sendReceive(Common.Args a) throws Exception {
        String topic = a.get("topic");
        String group = a.get("group");
        DefaultMQProducer p = new DefaultMQProducer(group + "_pg", hook(a));
        Common.tune(p, a, group + "_p");
        p.setSendMsgTimeout(10000);
        p.start();
        List<String> seqs = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                String seq = "acl-" + i;
                SendResult r = p.send(Common.msg(topic, "TagA", seq, Common.utf8("acl " + i)));
                check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", seq, r);
                seqs.add(seq);
            }
        } finally {
            p.shutdown();
        }
        Common.Received got = new Common.Received();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook(a),
            new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
        Common.tune(c, a, group + "_c");
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently) (msgs, ctx) -> {
            msgs.forEach(got::add);
            return org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        try {
            Common.waitUntil("the 3 messages", 60000, () -> got.hasAll(seqs));
        } finally {
            c.shutdown();
        }
        log("sent and received %d messages on %s", seqs.size(), topic);
        judge(a, null);
    }

    static void send(Common.Args a) throws Exception {
        String topic = a.get("topic");
        DefaultMQProducer p = new DefaultMQProducer(a.get("group", "acl_pg_" + a.id()), hook(a));
        Common.tune(p, a, "acl_send_" + a.id());
        p.setSendMsgTimeout(5000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        Throwable error = null;
        try {
            SendResult r = p.send(Common.msg(topic, "TagA", "acl-send", Common.utf8("x")));
            check(r.getSendStatus() == SendStatus.SEND_OK, "send: %s", r);
        } catch (Exception e) {
            error = e;
        } finally {
            p.shutdown();
        }
        judge(a, error);
    }

    @SuppressWarnings("deprecation")
    static void pull(Common.Args a) throws Exception {
        String topic = a.get("topic");
        DefaultMQPullConsumer c = new DefaultMQPullConsumer(a.get("group"), hook(a));
        Common.tune(c, a, "acl_pull_" + a.id());
        c.start();
        Throwable error = null;
        try {
            Set<MessageQueue> queues = c.fetchSubscribeMessageQueues(topic);
            MessageQueue q = queues.stream().filter(m -> m.getQueueId() == 0).findFirst()
                .orElseThrow(() -> new Common.Fail("no queue 0 of " + topic + " in " + queues));
            PullResult r = c.pull(q, "*", 0, 32, 5000);
            log("pulled: %s", r.getPullStatus());
        } catch (Common.Fail f) {
            throw f;
        } catch (Exception e) {
            error = e;
        } finally {
            c.shutdown();
        }
        judge(a, error);
    }

    static void admin(Common.Args a) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(hook(a));
        admin.setNamesrvAddr(a.namesrv());
        admin.setInstanceName("acl_admin_" + a.id());
        admin.setAdminExtGroup("acl_admin_group_" + a.id());
        admin.start();
        Throwable error = null;
        try {
            admin.createAndUpdateTopicConfig(a.get("broker"), new TopicConfig(a.get("topic"), 4, 4, 6));
        } catch (Exception e) {
            error = e;
        } finally {
            admin.shutdown();
        }
        judge(a, error);
    }
}
