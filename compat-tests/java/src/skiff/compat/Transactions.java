package skiff.compat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Transactional messages with TransactionMQProducer. Every message says, in user properties, what
 * its local transaction returns ("local") and what the producer answers when the broker checks
 * it ("check"); the scenarios then prove what a consumer gets.
 */
final class Transactions {
    private Transactions() {
    }

    /** The kinds of message the scenarios send: local outcome, then the check's answer. */
    private static final String[][] KINDS = {
        {"commit", "COMMIT_MESSAGE", "COMMIT_MESSAGE"},
        {"rollback", "ROLLBACK_MESSAGE", "ROLLBACK_MESSAGE"},
        {"check-commit", "UNKNOW", "COMMIT_MESSAGE"},
        {"check-rollback", "UNKNOW", "ROLLBACK_MESSAGE"},
    };

    /** How often the broker asked about each SEQ. */
    static final class Checks {
        final Map<String, Integer> bySeq = new ConcurrentHashMap<>();

        int of(String seq) {
            return bySeq.getOrDefault(seq, 0);
        }
    }

    /**
     * A started TransactionMQProducer of `group`. With `answerChecks` it answers a check with the
     * message's "check" property, otherwise always UNKNOW.
     */
    static TransactionMQProducer producer(Common.Args a, String group, boolean answerChecks, Checks checks)
        throws Exception {
        TransactionMQProducer p = new TransactionMQProducer(group);
        Common.tune(p, a, group + "_tp");
        p.setSendMsgTimeout(10000);
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.valueOf(msg.getUserProperty("local"));
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String seq = msg.getUserProperty(Common.SEQ);
                if (seq != null) {
                    checks.bySeq.merge(seq, 1, Integer::sum);
                }
                if (!answerChecks || msg.getUserProperty("check") == null) {
                    return LocalTransactionState.UNKNOW;
                }
                return LocalTransactionState.valueOf(msg.getUserProperty("check"));
            }
        });
        p.start();
        return p;
    }

    static Message message(String topic, String kind, String seq) {
        Message m = Common.msg(topic, "Tx_" + kind, seq, Common.utf8("body of " + seq));
        m.setKeys("key_" + seq);
        m.putUserProperty("kind", kind);
        for (String[] k : KINDS) {
            if (k[0].equals(kind)) {
                m.putUserProperty("local", k[1]);
                m.putUserProperty("check", k[2]);
            }
        }
        return m;
    }

    /** Sends `n` messages of each kind and checks each send result; returns the SEQs per kind. */
    static Map<String, List<String>> sendAll(TransactionMQProducer p, String topic, String prefix, int n)
        throws Exception {
        Map<String, List<String>> seqs = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            for (String[] k : KINDS) {
                String seq = prefix + k[0] + "-" + i;
                seqs.computeIfAbsent(k[0], x -> new ArrayList<>()).add(seq);
                TransactionSendResult r = p.sendMessageInTransaction(message(topic, k[0], seq), null);
                Common.check(r.getSendStatus() == SendStatus.SEND_OK, "%s: send status %s", seq, r.getSendStatus());
                Common.check(r.getLocalTransactionState() == LocalTransactionState.valueOf(k[1]),
                    "%s: local state %s", seq, r.getLocalTransactionState());
                Common.check(r.getTransactionId() != null && r.getMsgId() != null, "%s: no transaction id", seq);
            }
        }
        return seqs;
    }

    static List<String> concat(Map<String, List<String>> seqs, String... kinds) {
        List<String> out = new ArrayList<>();
        for (String k : kinds) {
            out.addAll(seqs.get(k));
        }
        return out;
    }

    /**
     * Reads the topic from the start with a new group and checks that exactly `delivered` arrived,
     * once each, with their body, tags, keys and user properties; none of `never`.
     */
    static void verifyDelivered(Common.Args a, String group, String topic, List<String> delivered,
        List<String> never) throws Exception {
        Common.Received got = Common.readAllFromStart(a, group, topic, delivered, 90_000);
        List<String> dup = got.duplicated(delivered);
        Common.check(dup.isEmpty(), "delivered more than once: %s", dup);
        for (String seq : never) {
            Common.check(got.count(seq) == 0, "%s was rolled back but delivered", seq);
        }
        Common.check(got.bySeq.size() == delivered.size(), "expected %d messages, got %s", delivered.size(),
            got.bySeq.keySet());
        for (String seq : delivered) {
            MessageExt m = got.bySeq.get(seq).get(0);
            Common.check(m.getTopic().equals(topic), "%s: topic %s", seq, m.getTopic());
            Common.check(new String(m.getBody(), java.nio.charset.StandardCharsets.UTF_8).equals("body of " + seq),
                "%s: body", seq);
            String kind = m.getUserProperty("kind");
            Common.check(("Tx_" + kind).equals(m.getTags()), "%s: tags %s", seq, m.getTags());
            Common.check(("key_" + seq).equals(m.getKeys()), "%s: keys %s", seq, m.getKeys());
            Common.check(m.getProperty(MessageConst.PROPERTY_PRODUCER_GROUP) != null, "%s: no PGROUP", seq);
            Common.check(m.getProperty(MessageConst.PROPERTY_TRANSACTION_PREPARED) != null,
                "%s: no TRAN_MSG (Java keeps the half's properties)", seq);
            Common.check(topic.equals(m.getProperty(MessageConst.PROPERTY_REAL_TOPIC)), "%s: REAL_TOPIC %s", seq,
                m.getProperty(MessageConst.PROPERTY_REAL_TOPIC));
            Common.check(m.getProperty("__transactionId__") != null, "%s: no __transactionId__", seq);
            Common.check((m.getSysFlag() & 0xC) == 0x8, "%s: sysFlag %d is not a commit", seq, m.getSysFlag());
            Common.log("delivered %s", Common.describe(m));
        }
    }

    /** Commit and rollback in the local transaction, then UNKNOW resolved by the check. */
    static void local(Common.Args a) throws Exception {
        String topic = a.topic("tx");
        Checks checks = new Checks();
        TransactionMQProducer p = producer(a, a.group("txp"), true, checks);
        try {
            Map<String, List<String>> seqs = sendAll(p, topic, "", 4);
            List<String> checked = concat(seqs, "check-commit", "check-rollback");
            Common.waitUntil("every UNKNOW message checked", 90_000,
                () -> checked.stream().allMatch(s -> checks.of(s) > 0));
            verifyDelivered(a, a.group("txc"), topic, concat(seqs, "commit", "check-commit"),
                concat(seqs, "rollback", "check-rollback"));
            for (String seq : checked) {
                Common.check(checks.of(seq) == 1, "%s checked %d times after its answer", seq, checks.of(seq));
            }
        } finally {
            p.shutdown();
        }
    }

    /**
     * CHECK_IMMUNITY_TIME_IN_SECONDS: an UNKNOW message is not checked before its own immunity
     * (longer than transactionTimeOut), then the check's commit delivers it once.
     */
    static void immunity(Common.Args a) throws Exception {
        String topic = a.topic("txi");
        int immunitySecs = a.getInt("immunity", 8);
        Checks checks = new Checks();
        Map<String, Long> firstCheck = new ConcurrentHashMap<>();
        TransactionMQProducer p = new TransactionMQProducer(a.group("txip"));
        Common.tune(p, a, a.group("txip") + "_tp");
        p.setSendMsgTimeout(10000);
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.UNKNOW;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String seq = msg.getUserProperty(Common.SEQ);
                firstCheck.putIfAbsent(seq, System.currentTimeMillis());
                checks.bySeq.merge(seq, 1, Integer::sum);
                return LocalTransactionState.COMMIT_MESSAGE;
            }
        });
        p.start();
        try {
            Map<String, Long> sent = new TreeMap<>();
            for (int i = 0; i < 2; i++) {
                String seq = "immune-" + i;
                Message m = message(topic, "check-commit", seq);
                m.putUserProperty(MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS, String.valueOf(immunitySecs));
                sent.put(seq, System.currentTimeMillis());
                TransactionSendResult r = p.sendMessageInTransaction(m, null);
                Common.check(r.getSendStatus() == SendStatus.SEND_OK, "send status %s", r.getSendStatus());
            }
            List<String> seqs = new ArrayList<>(sent.keySet());
            verifyDelivered(a, a.group("txic"), topic, seqs, List.of());
            for (String seq : seqs) {
                long after = firstCheck.get(seq) - sent.get(seq);
                Common.log("%s first checked %d ms after its send", seq, after);
                Common.check(after >= immunitySecs * 1000L - 500, "%s checked after %d ms, within its immunity of %d s",
                    seq, after, immunitySecs);
                Common.check(checks.of(seq) == 1, "%s checked %d times", seq, checks.of(seq));
            }
        } finally {
            p.shutdown();
        }
    }

    /** A producer that never decides: checked `--check-max` times, then the half is discarded. */
    static void never(Common.Args a) throws Exception {
        String topic = a.topic("txn");
        int max = a.getInt("check-max", 15);
        Checks checks = new Checks();
        TransactionMQProducer p = producer(a, a.group("txnp"), false, checks);
        try {
            List<String> seqs = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                String seq = a.id() + "-never-" + i;
                seqs.add(seq);
                Message m = message(topic, "check-commit", seq);
                TransactionSendResult r = p.sendMessageInTransaction(m, null);
                Common.check(r.getSendStatus() == SendStatus.SEND_OK, "send status %s", r.getSendStatus());
            }
            Common.waitUntil("every half checked " + max + " times", 120_000,
                () -> seqs.stream().allMatch(s -> checks.of(s) >= max));
            Common.Received discarded = null;
            long deadline = System.currentTimeMillis() + 60_000;
            for (int attempt = 0; discarded == null; attempt++) {
                try {
                    discarded = Common.readAllFromStart(a, a.group("txnmax" + attempt), "TRANS_CHECK_MAX_TIME_TOPIC",
                        seqs, 30_000);
                } catch (MQClientException e) {
                    // The broker creates the topic with the first discard; its route follows.
                    Common.check(System.currentTimeMillis() < deadline, "no route of TRANS_CHECK_MAX_TIME_TOPIC: %s", e);
                    Thread.sleep(500);
                }
            }
            for (String seq : seqs) {
                MessageExt m = discarded.bySeq.get(seq).get(0);
                Common.check(topic.equals(m.getProperty(MessageConst.PROPERTY_REAL_TOPIC)), "%s: REAL_TOPIC %s", seq,
                    m.getProperty(MessageConst.PROPERTY_REAL_TOPIC));
                Common.check(String.valueOf(max).equals(m.getProperty("TRANSACTION_CHECK_TIMES")),
                    "%s: TRANSACTION_CHECK_TIMES %s", seq, m.getProperty("TRANSACTION_CHECK_TIMES"));
                Common.log("discarded %s", Common.describe(m));
            }
            // Nothing more is asked once discarded.
            Map<String, Integer> before = new TreeMap<>(checks.bySeq);
            Thread.sleep(3000);
            Common.check(before.equals(new TreeMap<>(checks.bySeq)), "checked after the discard: %s -> %s", before,
                checks.bySeq);
            for (String seq : seqs) {
                Common.check(checks.of(seq) == max, "%s checked %d times, expected %d", seq, checks.of(seq), max);
            }
            // A committed message on the same topic, read after it, shows what was delivered.
            String sentinel = a.id() + "-sentinel";
            p.sendMessageInTransaction(message(topic, "commit", sentinel), null);
            Common.Received real = Common.readAllFromStart(a, a.group("txnc"), topic, List.of(sentinel), 60_000);
            Common.check(real.bySeq.keySet().equals(java.util.Set.of(sentinel)), "undecided messages were delivered: %s",
                real.bySeq.keySet());
        } finally {
            p.shutdown();
        }
    }

    /**
     * Before a broker restart: committed, rolled back, and UNKNOW messages whose producer goes
     * away without answering. Waits until the committed ones are readable, so they were stored.
     */
    static void restartProduce(Common.Args a) throws Exception {
        String topic = a.topic("txr");
        Checks checks = new Checks();
        TransactionMQProducer p = producer(a, a.group("txrp"), false, checks);
        Map<String, List<String>> seqs = sendAll(p, topic, "", 5);
        Common.readAllFromStart(a, a.group("txr_pre"), topic, seqs.get("commit"), 60_000);
        // No shutdown: the producer vanishes, as a crashed one would; Main halts the JVM.
    }

    /** After the restart: a producer of the same group answers the checks of the pending ones. */
    static void restartVerify(Common.Args a) throws Exception {
        String topic = a.topic("txr");
        Checks checks = new Checks();
        TransactionMQProducer p = producer(a, a.group("txrp"), true, checks);
        try {
            Map<String, List<String>> seqs = new TreeMap<>();
            for (String[] k : KINDS) {
                for (int i = 0; i < 5; i++) {
                    seqs.computeIfAbsent(k[0], x -> new ArrayList<>()).add(k[0] + "-" + i);
                }
            }
            // A first send makes the 5.x client learn the broker's address, so that it
            // heartbeats there as a producer of the group and can be asked about the others.
            String warmup = "warmup-" + a.id();
            p.sendMessageInTransaction(message(topic, "commit", warmup), null);
            seqs.get("commit").add(warmup);
            List<String> pending = concat(seqs, "check-commit", "check-rollback");
            Common.waitUntil("every pending message checked", 120_000,
                () -> pending.stream().allMatch(s -> checks.of(s) > 0));
            verifyDelivered(a, a.group("txr_post"), topic, concat(seqs, "commit", "check-commit"),
                concat(seqs, "rollback", "check-rollback"));
        } finally {
            p.shutdown();
        }
    }
}
