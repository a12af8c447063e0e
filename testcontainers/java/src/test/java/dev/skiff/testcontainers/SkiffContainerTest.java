package dev.skiff.testcontainers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.ContainerLaunchException;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/** What a user's test looks like: the official rocketmq-client against a SkiffContainer. */
@Testcontainers
class SkiffContainerTest {
    @Container
    static final SkiffContainer skiff = new SkiffContainer().withTopic("orders", 6);

    @Test
    void producesAndConsumes() throws Exception {
        int count = 20;
        Set<String> received = ConcurrentHashMap.newKeySet();
        CountDownLatch all = new CountDownLatch(count);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("orders-consumer");
        consumer.setNamesrvAddr(skiff.getNamesrvAddr());
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe("orders", "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt m : msgs) {
                if (received.add(new String(m.getBody(), StandardCharsets.UTF_8))) {
                    all.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("orders-producer");
        producer.setNamesrvAddr(skiff.getNamesrvAddr());
        producer.start();
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message("orders", "created",
                        ("order-" + i).getBytes(StandardCharsets.UTF_8));
                SendResult result = producer.send(msg);
                assertEquals(SendStatus.SEND_OK, result.getSendStatus());
            }
            assertTrue(all.await(60, TimeUnit.SECONDS),
                    "received " + received.size() + " of " + count);
        } finally {
            producer.shutdown();
            consumer.shutdown();
        }
    }

    @Test
    void withTopicCreatesTheQueuesBeforeTheTestStarts() throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("route-check");
        producer.setNamesrvAddr(skiff.getNamesrvAddr());
        producer.start();
        try {
            List<MessageQueue> queues = producer.fetchPublishMessageQueues("orders");
            assertEquals(6, queues.size(), queues.toString());
            assertTrue(queues.stream().allMatch(q -> q.getBrokerName().equals("broker-a")));
        } finally {
            producer.shutdown();
        }
    }

    @Test
    void aTopicTheBrokerRefusesFailsTheStartWithTheBrokersAnswer() {
        try (SkiffContainer bad = new SkiffContainer().withTopic("no spaces allowed", 1)) {
            ContainerLaunchException e = assertThrows(ContainerLaunchException.class, bad::start);
            String why = String.valueOf(rootCause(e).getMessage());
            assertTrue(why.contains("creating topic no spaces allowed") && why.contains("code "),
                    why);
        }
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }
}
