package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Scenario 2: push consumers in one clustering group share the queues. Two consumers get every
 * message exactly once between them; a third joins and later leaves, and no message is lost
 * across either rebalance (duplicates are tolerated only while queues move).
 */
final class Clustering {
    private static final long WAIT_MS = 60000;

    private Clustering() {
    }

    /** One consumer of the group with its own client instance, as if it were its own process. */
    private static final class Member {
        final String name;
        final Common.Received got = new Common.Received();
        final DefaultMQPushConsumer consumer;

        Member(Common.Args a, String group, String topic, String name) throws Exception {
            this.name = name;
            this.consumer = Common.pushConsumer(a, group, name, topic, "*", got);
            consumer.start();
        }

        /** The queues of the topic this member pulls now (its %RETRY% queue left out). */
        Set<MessageQueue> queues(String topic) {
            Set<MessageQueue> out = new HashSet<>();
            for (MessageQueue mq : consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable()
                .keySet()) {
                if (mq.getTopic().equals(topic)) {
                    out.add(mq);
                }
            }
            return out;
        }
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("clustering");
        String group = a.group("clustering");
        DefaultMQProducer p = Common.producer(a, a.group("clustering_p"));
        List<String> all = new ArrayList<>();
        List<Member> members = new ArrayList<>();
        try {
            // The topic exists before anyone subscribes, so the first rebalance sees its queues.
            send(p, topic, "warmup", 1, all);
            Set<MessageQueue> queues = new HashSet<>(p.fetchPublishMessageQueues(topic));
            members.add(new Member(a, group, topic, "c1"));
            members.add(new Member(a, group, topic, "c2"));
            awaitBalanced(members, queues);

            List<String> steady = send(p, topic, "steady", 100, all);
            awaitAll(members, steady);
            checkExactlyOnce(members, steady, "with two consumers");
            for (Member m : members) {
                check(steady.stream().anyMatch(s -> m.got.count(s) > 0), "%s received none of the steady messages",
                    m.name);
            }

            // A third member joins while messages keep coming.
            members.add(new Member(a, group, topic, "c3"));
            List<String> joining = send(p, topic, "joining", 50, all);
            awaitBalanced(members, queues);
            awaitAll(members, joining);
            List<String> three = send(p, topic, "three", 60, all);
            awaitAll(members, three);
            checkExactlyOnce(members, three, "with three consumers");
            Member c3 = members.get(2);
            check(three.stream().anyMatch(s -> c3.got.count(s) > 0), "c3 received none of its queues' messages");

            // It leaves cleanly; its queues go back to the others.
            c3.consumer.shutdown();
            members.remove(c3);
            List<String> leaving = send(p, topic, "leaving", 50, all);
            awaitBalanced(members, queues);
            List<String> after = send(p, topic, "after", 40, all);
            List<Member> everyone = new ArrayList<>(members);
            everyone.add(c3);
            awaitAll(everyone, leaving);
            awaitAll(members, after);
            checkExactlyOnce(members, after, "after c3 left");
            awaitAll(everyone, all);
        } finally {
            for (Member m : members) {
                m.consumer.shutdown();
            }
            p.shutdown();
        }
    }

    private static List<String> send(DefaultMQProducer p, String topic, String phase, int n, List<String> all)
        throws Exception {
        List<String> seqs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String seq = phase + "-" + i;
            check(p.send(Common.msg(topic, "T", seq, Common.utf8(seq))).getSendStatus() == SendStatus.SEND_OK,
                "send %s not SEND_OK", seq);
            seqs.add(seq);
        }
        all.addAll(seqs);
        log("sent %d %s messages", n, phase);
        return seqs;
    }

    /** Every queue owned by exactly one member, and every member owning at least one. */
    private static boolean balanced(List<Member> members, Set<MessageQueue> queues) {
        Set<MessageQueue> union = new HashSet<>();
        int total = 0;
        for (Member m : members) {
            Set<MessageQueue> mine = m.queues(queues.iterator().next().getTopic());
            if (mine.isEmpty()) {
                return false;
            }
            total += mine.size();
            union.addAll(mine);
        }
        return total == queues.size() && union.equals(queues);
    }

    private static void awaitBalanced(List<Member> members, Set<MessageQueue> queues) throws Exception {
        try {
            // Stable for longer than one rebalance interval, so no member acts on a stale view.
            long[] since = {0};
            Common.waitUntil(members.size() + " consumers to split " + queues.size() + " queues", WAIT_MS, () -> {
                if (!balanced(members, queues)) {
                    since[0] = 0;
                } else if (since[0] == 0) {
                    since[0] = System.currentTimeMillis();
                }
                return since[0] != 0 && System.currentTimeMillis() - since[0] > 1200;
            });
        } catch (Common.Fail f) {
            StringBuilder sb = new StringBuilder(f.getMessage()).append("; assignment:");
            for (Member m : members) {
                sb.append(' ').append(m.name).append('=').append(m.queues(queues.iterator().next().getTopic()));
            }
            throw new Common.Fail(sb.toString());
        }
        log("balanced over %d consumers", members.size());
    }

    private static void awaitAll(List<Member> members, List<String> seqs) throws Exception {
        try {
            Common.waitUntil(seqs.size() + " messages to arrive", WAIT_MS, () -> seqs.stream()
                .allMatch(s -> members.stream().anyMatch(m -> m.got.count(s) > 0)));
        } catch (Common.Fail f) {
            List<String> missing = new ArrayList<>();
            for (String s : seqs) {
                if (members.stream().noneMatch(m -> m.got.count(s) > 0)) {
                    missing.add(s);
                }
            }
            throw new Common.Fail(f.getMessage() + "; lost: " + missing);
        }
    }

    private static void checkExactlyOnce(List<Member> members, List<String> seqs, String when) {
        List<String> dups = new ArrayList<>();
        for (String s : seqs) {
            int n = 0;
            for (Member m : members) {
                n += m.got.count(s);
            }
            if (n != 1) {
                dups.add(s + "x" + n);
            }
        }
        check(dups.isEmpty(), "%s: delivered more than once in steady state: %s", when, dups);
    }
}
