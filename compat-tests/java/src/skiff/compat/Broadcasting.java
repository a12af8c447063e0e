package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;

/**
 * Scenario 3: in a broadcasting group every consumer receives every message, both the messages
 * stored before it started and the ones sent while it runs.
 */
final class Broadcasting {
    private Broadcasting() {
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("broadcast");
        String group = a.group("broadcast");
        DefaultMQProducer p = Common.producer(a, a.group("broadcast_p"));
        List<String> seqs = new ArrayList<>();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        List<Common.Received> got = new ArrayList<>();
        try {
            send(p, topic, "before", 30, seqs);
            for (int i = 0; i < 3; i++) {
                Common.Received r = new Common.Received();
                DefaultMQPushConsumer c = Common.pushConsumer(a, group, "b" + i, topic, "*", r);
                // MessageModel moved package in 5.x; reach the constant through the getter's type.
                var model = c.getMessageModel();
                c.setMessageModel(Enum.valueOf(model.getDeclaringClass(), "BROADCASTING"));
                c.start();
                consumers.add(c);
                got.add(r);
            }
            send(p, topic, "during", 30, seqs);
            for (int i = 0; i < got.size(); i++) {
                Common.Received r = got.get(i);
                String who = "consumer b" + i;
                try {
                    Common.waitUntil(who + " to receive all " + seqs.size(), 60000, () -> r.hasAll(seqs));
                } catch (Common.Fail f) {
                    throw new Common.Fail(f.getMessage() + "; missing " + r.missing(seqs));
                }
                check(r.duplicated(seqs).isEmpty(), "%s got duplicates: %s", who, r.duplicated(seqs));
            }
            log("all %d consumers received all %d messages", consumers.size(), seqs.size());
        } finally {
            for (DefaultMQPushConsumer c : consumers) {
                c.shutdown();
            }
            p.shutdown();
        }
    }

    private static void send(DefaultMQProducer p, String topic, String phase, int n, List<String> seqs)
        throws Exception {
        for (int i = 0; i < n; i++) {
            String seq = phase + "-" + i;
            check(p.send(Common.msg(topic, "T", seq, Common.utf8(seq))).getSendStatus() == SendStatus.SEND_OK,
                "send %s not SEND_OK", seq);
            seqs.add(seq);
        }
    }
}
