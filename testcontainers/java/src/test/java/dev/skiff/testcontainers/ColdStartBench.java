package dev.skiff.testcontainers;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
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
 * <pre>mvn -q test -Dtest=ColdStartBench -Dskiff.bench=true [-Dskiff.bench.runs=3]</pre>
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

    record Run(String target, long readyMs, long firstMessageMs, long memoryBytes,
            long peakBytes) {}

    static {
        // An ordinary client setting (the compat harness uses it too): without it a push
        // consumer that finds no queues on its first rebalance waits 20 s for the next one,
        // for either broker, which would hide the brokers' own start times.
        System.setProperty("rocketmq.client.rebalance.waitInterval", "1000");
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
                "target,ready_ms,first_message_ms,memory_mib,peak_mib\n");
        for (Run r : results) {
            out.append(String.format("%s,%d,%d,%.1f,%.1f%n", r.target(), r.readyMs(),
                    r.firstMessageMs(),
                    r.memoryBytes() / 1048576.0, r.peakBytes() / 1048576.0));
        }
        System.out.print(out);
        Files.writeString(Path.of("target", "cold-start.csv"), out);
    }

    private Run skiff(int i) throws Exception {
        long t0 = System.nanoTime();
        try (SkiffContainer skiff = new SkiffContainer()) {
            skiff.start();
            long ready = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            long ms = firstMessage(skiff.getNamesrvAddr(), "skiff" + (i + 1), t0);
            return new Run("skiff", ready, ms, memory(skiff, "memory.usage_in_bytes"),
                    memory(skiff, "memory.max_usage_in_bytes"));
        }
    }

    private Run apache(int i) throws Exception {
        int namesrvPort = freePort();
        int brokerPort = freeBrokerPort();
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
            long ready = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
            long ms = firstMessage(namesrvAddr, "apache" + (i + 1), t0);
            return new Run("apache", ready, ms,
                    memory(namesrv, "memory.usage_in_bytes") + memory(broker, "memory.usage_in_bytes"),
                    memory(namesrv, "memory.max_usage_in_bytes")
                            + memory(broker, "memory.max_usage_in_bytes"));
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

    /** Sends one message and waits until a push consumer of a new group has it; ms since t0. */
    private static long firstMessage(String namesrv, String id, long t0) throws Exception {
        String topic = "ColdStart_" + id;
        DefaultMQProducer producer = new DefaultMQProducer("cold-p-" + id);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("cold-p-" + id);
        producer.start();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("cold-c-" + id);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("cold-c-" + id);
        try {
            producer.send(new Message(topic, "hello".getBytes(StandardCharsets.UTF_8)));
            CountDownLatch got = new CountDownLatch(1);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                got.countDown();
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            if (!got.await(120, TimeUnit.SECONDS)) {
                throw new AssertionError("no message consumed within 120 s from " + namesrv);
            }
            return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }
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

    /** The Java broker also binds listenPort - 2 and listenPort + 1. */
    private static int freeBrokerPort() throws IOException {
        for (int i = 0; i < 100; i++) {
            int p = freePort();
            try (ServerSocket a = new ServerSocket(p - 2); ServerSocket b = new ServerSocket(p + 1)) {
                return p;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IOException("no free broker port group");
    }
}
