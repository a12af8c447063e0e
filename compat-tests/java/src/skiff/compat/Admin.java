package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Scenario 8: DefaultMQAdminExt against the broker. The cluster info lists our broker at its
 * address; a topic created with 8 queues is routed with 8 queues; topic stats show the offsets
 * after sending; consume stats of a group show it caught up after consuming.
 * The result classes moved package in 5.x, so their values are held in `var`s.
 */
final class Admin {
    private static final int QUEUES = 8;
    private static final int PER_QUEUE = 3;

    private Admin() {
    }

    static void run(Common.Args a) throws Exception {
        String broker = a.get("broker");
        String topic = a.topic("admin");
        String group = a.group("admin");
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(a.namesrv());
        admin.setInstanceName("admin");
        admin.start();
        try {
            String brokerName = clusterInfo(admin, broker);
            admin.createAndUpdateTopicConfig(broker, new TopicConfig(topic, QUEUES, QUEUES, 6));
            Common.waitUntil("the route of " + topic + " to show " + QUEUES + " queues", 30000, () -> {
                try {
                    var route = admin.examineTopicRouteInfo(topic);
                    return route.getQueueDatas().size() == 1 && route.getQueueDatas().get(0).getWriteQueueNums() == QUEUES
                        && route.getQueueDatas().get(0).getReadQueueNums() == QUEUES;
                } catch (Exception e) {
                    return false;
                }
            });
            log("topic %s created with %d queues", topic, QUEUES);

            List<String> seqs = new ArrayList<>();
            DefaultMQProducer p = Common.producer(a, a.group("admin_p"));
            try {
                for (int q = 0; q < QUEUES; q++) {
                    for (int i = 0; i < PER_QUEUE; i++) {
                        String seq = "q" + q + "-" + i;
                        var r = p.send(Common.msg(topic, "T", seq, Common.utf8(seq)), new MessageQueue(topic, brokerName, q));
                        check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", seq, r.getSendStatus());
                        seqs.add(seq);
                    }
                }
            } finally {
                p.shutdown();
            }

            var stats = admin.examineTopicStats(topic);
            check(stats.getOffsetTable().size() == QUEUES, "topic stats list %d queues: %s",
                stats.getOffsetTable().size(), stats.getOffsetTable());
            for (var e : stats.getOffsetTable().entrySet()) {
                check(e.getKey().getTopic().equals(topic) && e.getKey().getBrokerName().equals(brokerName),
                    "topic stats key %s", e.getKey());
                check(e.getValue().getMinOffset() == 0 && e.getValue().getMaxOffset() == PER_QUEUE,
                    "queue %d: min %d max %d, expected 0 and %d", e.getKey().getQueueId(), e.getValue().getMinOffset(),
                    e.getValue().getMaxOffset(), PER_QUEUE);
                check(e.getValue().getLastUpdateTimestamp() > 0, "queue %d: no last update time",
                    e.getKey().getQueueId());
            }
            log("topic stats: %d queues with %d messages each", QUEUES, PER_QUEUE);

            Common.Received got = new Common.Received();
            DefaultMQPushConsumer c = Common.pushConsumer(a, group, "admin_c", topic, "*", got);
            c.start();
            try {
                Common.waitUntil("the consumer to receive " + seqs.size(), 60000, () -> got.hasAll(seqs));
                // Offsets reach the broker on shutdown (the periodic commit starts only after 10 s).
                var store = c.getDefaultMQPushConsumerImpl().getOffsetStore();
                Common.waitUntil("the consumer to record its offsets", 30000, () -> {
                    for (int q = 0; q < QUEUES; q++) {
                        if (store.readOffset(new MessageQueue(topic, brokerName, q), ReadOffsetType.READ_FROM_MEMORY)
                            != PER_QUEUE) {
                            return false;
                        }
                    }
                    return true;
                });
            } finally {
                c.shutdown();
            }
            Common.waitUntil("consume stats to show the group caught up", 30000, () -> caughtUp(admin, group, topic));
            log("consume stats show %s caught up on all %d queues", group, QUEUES);
        } finally {
            admin.shutdown();
        }
    }

    /** Returns the name of the broker listed at `broker`; fails if the cluster info lacks it. */
    private static String clusterInfo(DefaultMQAdminExt admin, String broker) throws Exception {
        var info = admin.examineBrokerClusterInfo();
        for (var e : info.getBrokerAddrTable().entrySet()) {
            var data = e.getValue();
            if (broker.equals(data.getBrokerAddrs().get(0L))) {
                boolean inCluster = info.getClusterAddrTable().values().stream().anyMatch(s -> s.contains(e.getKey()));
                check(inCluster, "broker %s is in no cluster: %s", e.getKey(), info.getClusterAddrTable());
                log("cluster info lists broker %s at %s in cluster %s", e.getKey(), broker, data.getCluster());
                return e.getKey();
            }
        }
        throw new Common.Fail("cluster info does not list a master at " + broker + ": " + info.getBrokerAddrTable());
    }

    private static boolean caughtUp(DefaultMQAdminExt admin, String group, String topic) {
        try {
            var cs = admin.examineConsumeStats(group);
            int seen = 0;
            for (var e : cs.getOffsetTable().entrySet()) {
                if (!e.getKey().getTopic().equals(topic)) {
                    continue;
                }
                seen++;
                if (e.getValue().getBrokerOffset() != PER_QUEUE || e.getValue().getConsumerOffset() != PER_QUEUE) {
                    return false;
                }
            }
            return seen == QUEUES && cs.computeTotalDiff() == 0;
        } catch (Exception e) {
            return false;
        }
    }
}
