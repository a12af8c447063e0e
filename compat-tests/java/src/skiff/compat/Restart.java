package skiff.compat;

import static skiff.compat.Common.check;
import static skiff.compat.Common.log;

import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Scenario 7, in two phases around a broker stop that the harness performs (SIGTERM or kill -9):
 * "restart-produce" sends messages and records every acknowledged one (SEND_OK) in a file, and
 * "restart-verify" checks after the restart that each recorded message is still stored at the
 * queue offset it was acknowledged with, and that new sends continue after them. The HA tests use
 * the same phases around a master kill, verifying on the slave without new sends.
 */
final class Restart {
    private Restart() {
    }

    /** One acknowledged message: seq, queue, queue offset, msgId. */
    private static final class Acked {
        final String seq;
        final int queueId;
        final long queueOffset;
        final String msgId;

        Acked(String line) {
            String[] f = line.split(" ");
            seq = f[0];
            queueId = Integer.parseInt(f[1]);
            queueOffset = Long.parseLong(f[2]);
            msgId = f[3];
        }
    }

    /**
     * Sends up to --count messages, appending each acknowledged one to --out as `seq queueId
     * queueOffset msgId offsetMsgId` (with
     * --wait-store-ok false the messages do not ask a SYNC_MASTER to wait for its slave). With
     * --stop-after-failures K it stops after K consecutive failed sends (the broker was killed
     * under it) instead of failing.
     */
    static void produce(Common.Args a) throws Exception {
        String topic = a.topic("restart");
        int count = a.getInt("count", 200);
        int stopAfterFailures = a.getInt("stop-after-failures", 0);
        // Between sends, so that a producer spans a cutover.
        int pauseMs = a.getInt("pause-ms", 0);
        String prefix = a.get("prefix", "m");
        // false: a SYNC_MASTER answers without waiting for its slave (WAIT property).
        boolean waitStoreOk = Boolean.parseBoolean(a.get("wait-store-ok", "true"));
        DefaultMQProducer p = Common.producer(a, a.group("restart_p"));
        p.setSendMsgTimeout(3000);
        p.setRetryTimesWhenSendFailed(0);
        int acked = 0;
        int failures = 0;
        try (BufferedWriter out = Files.newBufferedWriter(Paths.get(a.get("out")), StandardCharsets.UTF_8,
            StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
            // --first: sequence numbers go on from an earlier run (records of the same sizes).
            int first = a.getInt("first", 0);
            for (int i = first; i < first + count; i++) {
                if (pauseMs > 0 && i > first) {
                    Thread.sleep(pauseMs);
                }
                String seq = prefix + "-" + i;
                SendResult r;
                try {
                    var m = Common.msg(topic, "T", seq, Common.utf8("restart body " + seq));
                    m.setWaitStoreMsgOK(waitStoreOk);
                    r = p.send(m);
                } catch (Exception e) {
                    check(stopAfterFailures > 0, "send %s failed: %s", seq, e);
                    if (++failures >= stopAfterFailures) {
                        log("stopping after %d consecutive failures (%s)", failures, e);
                        break;
                    }
                    continue;
                }
                failures = 0;
                if (r.getSendStatus() == SendStatus.SEND_OK) {
                    // The offset msgId names the broker that stored it (its address, then the offset).
                    out.write(seq + " " + r.getMessageQueue().getQueueId() + " " + r.getQueueOffset() + " "
                        + r.getMsgId() + " " + r.getOffsetMsgId() + "\n");
                    out.flush();
                    acked++;
                } else {
                    check(stopAfterFailures > 0, "send %s: %s", seq, r.getSendStatus());
                }
            }
        } finally {
            p.shutdown();
        }
        log("%d messages acknowledged", acked);
        check(acked > 0, "no message was acknowledged");
    }

    /** Checks what --in recorded; then sends more and reads them back, unless --send-after false. */
    static void verify(Common.Args a) throws Exception {
        String topic = a.topic("restart");
        Map<String, Acked> acked = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Paths.get(a.get("in")), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) {
                Acked r = new Acked(line);
                acked.put(r.seq, r);
            }
        }
        check(!acked.isEmpty(), "nothing recorded in %s", a.get("in"));
        log("verifying %d acknowledged messages", acked.size());
        Common.Received got = Common.readAllFromStart(a, a.group("restart_v"), topic, acked.keySet(), 60000);
        Map<Integer, Long> maxOffset = new HashMap<>();
        for (Acked r : acked.values()) {
            MessageExt m = got.bySeq.get(r.seq).get(0);
            check(m.getQueueId() == r.queueId && m.getQueueOffset() == r.queueOffset,
                "%s was acknowledged at queue %d offset %d but is stored at queue %d offset %d", r.seq, r.queueId,
                r.queueOffset, m.getQueueId(), m.getQueueOffset());
            check(m.getMsgId().equals(r.msgId), "%s: msgId %s, acknowledged as %s", r.seq, m.getMsgId(), r.msgId);
            check(got.count(r.seq) == 1, "%s stored %d times", r.seq, got.count(r.seq));
            maxOffset.merge(r.queueId, r.queueOffset, Math::max);
        }

        if (!Boolean.parseBoolean(a.get("send-after", "true"))) {
            log("all %d acknowledged messages are stored where they were acknowledged", acked.size());
            return;
        }
        // The restarted broker keeps appending after what it had, and serves the new messages.
        DefaultMQProducer p = Common.producer(a, a.group("restart_p2"));
        List<String> fresh = new ArrayList<>();
        try {
            for (int i = 0; i < 8; i++) {
                String seq = a.get("prefix", "after-restart") + "-" + i;
                SendResult r = p.send(Common.msg(topic, "T", seq, Common.utf8(seq)));
                check(r.getSendStatus() == SendStatus.SEND_OK, "send after restart: %s", r.getSendStatus());
                Long before = maxOffset.get(r.getMessageQueue().getQueueId());
                check(before == null || r.getQueueOffset() > before,
                    "new message got queue %d offset %d, already used by an acknowledged message (max %d)",
                    r.getMessageQueue().getQueueId(), r.getQueueOffset(), before);
                fresh.add(seq);
            }
        } finally {
            p.shutdown();
        }
        Common.readAllFromStart(a, a.group("restart_v2"), topic, fresh, 60000);
        log("all %d acknowledged messages survived; %d new ones stored after them", acked.size(), fresh.size());
    }
}
