package dev.skiff.testcontainers;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

import com.github.dockerjava.api.command.InspectContainerResponse;
import org.testcontainers.containers.ContainerLaunchException;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.utility.DockerImageName;

/**
 * Skiff (a RocketMQ-compatible broker) for tests: a name server and a broker in one container,
 * ready in well under a second. Point the official RocketMQ clients at {@link #getNamesrvAddr()}.
 *
 * <pre>{@code
 * @Container
 * static SkiffContainer skiff = new SkiffContainer().withTopic("orders", 4);
 * ...
 * producer.setNamesrvAddr(skiff.getNamesrvAddr());
 * }</pre>
 *
 * <p>The container uses the host network: a RocketMQ broker publishes its own address to the
 * name server and clients connect to that address, so it must be one the test can reach, with
 * the port the broker really listens on. Both ports are picked free on the host, so several
 * containers can run side by side. The image is never pulled: {@code scripts/image.sh} builds it
 * locally (default {@code skiff:latest}, or the system property {@code skiff.image}).
 *
 * <p>Ready means the broker is registered with the name server and every topic of
 * {@link #withTopic} has a route: a test can send at once.
 *
 * <p>The module depends on no RocketMQ client (it sends its three requests itself), so it works
 * with whichever the test uses: rocketmq-client 4.9.x or 5.x.
 */
public class SkiffContainer extends GenericContainer<SkiffContainer> {
    public static final String DEFAULT_IMAGE = "skiff:latest";
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

    // The broker binds its port and the next one (the HA port slaves connect to).
    private final int brokerPort = freePorts(2, -1);
    private final int namesrvPort = freePorts(1, brokerPort);
    private final Map<String, Integer> topics = new LinkedHashMap<>();

    /** The image of the system property {@code skiff.image}, else {@value #DEFAULT_IMAGE}. */
    public SkiffContainer() {
        this(DockerImageName.parse(System.getProperty("skiff.image", DEFAULT_IMAGE)));
    }

    public SkiffContainer(DockerImageName image) {
        super(image);
        // Built by scripts/image.sh: never ask a registry for it.
        withImagePullPolicy(name -> false);
        withNetworkMode("host");
        withEnv("SKIFF_NAMESRV_LISTEN", "127.0.0.1:" + namesrvPort);
        withEnv("SKIFF_BROKER_LISTEN", "127.0.0.1:" + brokerPort);
        withEnv("SKIFF_brokerIP1", "127.0.0.1");
        waitingFor(new BrokerRegisteredWaitStrategy(this::getNamesrvAddr, this::getBrokerAddr)
                .withStartupTimeout(READY_TIMEOUT));
    }

    /** The name server address for clients' {@code setNamesrvAddr}, e.g. {@code 127.0.0.1:40123}. */
    public String getNamesrvAddr() {
        return "127.0.0.1:" + namesrvPort;
    }

    /** The broker address as it is registered with the name server. */
    public String getBrokerAddr() {
        return "127.0.0.1:" + brokerPort;
    }

    /**
     * Creates {@code topic} with {@code queues} read and write queues once the broker is up (topics
     * are also created on first send, with the broker's default of 4 queues).
     */
    public SkiffContainer withTopic(String topic, int queues) {
        if (queues < 1 || queues > 1024) {
            throw new IllegalArgumentException("queues must be 1..1024, not " + queues);
        }
        topics.put(topic, queues);
        return self();
    }

    /**
     * Any broker setting in Apache RocketMQ's name, e.g. {@code withSetting("flushDiskType",
     * "SYNC_FLUSH")}; the image reads it from the variable {@code SKIFF_<key>}.
     */
    public SkiffContainer withSetting(String key, String value) {
        return withEnv("SKIFF_" + key, value);
    }

    @Override
    protected void containerIsStarted(InspectContainerResponse info) {
        try {
            createTopics(getNamesrvAddr(), getBrokerAddr(), topics, READY_TIMEOUT);
        } catch (ContainerLaunchException e) {
            throw e;
        } catch (Exception e) {
            throw new ContainerLaunchException("creating topics " + topics.keySet() + ": " + e, e);
        }
    }

    /**
     * Creates each topic (name to queue count) on {@code broker}, then waits until the name server
     * has routes for all of them, up to {@code timeout}.
     */
    static void createTopics(String namesrv, String broker, Map<String, Integer> topics,
            Duration timeout) throws IOException, InterruptedException {
        Duration request = Duration.ofSeconds(3);
        for (Map.Entry<String, Integer> t : topics.entrySet()) {
            Remoting.createTopic(broker, t.getKey(), t.getValue(), request);
        }
        // The broker registers a new topic before it answers, so the route is there; still,
        // check what clients will see, with a bound.
        long deadline = System.nanoTime() + timeout.toNanos();
        for (String topic : topics.keySet()) {
            while (!Remoting.routed(namesrv, topic, request)) {
                if (System.nanoTime() > deadline) {
                    throw new ContainerLaunchException("topic " + topic + " has no route after "
                            + timeout.toSeconds() + " s");
                }
                Thread.sleep(20);
            }
        }
    }

    /**
     * The first of {@code n} consecutive loopback ports nothing listens on right now, none of
     * them within 1 of {@code avoid}. They are drawn below the kernel's ephemeral range (32768
     * and up by default): a port from that range goes to the next outgoing connection of any
     * process, so another test's client could take it in the moment before the container binds.
     */
    static int freePorts(int n, int avoid) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200; attempt++) {
            int first = random.nextInt(20000, 32000 - n);
            boolean clash = avoid >= first - 1 && avoid <= first + n;
            if (!clash && allBind(first, n)) {
                return first;
            }
        }
        throw new IllegalStateException("no " + n + " free ports between 20000 and 32000");
    }

    private static boolean allBind(int first, int n) {
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int port = first; port < first + n; port++) {
                ServerSocket s = new ServerSocket();
                held.add(s);
                s.bind(new InetSocketAddress("127.0.0.1", port));
            }
            return true;
        } catch (IOException e) {
            return false;
        } finally {
            for (ServerSocket s : held) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing a probe socket cannot lose anything
                }
            }
        }
    }
}
