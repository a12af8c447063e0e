package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The consumer side of the master/slave tests: a push consumer group consumes what "restart-produce"
 * recorded and commits its offsets by a clean shutdown; after the master is killed, the same group
 * started again (a new client instance) consumes the rest from the slave, resuming at the offsets
 * the slave synced from the master.
 */
final class Ha {
    private Ha() {
    }

    /** One recorded acknowledgement: seq, queue id, queue offset. */
    private record Acked(String seq, int queueId, long queueOffset) {
    }

    private static List<Acked> read(String file) throws Exception {
        List<Acked> out = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) {
                String[] f = line.split(" ");
                out.add(new Acked(f[0], Integer.parseInt(f[1]), Long.parseLong(f[2])));
            }
        }
        return out;
    }

    /**
     * Consumes with the group "ha" until every message of --in arrived and the client recorded
     * offsets past them, then shuts down (committing them). With --consumed F, none of the
     * messages recorded in F (consumed and committed before) may arrive again.
     */
    static void consume(Common.Args a) throws Exception {
        String topic = a.topic("restart");
        List<Acked> expected = read(a.get("in"));
        List<Acked> consumed = a.get("consumed", "").isEmpty() ? List.of() : read(a.get("consumed"));
        check(!expected.isEmpty(), "nothing recorded in %s", a.get("in"));
        List<String> seqs = expected.stream().map(Acked::seq).toList();
        Common.Received got = new Common.Received();
        DefaultMQPushConsumer c = Common.pushConsumer(a, a.group("ha"), a.get("instance", "ha"), topic, "*", got);
        c.start();
        try {
            try {
                Common.waitUntil("the consumer to get " + seqs.size(), 90000, () -> got.hasAll(seqs));
            } catch (Common.Fail f) {
                throw new Common.Fail(f.getMessage() + "; missing " + got.missing(seqs));
            }
            // The listener returns before the client records the offset; wait for the record so
            // that the clean shutdown commits all of it.
            Map<Integer, Long> next = new HashMap<>();
            for (Acked r : expected) {
                next.merge(r.queueId(), r.queueOffset() + 1, Math::max);
            }
            var store = c.getDefaultMQPushConsumerImpl().getOffsetStore();
            String broker = a.get("broker-name", "broker-a");
            Common.waitUntil("the consumer to record its offsets " + next, 30000, () -> next.entrySet().stream()
                .allMatch(e -> store.readOffset(new MessageQueue(topic, broker, e.getKey()),
                    ReadOffsetType.READ_FROM_MEMORY) >= e.getValue()));
        } finally {
            c.shutdown();
        }
        List<String> replayed = new ArrayList<>();
        for (Acked r : consumed) {
            if (got.count(r.seq()) > 0) {
                replayed.add(r.seq());
            }
        }
        check(replayed.isEmpty(), "%d already consumed messages arrived again: %s", replayed.size(), replayed);
        log("consumed %d messages and committed their offsets", seqs.size());
    }
}
