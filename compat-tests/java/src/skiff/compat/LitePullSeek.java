package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Scenario 5: DefaultLitePullConsumer in assign mode reads one queue from a seeked offset and gets
 * exactly the messages stored there, in order; seeking backwards replays from the new offset.
 */
final class LitePullSeek {
    private static final int N = 30;

    private LitePullSeek() {
    }

    static void run(Common.Args a) throws Exception {
        String topic = a.topic("seek");
        DefaultMQProducer p = Common.producer(a, a.group("seek_p"));
        MessageQueue mq;
        try {
            // Create the topic, then fill one of its other, empty queues (offsets 0..N-1).
            int used = p.send(Common.msg(topic, null, "create", Common.utf8("create"))).getMessageQueue().getQueueId();
            List<MessageQueue> mqs = p.fetchPublishMessageQueues(topic);
            check(mqs.size() > 1, "auto-created topic has %d queues", mqs.size());
            mq = mqs.stream().filter(q -> q.getQueueId() != used).findFirst().get();
            long first = -1;
            for (int i = 0; i < N; i++) {
                SendResult r = p.send(Common.msg(topic, null, "m-" + i, Common.utf8("m-" + i)), mq);
                if (first < 0) {
                    first = r.getQueueOffset();
                }
                check(r.getQueueOffset() == first + i, "queue offsets not consecutive: %d after %d", r.getQueueOffset(),
                    first + i - 1);
            }
            check(first == 0, "the first message in an empty queue got offset %d", first);
            mq = new MessageQueue(topic, mq.getBrokerName(), mq.getQueueId());
            DefaultLitePullConsumer c = new DefaultLitePullConsumer(a.group("seek"));
            Common.tune(c, a, "seek");
            c.setAutoCommit(false);
            c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            c.start();
            try {
                c.assign(Collections.singletonList(mq));
                // Read the whole queue first: a seek while the initial pull is in flight can race
                // with it inside the client; once drained, the pull task only waits in a long poll.
                expect(c, mq, first, 0, "the initial read");
                expectFrom(c, mq, first, first + 17);
                expectFrom(c, mq, first, first + 5);
                expectFrom(c, mq, first, first + N - 1);
            } finally {
                c.shutdown();
            }
        } finally {
            p.shutdown();
        }
    }

    /** Seeks to `offset` and expects exactly messages offset..end of the queue, in order. */
    private static void expectFrom(DefaultLitePullConsumer c, MessageQueue mq, long first, long offset)
        throws Exception {
        c.seek(mq, offset);
        expect(c, mq, first, offset, "seek(" + offset + ")");
    }

    /** Polls until the end of the queue and expects exactly messages offset..end, in order. */
    private static void expect(DefaultLitePullConsumer c, MessageQueue mq, long first, long offset, String what)
        throws Exception {
        long end = first + N;
        List<MessageExt> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 30000;
        while (got.size() < end - offset && System.currentTimeMillis() < deadline) {
            got.addAll(c.poll(500));
        }
        check(got.size() >= end - offset, "after %s got %d messages, expected %d", what, got.size(),
            end - offset);
        for (int i = 0; i < got.size(); i++) {
            MessageExt m = got.get(i);
            long want = offset + i;
            check(i < end - offset, "after %s got extra message at %d: %s", what, m.getQueueOffset(),
                m.getUserProperty(Common.SEQ));
            check(m.getQueueOffset() == want, "after %s message %d has queueOffset %d", what, i,
                m.getQueueOffset());
            check(("m-" + (want - first)).equals(m.getUserProperty(Common.SEQ)), "offset %d holds %s, expected m-%d",
                want, m.getUserProperty(Common.SEQ), want - first);
            check(m.getQueueId() == mq.getQueueId(), "message from queue %d", m.getQueueId());
        }
        log("%s returned the %d expected messages", what, got.size());
    }
}
