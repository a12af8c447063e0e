// Runs several mqadmin commands in one JVM (tests/mqadmin.rs): each line of the file named by
// the first argument is one command, its words separated by tabs. MQAdminStartup.main prints
// and swallows a command's exception and does not exit, so it can be called once per line.
// Each command's output (stderr too, where stack traces go) sits between marker lines.
//
// Lines starting with @ set up clients in this JVM for the commands after them to look at
// (connections, running info, traffic statistics); they stay up until the JVM exits:
//   @producer <namesrv> <group> <topic> <count>  start a producer, send <count> messages, print
//                                                each one's status, broker, queue id and offset
//   @fill <namesrv> <group> <topic> <count> <bytes>  send <count> uncompressed messages of
//                                                <bytes> random bytes each
//   @consumer <namesrv> <group> <topic> <count>  start a push consumer from the first offset and
//                                                wait (60 s at most) until it consumed <count>
//   @consumed <count>                            wait (90 s at most) until the consumer above has
//                                                consumed <count> in all (after an offset reset)
//   @systemTopics <namesrv>                      print the client API's getSystemTopicList (the
//                                                Dashboard's topic list asks for it)
//   @consumeDirectly <namesrv> <group> <topic>   ask the broker to hand the producer's last
//                                                message to the consumer above (what
//                                                `queryMsgById -g -d` does) and print the result
//   @consumerStatus <namesrv> <group> <topic>    the admin API's getConsumeStatus (mqadmin 5.3.3
//                                                does not register its getConsumerStatus command)
//   @traced <namesrv> <group> <topic>            send one message with message trace on, wait
//                                                for its trace, then run queryMsgTraceById on it
//   @background <ms> <command words>             run an mqadmin command that never returns
//                                                (clusterRT loops) on a daemon thread and
//                                                keep what it printed within <ms>
//   @property <key> <value>                      a system property (startMonitoring reads the
//                                                name server from rocketmq.namesrv.addr)
//   @sleep <ms>
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.remoting.protocol.body.TopicList;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class MqAdminBatch {
    /// What the @consumer's listener has consumed.
    private static final AtomicInteger CONSUMED = new AtomicInteger();
    private static DefaultMQPushConsumer consumer;
    private static String lastOffsetMsgId;

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        System.setErr(System.out);
        for (String line : lines) {
            if (line.isEmpty()) {
                continue;
            }
            String[] words = line.split("\t");
            System.out.println("##### BEGIN " + String.join(" ", words));
            try {
                if (words[0].startsWith("@")) {
                    directive(words);
                } else {
                    org.apache.rocketmq.tools.command.MQAdminStartup.main(words);
                }
            } catch (Throwable t) {
                t.printStackTrace(System.out);
            }
            System.out.println();
            System.out.println("##### END");
            System.out.flush();
        }
        System.exit(0);
    }

    private static void awaitConsumed(int count, long timeoutMillis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (CONSUMED.get() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        System.out.println("consumed " + CONSUMED.get());
    }

    private static void directive(String[] words) throws Exception {
        switch (words[0]) {
            case "@producer": {
                DefaultMQProducer producer = new DefaultMQProducer(words[2]);
                producer.setNamesrvAddr(words[1]);
                producer.setInstanceName("batch-producer");
                producer.start();
                int count = Integer.parseInt(words[4]);
                for (int i = 0; i < count; i++) {
                    Message msg = new Message(words[3], "TagA", ("batch " + i).getBytes(StandardCharsets.UTF_8));
                    SendResult sent = producer.send(msg);
                    lastOffsetMsgId = sent.getOffsetMsgId();
                    MessageQueue mq = sent.getMessageQueue();
                    System.out.println(sent.getSendStatus() + " " + mq.getBrokerName() + " "
                        + mq.getQueueId() + " " + sent.getQueueOffset());
                }
                // Producers heartbeat every 30 s; the broker should know this one now.
                producer.getDefaultMQProducerImpl().getMqClientFactory().sendHeartbeatToAllBrokerWithLock();
                break;
            }
            case "@fill": {
                DefaultMQProducer producer = new DefaultMQProducer(words[2]);
                producer.setNamesrvAddr(words[1]);
                producer.setInstanceName("batch-filler");
                // Stored as sent: the client would compress bodies over 4 KiB.
                producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
                producer.start();
                int count = Integer.parseInt(words[4]);
                byte[] body = new byte[Integer.parseInt(words[5])];
                new java.util.Random(7).nextBytes(body);
                int sent = 0;
                for (int i = 0; i < count; i++) {
                    if (producer.send(new Message(words[3], body)).getSendStatus() == SendStatus.SEND_OK) {
                        sent++;
                    }
                }
                producer.shutdown();
                System.out.println("filled " + sent);
                break;
            }
            case "@consumer": {
                consumer = new DefaultMQPushConsumer(words[2]);
                consumer.setNamesrvAddr(words[1]);
                consumer.setInstanceName("batch-consumer");
                consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                consumer.subscribe(words[3], "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
                    CONSUMED.addAndGet(msgs.size());
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                awaitConsumed(Integer.parseInt(words[4]), 60_000);
                break;
            }
            case "@consumed":
                awaitConsumed(Integer.parseInt(words[1]), 90_000);
                break;
            case "@systemTopics": {
                DefaultMQAdminExt admin = new DefaultMQAdminExt();
                admin.setNamesrvAddr(words[1]);
                admin.setInstanceName("batch-admin");
                admin.start();
                try {
                    // What the Dashboard's MQAdminExtImpl.getSystemTopicList calls.
                    TopicList list = admin.getDefaultMQAdminExtImpl().getMqClientInstance()
                        .getMQClientAPIImpl().getSystemTopicList(10_000);
                    for (String topic : new TreeSet<>(list.getTopicList())) {
                        System.out.println("system topic " + topic);
                    }
                } finally {
                    admin.shutdown();
                }
                break;
            }
            case "@consumeDirectly": {
                DefaultMQAdminExt admin = new DefaultMQAdminExt();
                admin.setNamesrvAddr(words[1]);
                admin.setInstanceName("batch-admin-direct");
                admin.start();
                try {
                    ConsumeMessageDirectlyResult result = admin.consumeMessageDirectly(
                        words[2], consumer.buildMQClientId(), words[3], lastOffsetMsgId);
                    System.out.println("direct " + result.getConsumeResult());
                } finally {
                    admin.shutdown();
                }
                break;
            }
            case "@consumerStatus": {
                DefaultMQAdminExt admin = new DefaultMQAdminExt();
                admin.setNamesrvAddr(words[1]);
                admin.setInstanceName("batch-admin-status");
                admin.start();
                try {
                    Map<String, Map<MessageQueue, Long>> table = admin.getConsumeStatus(words[3], words[2], "");
                    for (Map.Entry<String, Map<MessageQueue, Long>> client : table.entrySet()) {
                        for (Map.Entry<MessageQueue, Long> queue : client.getValue().entrySet()) {
                            System.out.println("status " + client.getKey() + " " + queue.getKey().getBrokerName()
                                + " " + queue.getKey().getQueueId() + " " + queue.getValue());
                        }
                    }
                } finally {
                    admin.shutdown();
                }
                break;
            }
            case "@traced": {
                DefaultMQProducer producer = new DefaultMQProducer(words[2], true, null);
                producer.setNamesrvAddr(words[1]);
                producer.setInstanceName("batch-traced-producer");
                producer.start();
                try {
                    SendResult sent = producer.send(new Message(words[3], "TagT", "traced".getBytes(StandardCharsets.UTF_8)));
                    System.out.println("traced " + sent.getSendStatus());
                    // The trace goes to RMQ_SYS_TRACE_TOPIC in the background, keyed by the message id;
                    // the first one creates that topic. Wait (bounded) until it has a route, then a
                    // little more for the trace to be stored.
                    var api = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
                    long deadline = System.currentTimeMillis() + 30_000;
                    while (true) {
                        try {
                            api.getTopicRouteInfoFromNameServer("RMQ_SYS_TRACE_TOPIC", 3_000);
                            break;
                        } catch (Exception notYet) {
                            if (System.currentTimeMillis() > deadline) {
                                throw notYet;
                            }
                            Thread.sleep(200);
                        }
                    }
                    Thread.sleep(2_000);
                    org.apache.rocketmq.tools.command.MQAdminStartup.main(new String[] {
                        "queryMsgTraceById", "-n", words[1], "-i", sent.getMsgId()});
                } finally {
                    producer.shutdown();
                }
                break;
            }
            case "@background": {
                String[] command = java.util.Arrays.copyOfRange(words, 2, words.length);
                Thread thread = new Thread(() -> org.apache.rocketmq.tools.command.MQAdminStartup.main(command));
                thread.setDaemon(true);
                thread.start();
                Thread.sleep(Long.parseLong(words[1]));
                break;
            }
            case "@property":
                System.setProperty(words[1], words[2]);
                break;
            case "@sleep":
                Thread.sleep(Long.parseLong(words[1]));
                break;
            default:
                throw new IllegalArgumentException("unknown directive " + words[0]);
        }
    }
}
