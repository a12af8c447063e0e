package dev.skiff.testcontainers;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.testcontainers.containers.ContainerLaunchException;
import org.testcontainers.containers.wait.strategy.AbstractWaitStrategy;

/**
 * Waits until the name server lists the broker as a registered master: the moment clients can
 * find it (a port that accepts connections says nothing about that). Polls every 20 ms with the
 * official admin client, up to the startup timeout; fails early if the container exits.
 */
public class BrokerRegisteredWaitStrategy extends AbstractWaitStrategy {
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
        DefaultMQAdminExt admin = Admin.start(namesrv);
        try {
            while (true) {
                if (!waitStrategyTarget.isRunning()) {
                    throw new ContainerLaunchException("the Skiff container exited before it was"
                            + " ready:\n" + waitStrategyTarget.getLogs());
                }
                try {
                    List<String> masters = masters(admin.examineBrokerClusterInfo());
                    if (masters.contains(broker)) {
                        return;
                    }
                    last = "the name server at " + namesrv + " lists " + masters + ", not " + broker;
                } catch (Exception e) {
                    last = e.toString();
                }
                if (System.nanoTime() > deadline) {
                    throw new ContainerLaunchException("Skiff not ready within "
                            + startupTimeout.toSeconds() + " s: " + last);
                }
                Thread.sleep(20);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ContainerLaunchException("interrupted while waiting for Skiff", e);
        } finally {
            Admin.shutdownInBackground(admin);
        }
    }

    private static List<String> masters(ClusterInfo info) {
        List<String> masters = new ArrayList<>();
        for (BrokerData data : info.getBrokerAddrTable().values()) {
            String addr = data.getBrokerAddrs().get(MixAll.MASTER_ID);
            if (addr != null) {
                masters.add(addr);
            }
        }
        return masters;
    }
}
