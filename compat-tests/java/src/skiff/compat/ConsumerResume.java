package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Scenario 6: a push consumer that shuts down cleanly commits its offsets; the same group started
 * again (a new client instance) resumes after them: it receives the messages produced while it
 * was away and none of the ones it had already consumed.
 */
final class ConsumerResume {
    private ConsumerResume() {
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("resume");
        String group = a.group("resume");
        DefaultMQProducer p = Common.producer(a, a.group("resume_p"));
        try {
            Map<MessageQueue, Long> next = new HashMap<>();
            List<String> first = send(p, topic, "first", 50, next);
            Common.Received before = new Common.Received();
            DefaultMQPushConsumer c1 = Common.pushConsumer(a, group, "resume1", topic, "*", before);
            c1.start();
            try {
                Common.waitUntil("the first consumer to get " + first.size(), 60000, () -> before.hasAll(first));
                // The listener returns before the client records the offset; wait for the record
                // so that the clean shutdown commits all of it.
                var store = c1.getDefaultMQPushConsumerImpl().getOffsetStore();
                Common.waitUntil("the consumer to record its offsets " + next, 30000, () -> next.entrySet().stream()
                    .allMatch(e -> store.readOffset(e.getKey(), ReadOffsetType.READ_FROM_MEMORY) >= e.getValue()));
            } finally {
                c1.shutdown();
            }
            log("first consumer got %d and shut down", first.size());

            List<String> second = send(p, topic, "second", 30, next);
            Common.Received after = new Common.Received();
            DefaultMQPushConsumer c2 = Common.pushConsumer(a, group, "resume2", topic, "*", after);
            c2.start();
            try {
                Common.waitUntil("the restarted consumer to get the " + second.size() + " new messages", 60000,
                    () -> after.hasAll(second));
            } catch (Common.Fail f) {
                throw new Common.Fail(f.getMessage() + "; missing " + after.missing(second));
            } finally {
                c2.shutdown();
            }
            List<String> replayed = new ArrayList<>();
            for (String s : first) {
                if (after.count(s) > 0) {
                    replayed.add(s);
                }
            }
            check(replayed.isEmpty(), "the restarted consumer received %d already consumed messages: %s",
                replayed.size(), replayed);
            check(after.duplicated(second).isEmpty(), "duplicates: %s", after.duplicated(second));
        } finally {
            p.shutdown();
        }
    }

    /** Sends n messages and records, per queue, the offset after the last one. */
    private static List<String> send(DefaultMQProducer p, String topic, String phase, int n,
        Map<MessageQueue, Long> next) throws Exception {
        List<String> seqs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String seq = phase + "-" + i;
            SendResult r = p.send(Common.msg(topic, "T", seq, Common.utf8(seq)));
            check(r.getSendStatus() == SendStatus.SEND_OK, "send %s not SEND_OK", seq);
            next.merge(r.getMessageQueue(), r.getQueueOffset() + 1, Math::max);
            seqs.add(seq);
        }
        return seqs;
    }
}
