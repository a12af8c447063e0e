package dev.skiff.testcontainers;

import java.util.concurrent.atomic.AtomicLong;

import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** Short-lived admin clients of the official {@code rocketmq-tools}. */
final class Admin {
    private static final AtomicLong N = new AtomicLong();

    private Admin() {}

    /**
     * A started admin client. Each gets its own instance name: clients with the same one share
     * a client instance, and with it the first one's name server address.
     */
    static DefaultMQAdminExt start(String namesrvAddr) {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(3000);
        admin.setNamesrvAddr(namesrvAddr);
        admin.setInstanceName("skiff-testcontainers-" + ProcessHandle.current().pid() + "-"
                + N.incrementAndGet());
        admin.setVipChannelEnabled(false);
        try {
            admin.start();
        } catch (Exception e) {
            throw new IllegalStateException("cannot start a RocketMQ admin client: " + e, e);
        }
        return admin;
    }

    /**
     * Shuts {@code admin} down on a daemon thread. The client's shutdown joins its Netty event
     * thread, which polls its queue for up to 3 s between checks of the stop flag
     * ({@code NettyRemotingAbstract.NettyEventExecutor}): one shutdown in four took 3 s
     * here. A container start that waits for it is up to 3 s later per admin client for nothing.
     */
    static void shutdownInBackground(DefaultMQAdminExt admin) {
        Thread t = new Thread(admin::shutdown, "skiff-admin-shutdown");
        t.setDaemon(true);
        t.start();
    }
}
