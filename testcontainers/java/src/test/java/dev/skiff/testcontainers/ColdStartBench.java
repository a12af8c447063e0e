package dev.skiff.testcontainers;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import com.github.dockerjava.api.command.InspectContainerResponse;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.testcontainers.containers.BindMode;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * The measurement of docs/benchmarks.md, not a test (it runs only with -Dskiff.bench=true): time
 * from a cold container start to the first consumed message, and the containers' memory, for a
 * SkiffContainer and for Apache RocketMQ as Testcontainers users run it (a name server and a
 * broker JVM, each in its own container; image from scripts/apache-image.sh).
 *
 * <pre>mvn -q test -Dtest=ColdStartBench -Dskiff.bench=true [-Dskiff.bench.runs=3]
 *     [-Drocketmq.version=4.9.8]   # the consumer and producer of the 4.9.x client line</pre>
 */
@EnabledIfSystemProperty(named = "skiff.bench", matches = "true")
class ColdStartBench {
    static final String APACHE_IMAGE = System.getProperty("skiff.bench.apache",
            "skiff-bench/apache-rocketmq:5.3.3");
    /** The compat harness's JVM options for the Apache broker (smaller and quicker to start than
     * the heaps of Apache's runserver.sh/runbroker.sh: 4 GiB and 8 GiB). */
    static final String[] JVM = {"-Xms256m", "-Xmx512m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1", "-Xshare:auto",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
            "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
            "-Duser.home=/home/rocketmq", "-Drocketmq.home.dir=/home/rocketmq",
            "-cp", "/rocketmq/lib/*"};

    /** RequestCode's values (the class moved between client lines; this bench runs with both). */
    static final int PULL_MESSAGE = 11;
    static final int LITE_PULL_MESSAGE = 361;

    /** One measured start; every time is in ms since the clock started (before the containers). */
    record Run(String target, long readyMs, long firstMessageMs, long memoryBytes,
            long peakBytes, Trace trace) {}

    static {
        // An ordinary client setting (the compat harness uses it too): without it a push
        // consumer that finds no queues on its first rebalance waits 20 s for the next one,
        // for either broker, which would hide the brokers' own start times.
        System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
        // Optional, for both brokers alike: the client's RebalanceService never rebalances within
        // rocketmq.client.rebalance.minInterval (1000 ms) of its client instance's creation, so
        // a new consumer cannot pull sooner than that whichever the broker.
        String minInterval = System.getProperty("skiff.bench.minInterval");
        if (minInterval != null) {
            System.setProperty("rocketmq.client.rebalance.minInterval", minInterval);
        }
    }

