// Reads a store written by Skiff (examples/write_store.rs) through a running Apache RocketMQ
// broker and checks every message against Skiff's manifest: queue offsets, offset message ids,
// bodies, tags, keys and unique keys (via the IndexFile), then appends one more message.
// Run by check-java-reads-skiff.sh; exits non-zero on the first mismatch.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class Check {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("MISMATCH: " + what);
        }
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String broker = args[1];
        Map<String, List<String[]>> byQueue = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Paths.get(args[2]), StandardCharsets.UTF_8)) {
            String[] f = line.split("\t", -1);
            byQueue.computeIfAbsent(f[0] + "/" + f[1], k -> new ArrayList<>()).add(f);
        }
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.start();
        for (String topic : new String[] {"SkiffA", "SkiffB"}) {
            for (int attempt = 0; ; attempt++) {
                try {
                    admin.createAndUpdateTopicConfig(broker, new TopicConfig(topic, 4, 4, 6));
                    break;
                } catch (Exception e) {
                    if (attempt > 120) {
                        throw e;
                    }
                    Thread.sleep(500);
                }
            }
        }
        DefaultMQPullConsumer consumer = new DefaultMQPullConsumer("check_skiff_store");
        consumer.setNamesrvAddr(namesrv);
        consumer.start();
        for (String topic : new String[] {"SkiffA", "SkiffB"}) {
            for (int attempt = 0; ; attempt++) {
                try {
                    Set<MessageQueue> queues = consumer.fetchSubscribeMessageQueues(topic);
                    if (!queues.isEmpty()) {
                        break;
                    }
                } catch (Exception e) {
                    if (attempt > 60) {
                        throw e;
                    }
                }
                Thread.sleep(500);
            }
        }
        int checked = 0;
        for (Map.Entry<String, List<String[]>> e : byQueue.entrySet()) {
            String[] tq = e.getKey().split("/");
            MessageQueue mq = new MessageQueue(tq[0], "broker-a", Integer.parseInt(tq[1]));
            List<String[]> rows = e.getValue();
            check(consumer.minOffset(mq) == 0, e.getKey() + " min offset " + consumer.minOffset(mq));
            check(consumer.maxOffset(mq) == rows.size(), e.getKey() + " max offset " + consumer.maxOffset(mq));
            long offset = 0;
            while (offset < rows.size()) {
                PullResult r = consumer.pull(mq, "*", offset, 32);
                check(r.getPullStatus() == PullStatus.FOUND, e.getKey() + " pull at " + offset + ": " + r);
                for (MessageExt m : r.getMsgFoundList()) {
                    String[] row = rows.get((int) m.getQueueOffset());
                    check(Long.parseLong(row[2]) == m.getQueueOffset(), "queue offset " + m);
                    String offsetId = ((MessageClientExt) m).getOffsetMsgId();
                    check(row[3].equals(offsetId), "offset msg id " + offsetId + " vs " + row[3]);
                    check(row[4].equals(m.getProperty("UNIQ_KEY")), "uniq key " + m);
                    check(row[5].equals(m.getTags() == null ? "" : m.getTags()), "tags " + m);
                    check(row[6].equals(m.getKeys() == null ? "" : m.getKeys()), "keys " + m);
                    check(row[7].equals(new String(m.getBody(), StandardCharsets.UTF_8)), "body " + m);
                    checked++;
                }
                offset = r.getNextBeginOffset();
            }
        }
        // Tag filtering with the stored tag codes.
        MessageQueue a0 = new MessageQueue("SkiffA", "broker-a", 0);
        int tagged = 0;
        for (long offset = 0; offset < 150; ) {
            PullResult r = consumer.pull(a0, "TagA", offset, 32);
            if (r.getMsgFoundList() != null) {
                tagged += r.getMsgFoundList().size();
            }
            offset = r.getNextBeginOffset();
        }
        check(tagged == 50, "TagA count " + tagged);
        // The IndexFile: keys, unique keys and view by offset id.
        for (String[] row : byQueue.get("SkiffA/0").subList(0, 150)) {
            if (Long.parseLong(row[2]) % 10 != 0) {
                continue;
            }
            String key = row[6].split(" ")[0];
            QueryResult q = consumer.queryMessage("SkiffA", key, 32, 0, Long.MAX_VALUE);
            check(q.getMessageList().size() == 1, "query " + key + " found " + q.getMessageList().size());
            check(row[7].equals(new String(q.getMessageList().get(0).getBody(), StandardCharsets.UTF_8)), "query body " + key);
            MessageExt byUniq = consumer.viewMessage("SkiffA", row[4]);
            check(row[7].equals(new String(byUniq.getBody(), StandardCharsets.UTF_8)), "uniq key " + row[4]);
            MessageExt byId = consumer.viewMessage("SkiffA", row[3]);
            check(row[7].equals(new String(byId.getBody(), StandardCharsets.UTF_8)), "offset id " + row[3]);
        }
        consumer.shutdown();
        // Java appends after Skiff's data.
        DefaultMQProducer producer = new DefaultMQProducer("check_skiff_producer");
        producer.setNamesrvAddr(namesrv);
        producer.start();
        SendResult sent = producer.send(new Message("SkiffA", "TagA", "after".getBytes(StandardCharsets.UTF_8)), a0);
        check(sent.getQueueOffset() == 150, "queue offset of a new message " + sent.getQueueOffset());
        producer.shutdown();
        admin.shutdown();
        System.out.println("OK: " + checked + " messages read by Java as Skiff wrote them");
    }
}
