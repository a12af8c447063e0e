package dev.skiff.testcontainers;

import java.time.Duration;
import java.util.function.Supplier;

import org.testcontainers.containers.ContainerLaunchException;
import org.testcontainers.containers.wait.strategy.AbstractWaitStrategy;

/**
 * Waits until the name server lists the broker as a registered master: the moment clients can
 * find it (a port that accepts connections says nothing about that). Polls every 20 ms with a
 * GET_BROKER_CLUSTER_INFO request, up to the startup timeout; fails early if the container exits.
 * Works for any RocketMQ name server, Skiff's or Apache's.
 */
public class BrokerRegisteredWaitStrategy extends AbstractWaitStrategy {
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(3);

    private final Supplier<String> namesrvAddr;
    private final Supplier<String> brokerAddr;

    /** Addresses as clients use them: the name server's and the broker's registered one. */
    public BrokerRegisteredWaitStrategy(Supplier<String> namesrvAddr, Supplier<String> brokerAddr) {
        this.namesrvAddr = namesrvAddr;
        this.brokerAddr = brokerAddr;
    }

    @Override
    protected void waitUntilReady() {
        String namesrv = namesrvAddr.get();
        String broker = brokerAddr.get();
        long deadline = System.nanoTime() + startupTimeout.toNanos();
        String last = "no answer yet";
        try {
            while (true) {
                if (!waitStrategyTarget.isRunning()) {
                    throw new ContainerLaunchException("the container exited before it was"
                            + " ready:\n" + waitStrategyTarget.getLogs());
                }
                try {
                    if (Remoting.masterRegistered(namesrv, broker, REQUEST_TIMEOUT)) {
                        return;
                    }
                    last = "the name server at " + namesrv + " does not list " + broker + " yet";
                } catch (Exception e) {
                    last = e.toString();
                }
                if (System.nanoTime() > deadline) {
                    throw new ContainerLaunchException("the broker was not ready within "
                            + startupTimeout.toSeconds() + " s: " + last);
                }
                Thread.sleep(20);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ContainerLaunchException("interrupted while waiting for the broker", e);
        }
    }
}