    @Test
    void coldStartToFirstConsumedMessage() throws Exception {
        int runs = Integer.getInteger("skiff.bench.runs", 3);
        List<Run> results = new ArrayList<>();
        // Untimed: loads and JIT-compiles the client classes once, so that no measured run pays it.
        skiff(-1);
        for (int i = 0; i < runs; i++) {
            results.add(skiff(i));
            results.add(apache(i));
        }
        StringBuilder out = new StringBuilder(
                "target,ready_ms,first_message_ms,memory_mib,peak_mib,"
                        + "container_started_ms,consumer_started_ms,sent_ms,first_rebalance_ms,"
                        + "first_pull_ms\n");
        for (Run r : results) {
            Trace t = r.trace();
            out.append(String.format("%s,%d,%d,%.1f,%.1f,%d,%d,%d,%d,%d%n", r.target(),
                    r.readyMs(), r.firstMessageMs(),
                    r.memoryBytes() / 1048576.0, r.peakBytes() / 1048576.0,
                    t.containerStarted, t.consumerStarted, t.sent, t.firstRebalance.get(), t.firstPull.get()));
        }
        System.out.println("client: rocketmq-client "
                + MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION) + ", consumer: "
                + System.getProperty("skiff.bench.consumer", "push"));
        System.out.print(out);
        for (Run r : results) {
            System.out.println("--- " + r.target() + " requests (ms since start, code, rtt ms):");
            System.out.print(r.trace().requests);
        }
        Files.writeString(Path.of("target", "cold-start.csv"), out);
    }

    private Run skiff(int i) throws Exception {
        String topic = "ColdStart_skiff" + (i + 1);
        long t0 = System.nanoTime();
        // The topic is created by the container's start, as a user's test would declare it.
        long[] started = {-1};
        // containerIsStarting: the engine has started the container, the ready-wait is next.
        try (SkiffContainer skiff = new SkiffContainer() {
            @Override
            protected void containerIsStarting(InspectContainerResponse info) {
                started[0] = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            }
        }.withTopic(topic, 4)) {
            skiff.start();
            long ready = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            Trace trace = new Trace(t0);
            trace.containerStarted = started[0];
            long ms = firstMessage(skiff.getNamesrvAddr(), topic, "skiff" + (i + 1), trace);
            return new Run("skiff", ready, ms, memory(skiff, "memory.usage_in_bytes"),
                    memory(skiff, "memory.max_usage_in_bytes"), trace);
        }
    }

    private Run apache(int i) throws Exception {
        String topic = "ColdStart_apache" + (i + 1);
        int namesrvPort = freePort();
        int brokerPort = freeBrokerPort(namesrvPort);
        Path conf = Files.createTempDirectory("apache-conf");
        Files.writeString(conf.resolve("namesrv.conf"), "listenPort=" + namesrvPort + "\n");
        Files.writeString(conf.resolve("broker.conf"), String.join("\n",
                "brokerClusterName=DefaultCluster", "brokerName=broker-a", "brokerId=0",
                "brokerIP1=127.0.0.1", "listenPort=" + brokerPort,
                "namesrvAddr=127.0.0.1:" + namesrvPort, "storePathRootDir=/store",
                "storePathCommitLog=/store/commitlog", "autoCreateTopicEnable=true", ""));
        String namesrvAddr = "127.0.0.1:" + namesrvPort;
        String brokerAddr = "127.0.0.1:" + brokerPort;
        long t0 = System.nanoTime();
        try (GenericContainer<?> namesrv = jvm("org.apache.rocketmq.namesrv.NamesrvStartup",
                     "namesrv.conf", conf)
                .waitingFor(Wait.forLogMessage(".*The Name Server boot success.*", 1)
                        .withStartupTimeout(Duration.ofMinutes(3)));
             GenericContainer<?> broker = jvm("org.apache.rocketmq.broker.BrokerStartup",
                     "broker.conf", conf)
                .waitingFor(new BrokerRegisteredWaitStrategy(() -> namesrvAddr, () -> brokerAddr)
                        .withStartupTimeout(Duration.ofMinutes(3)))) {
            namesrv.start();
            broker.start();
            // The same step as SkiffContainer.withTopic: create it (UPDATE_AND_CREATE_TOPIC) and wait
            // until the name server has its route.
            createTopic(namesrvAddr, brokerAddr, topic, 4);
            long ready = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            Trace trace = new Trace(t0);
            long ms = firstMessage(namesrvAddr, topic, "apache" + (i + 1), trace);
            return new Run("apache", ready, ms,
                    memory(namesrv, "memory.usage_in_bytes") + memory(broker, "memory.usage_in_bytes"),
                    memory(namesrv, "memory.max_usage_in_bytes")
                            + memory(broker, "memory.max_usage_in_bytes"), trace);
        }
    }

    /** What SkiffContainer.containerIsStarted does for withTopic, for the Apache broker. */
    private static void createTopic(String namesrv, String broker, String topic, int queues)
            throws Exception {
        SkiffContainer.createTopics(namesrv, broker, Map.of(topic, queues), Duration.ofSeconds(60));
    }

    /**
     * When each client step happened, in ms since the clock started: recorded by an RPCHook (every
     * request the consumer sends, with its round trip) and by the allocation strategy (the first
     * rebalance), neither of which changes what the client does.
     */
    static final class Trace implements RPCHook {
        final long t0;
        /** Skiff only: when the engine had started the container. */
        volatile long containerStarted = -1;
        volatile long consumerStarted = -1;
        volatile long sent = -1;
        final AtomicLong firstRebalance = new AtomicLong(-1);
        final AtomicLong firstPull = new AtomicLong(-1);
        final StringBuffer requests = new StringBuffer();
        private final Map<Integer, Long> sentAt = new ConcurrentHashMap<>();

        Trace(long t0) {
            this.t0 = t0;
        }

        long now() {
            return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        }

        @Override
        public void doBeforeRequest(String remoteAddr, RemotingCommand request) {
            long now = now();
            sentAt.put(request.getOpaque(), now);
            if (request.getCode() == PULL_MESSAGE || request.getCode() == LITE_PULL_MESSAGE) {
                firstPull.compareAndSet(-1, now);
            }
        }

        @Override
        public void doAfterResponse(String remoteAddr, RemotingCommand request,
                RemotingCommand response) {
            Long at = sentAt.remove(request.getOpaque());
            long now = now();
            requests.append(String.format("  %6d %4d %s %d%n", at == null ? -1 : at,
                    request.getCode(), remoteAddr, at == null ? -1 : now - at));
        }

        AllocateMessageQueueStrategy allocation() {
            AllocateMessageQueueStrategy avg = new AllocateMessageQueueAveragely();
            return new AllocateMessageQueueStrategy() {
                @Override
                public List<MessageQueue> allocate(String group, String cid,
                        List<MessageQueue> all, List<String> cids) {
                    firstRebalance.compareAndSet(-1, now());
                    return avg.allocate(group, cid, all, cids);
                }

                @Override
                public String getName() {
                    return avg.getName();
                }
            };
        }
    }

    private static GenericContainer<?> jvm(String main, String confFile, Path conf) {
        List<String> cmd = new ArrayList<>(List.of(JVM));
        cmd.addAll(List.of(main, "-c", "/conf/" + confFile));
        return new GenericContainer<>(DockerImageName.parse(APACHE_IMAGE))
                .withImagePullPolicy(name -> false)
                .withNetworkMode("host")
                .withFileSystemBind(conf.toString(), "/conf", BindMode.READ_ONLY)
                .withCommand(cmd.toArray(String[]::new));
    }

    /**
     * Starts a consumer of a new group on the (existing) topic, then a producer that sends one
     * message; returns ms since the clock started when the consumer has it. The consumer is a
     * push consumer, or with {@code -Dskiff.bench.consumer=litepull} a lite pull consumer assigned
     * the topic's queues (no rebalance: its first pull goes out at once and is held until the
     * message arrives).
     */
    private static long firstMessage(String namesrv, String topic, String id, Trace trace)
            throws Exception {
        if ("litepull".equals(System.getProperty("skiff.bench.consumer", "push"))) {
            return firstMessageLitePull(namesrv, topic, id, trace);
        }
        // (group, hook, allocation): the constructor both client lines have.
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cold-c-" + id, trace,
                trace.allocation());
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("cold-c-" + id);
        DefaultMQProducer producer = producer(namesrv, id);
        try {
            CountDownLatch got = new CountDownLatch(1);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                got.countDown();
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            trace.consumerStarted = trace.now();
            send(producer, topic, trace);
            if (!got.await(120, TimeUnit.SECONDS)) {
                throw new AssertionError("no message consumed within 120 s from " + namesrv);
            }
            return trace.now();
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
    }

    private static long firstMessageLitePull(String namesrv, String topic, String id, Trace trace)
            throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("cold-c-" + id, trace);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("cold-c-" + id);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        DefaultMQProducer producer = producer(namesrv, id);
        try {
            consumer.start();
            consumer.assign(consumer.fetchMessageQueues(topic));
            trace.consumerStarted = trace.now();
            send(producer, topic, trace);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (consumer.poll(100).isEmpty()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("no message consumed within 120 s from " + namesrv);
                }
            }
            return trace.now();
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
    }

    private static DefaultMQProducer producer(String namesrv, String id) {
        DefaultMQProducer producer = new DefaultMQProducer("cold-p-" + id);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("cold-p-" + id);
        return producer;
    }

    private static void send(DefaultMQProducer producer, String topic, Trace trace)
            throws Exception {
        producer.start();
        producer.send(new Message(topic, "hello".getBytes(StandardCharsets.UTF_8)));
        trace.sent = trace.now();
    }

    /** A cgroup v1 memory counter of the container (the engine here uses cgroupfs). */
    private static long memory(GenericContainer<?> c, String file) throws IOException {
        Path p = Path.of("/sys/fs/cgroup/memory/docker", c.getContainerId(), file);
        return Long.parseLong(Files.readString(p).trim());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /**
     * The Java broker also binds listenPort - 2 (VIP channel) and listenPort + 1 (HA): all three
     * free, and none of them the name server's port (not bound yet when this runs).
     */
    private static int freeBrokerPort(int namesrvPort) throws IOException {
        for (int i = 0; i < 100; i++) {
            int p = freePort();
            if (Math.abs(p - namesrvPort) <= 2) {
                continue;
            }
            try (ServerSocket a = new ServerSocket(p - 2); ServerSocket b = new ServerSocket(p + 1)) {
                return p;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IOException("no free broker port group");
    }
}
