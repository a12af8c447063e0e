package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;

/**
 * Scenario 4: a subscription "TagA || TagB" receives all TagA and TagB messages and nothing else,
 * while a "*" group on the same topic receives everything (so the others were really stored).
 */
final class TagFilter {
    private static final String[] TAGS = {"TagA", "TagB", "TagC", "TagAB", "taga", null};

    private TagFilter() {
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("tags");
        DefaultMQProducer p = Common.producer(a, a.group("tags_p"));
        List<String> all = new ArrayList<>();
        List<String> wanted = new ArrayList<>();
        List<String> unwanted = new ArrayList<>();
        Common.Received filtered = new Common.Received();
        Common.Received everything = new Common.Received();
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        try {
            for (int i = 0; i < 60; i++) {
                String tag = TAGS[i % TAGS.length];
                String seq = (tag == null ? "none" : tag) + "-" + i;
                check(p.send(Common.msg(topic, tag, seq, Common.utf8(seq))).getSendStatus() == SendStatus.SEND_OK,
                    "send %s not SEND_OK", seq);
                all.add(seq);
                ("TagA".equals(tag) || "TagB".equals(tag) ? wanted : unwanted).add(seq);
            }
            consumers.add(Common.pushConsumer(a, a.group("tags_ab"), "tags_ab", topic, "TagA || TagB", filtered));
            consumers.add(Common.pushConsumer(a, a.group("tags_all"), "tags_all", topic, "*", everything));
            for (DefaultMQPushConsumer c : consumers) {
                c.start();
            }
            Common.waitUntil("the \"*\" group to receive all " + all.size(), 60000, () -> everything.hasAll(all));
            Common.waitUntil("the TagA || TagB group to receive all " + wanted.size(), 60000,
                () -> filtered.hasAll(wanted));
            List<String> leaked = new ArrayList<>();
            for (String s : unwanted) {
                if (filtered.count(s) > 0) {
                    leaked.add(s);
                }
            }
            check(leaked.isEmpty(), "TagA || TagB subscription received other tags: %s", leaked);
            check(filtered.duplicated(wanted).isEmpty(), "duplicates: %s", filtered.duplicated(wanted));
            log("filtered group got %d of %d messages", wanted.size(), all.size());
        } finally {
            for (DefaultMQPushConsumer c : consumers) {
                c.shutdown();
            }
            p.shutdown();
        }
    }
}
