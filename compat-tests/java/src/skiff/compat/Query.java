package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * Scenario 9: finding messages through the broker's index. Messages are sent with a key of their
 * own and a key shared by several. DefaultMQAdminExt.queryMessage(topic, key, maxNum, begin, end)
 * finds exactly the messages with that key (at most maxNum, none outside the time range, none for
 * an unknown key); a message is found by its client id (SendResult.getMsgId(), through
 * queryMessageByUniqKey and viewMessage) and by its offset id (SendResult.getOffsetMsgId(),
 * through viewMessage); every copy found is identical to the message as pulled from its queue.
 */
final class Query {
    private static final int COUNT = 24;
    private static final int SHARED_KEYS = 3;
    /** ResponseCode.NO_MESSAGE: what the client reports when no broker found anything. */
    private static final int NO_MESSAGE = 208;

    private Query() {
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("query");
        String id = a.id();
        DefaultMQProducer p = Common.producer(a, a.group("query_p"));
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(a.namesrv());
        admin.setInstanceName("query_admin");
        admin.start();
        try {
            long begin = System.currentTimeMillis() - 1000;
            List<String> seqs = new ArrayList<>();
            Map<String, SendResult> results = new HashMap<>();
            for (int i = 0; i < COUNT; i++) {
                String seq = "q" + i;
                Message m = Common.msg(topic, i % 2 == 0 ? "TagA" : "TagB", seq, Common.utf8("query body " + seq + " ✓"));
                m.setKeys(Arrays.asList("own-" + id + "-" + i, "shared-" + id + "-" + (i % SHARED_KEYS)));
                SendResult r = p.send(m);
                check(r.getSendStatus() == SendStatus.SEND_OK, "send %s: %s", seq, r.getSendStatus());
                seqs.add(seq);
                results.put(seq, r);
            }
            // A second topic holding a message with a key of its own, so that its route exists.
            String other = a.topic("query_other");
            Message o = Common.msg(other, null, "other", Common.utf8("other"));
            o.setKeys("other-" + id);
            check(p.send(o).getSendStatus() == SendStatus.SEND_OK, "send to %s", other);
            long end = System.currentTimeMillis() + 1000;
            Map<String, String> pulled = new HashMap<>();
            for (Map.Entry<String, List<MessageExt>> e : Common.readAllFromStart(a, a.group("query_read"), topic, seqs,
                60000).bySeq.entrySet()) {
                pulled.put(e.getKey(), Common.describe(e.getValue().get(0)));
            }

            // The index may lag behind the send (Java builds it asynchronously): wait for the last.
            String lastKey = "own-" + id + "-" + (COUNT - 1);
            Common.waitUntil("the index to find " + lastKey, 30000, () -> {
                try {
                    return admin.queryMessage(topic, lastKey, 32, begin, end).getMessageList().size() == 1;
                } catch (Exception e) {
                    return false;
                }
            });

            for (int i = 0; i < COUNT; i++) {
                String seq = "q" + i;
                String key = "own-" + id + "-" + i;
                QueryResult byKey = admin.queryMessage(topic, key, 32, begin, end);
                check(byKey.getMessageList().size() == 1, "key %s: %d messages", key, byKey.getMessageList().size());
                same(pulled, seq, byKey.getMessageList().get(0), "by key " + key);
            }
            log("each of %d messages found by its own key", COUNT);

            for (int k = 0; k < SHARED_KEYS; k++) {
                String key = "shared-" + id + "-" + k;
                TreeSet<String> want = new TreeSet<>();
                for (int i = k; i < COUNT; i += SHARED_KEYS) {
                    want.add("q" + i);
                }
                QueryResult all = admin.queryMessage(topic, key, 32, begin, end);
                TreeSet<String> got = new TreeSet<>();
                for (MessageExt m : all.getMessageList()) {
                    check(got.add(m.getUserProperty(Common.SEQ)), "key %s: %s found twice", key, m.getUserProperty(Common.SEQ));
                    same(pulled, m.getUserProperty(Common.SEQ), m, "by key " + key);
                }
                check(got.equals(want), "key %s found %s, expected %s", key, got, want);
                QueryResult two = admin.queryMessage(topic, key, 2, begin, end);
                check(two.getMessageList().size() == 2, "key %s with maxNum 2: %d messages", key,
                    two.getMessageList().size());
                for (MessageExt m : two.getMessageList()) {
                    check(want.contains(m.getUserProperty(Common.SEQ)), "key %s with maxNum 2 found %s", key,
                        m.getUserProperty(Common.SEQ));
                }
            }
            log("each of %d shared keys finds its %d messages, maxNum 2 finds 2", SHARED_KEYS, COUNT / SHARED_KEYS);

            noMessage("an unknown key", () -> admin.queryMessage(topic, "no-such-key-" + id, 32, begin, end));
            noMessage("a time range before the sends",
                () -> admin.queryMessage(topic, "own-" + id + "-0", 32, begin - 3_600_000, begin - 1_800_000));
            noMessage("a key of this topic on another topic",
                () -> admin.queryMessage(other, "own-" + id + "-0", 32, begin, end));

            for (int i = 0; i < COUNT; i++) {
                String seq = "q" + i;
                SendResult r = results.get(seq);
                MessageExt byUniq = p.getDefaultMQProducerImpl().queryMessageByUniqKey(topic, r.getMsgId());
                check(byUniq != null, "uniq id %s of %s: not found", r.getMsgId(), seq);
                check(r.getMsgId().equals(byUniq.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)),
                    "uniq id %s found a message with uniq id %s", r.getMsgId(),
                    byUniq.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
                same(pulled, seq, byUniq, "by uniq id " + r.getMsgId());
                same(pulled, seq, admin.viewMessage(topic, r.getMsgId()), "admin viewMessage(client id " + r.getMsgId() + ")");
                same(pulled, seq, admin.viewMessage(topic, r.getOffsetMsgId()),
                    "admin viewMessage(offset id " + r.getOffsetMsgId() + ")");
                same(pulled, seq, p.viewMessage(topic, r.getOffsetMsgId()),
                    "producer viewMessage(offset id " + r.getOffsetMsgId() + ")");
            }
            log("each of %d messages found by client id and by offset id", COUNT);
        } finally {
            admin.shutdown();
            p.shutdown();
        }
    }

    /** `found` must be the message `seq` exactly as it was pulled from its queue. */
    private static void same(Map<String, String> pulled, String seq, MessageExt found, String how) throws Exception {
        check(found != null, "%s: nothing found", how);
        check(seq.equals(found.getUserProperty(Common.SEQ)), "%s found %s, expected %s", how,
            found.getUserProperty(Common.SEQ), seq);
        String got = Common.describe(found);
        check(got.equals(pulled.get(seq)), "%s: found\n  %s\nbut pulled\n  %s", how, got, pulled.get(seq));
    }

    private interface QueryCall {
        QueryResult call() throws Exception;
    }

    /** The client reports NO_MESSAGE when the broker finds nothing. */
    private static void noMessage(String what, QueryCall q) throws Exception {
        try {
            QueryResult r = q.call();
            throw new Common.Fail("a query for " + what + " found " + r.getMessageList().size() + " messages");
        } catch (MQClientException e) {
            check(e.getResponseCode() == NO_MESSAGE, "a query for %s failed with %d %s, expected NO_MESSAGE (%d)", what,
                e.getResponseCode(), e.getErrorMessage(), NO_MESSAGE);
        }
    }
}
