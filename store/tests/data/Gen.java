// Sends a fixed, varied set of messages to a running Apache RocketMQ broker and writes what was
// sent (and where the broker put it) to a manifest, one line per message:
//   topic \t queueId \t queueOffset \t offsetMsgId \t uniqKey \t tags \t keys \t body
// Run by make-java-store.sh; see there.

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class Gen {
    static final List<String> lines = new ArrayList<>();

    static String body(int i, int len) {
        StringBuilder b = new StringBuilder("msg-" + i + "-");
        while (b.length() < len) {
            b.append((char) ('a' + (b.length() % 26)));
        }
        return b.toString();
    }

    static void record(Message m, SendResult r) {
        if (r.getSendStatus() != SendStatus.SEND_OK) {
            throw new IllegalStateException("send failed: " + r);
        }
        lines.add(String.join("\t", m.getTopic(), String.valueOf(r.getMessageQueue().getQueueId()),
            String.valueOf(r.getQueueOffset()), r.getOffsetMsgId(), r.getMsgId(),
            m.getTags() == null ? "" : m.getTags(), m.getKeys() == null ? "" : m.getKeys(),
            new String(m.getBody(), StandardCharsets.UTF_8)));
    }

    static SendResult sendRetrying(DefaultMQProducer p, Message m, MessageQueue q) throws Exception {
        for (int attempt = 0; ; attempt++) {
            try {
                return q == null ? p.send(m) : p.send(m, q);
            } catch (Exception e) {
                if (attempt > 40) {
                    throw e;
                }
                Thread.sleep(500);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        DefaultMQProducer p = new DefaultMQProducer("gen_producer");
        p.setNamesrvAddr(namesrv);
        p.setCompressMsgBodyOverHowmuch(1 << 30);
        p.start();
        int n = 0;
        // Topic A, queue 0: enough messages to fill several ConsumeQueue files and segments.
        for (int i = 0; i < 150; i++, n++) {
            Message m = new Message("JavaA", i % 3 == 0 ? "TagA" : "TagB", "key-" + i + " shared",
                body(n, 40 + (i * 97) % 1500).getBytes(StandardCharsets.UTF_8));
            record(m, sendRetrying(p, m, new MessageQueue("JavaA", "broker-a", 0)));
        }
        // Topic B, several queues, no tags.
        for (int i = 0; i < 40; i++, n++) {
            Message m = new Message("JavaB", body(n, 10 + i).getBytes(StandardCharsets.UTF_8));
            m.setKeys("b" + i);
            record(m, sendRetrying(p, m, new MessageQueue("JavaB", "broker-a", i % 4)));
        }
        // A batch.
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 5; i++, n++) {
            batch.add(new Message("JavaB", "Batch", "batch-" + i, body(n, 100).getBytes(StandardCharsets.UTF_8)));
        }
        SendResult br = p.send(batch, new MessageQueue("JavaB", "broker-a", 1));
        String[] offsetIds = br.getOffsetMsgId().split(",");
        String[] uniqIds = br.getMsgId().split(",");
        for (int i = 0; i < batch.size(); i++) {
            Message m = batch.get(i);
            lines.add(String.join("\t", m.getTopic(), "1", String.valueOf(br.getQueueOffset() + i),
                offsetIds[i], uniqIds[i], m.getTags(), m.getKeys(), new String(m.getBody(), StandardCharsets.UTF_8)));
        }
        // A delayed message (level 1 = 1 s): stored in SCHEDULE_TOPIC_XXXX, then re-put.
        Message delayed = new Message("JavaDelay", "Later", "delayed-key", body(n++, 64).getBytes(StandardCharsets.UTF_8));
        delayed.setDelayTimeLevel(1);
        record(delayed, sendRetrying(p, delayed, null));
        p.shutdown();

        // A committed transaction: a half message, then the commit record and an op message.
        TransactionMQProducer t = new TransactionMQProducer("gen_tx_producer");
        t.setNamesrvAddr(namesrv);
        t.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        t.start();
        Message tx = new Message("JavaTx", "Tx", "tx-key", body(n++, 80).getBytes(StandardCharsets.UTF_8));
        SendResult tr = t.sendMessageInTransaction(tx, null);
        record(tx, tr);
        t.shutdown();
        Files.write(Paths.get(args[1]), lines, StandardCharsets.UTF_8);
        System.out.println("sent " + lines.size() + " messages");
    }
}
