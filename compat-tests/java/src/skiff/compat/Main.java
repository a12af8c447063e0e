package skiff.compat;

/**
 * Entry point of every scenario JVM: {@code Main <scenario> --namesrv host:port --id X [...]}.
 * Prints "PASS" and exits 0, or prints "FAIL: reason" and exits 1. Client threads are not daemon
 * threads, so the exit is explicit.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] argv) {
        int code;
        try {
            Common.Args a = new Common.Args(argv);
            switch (a.scenario) {
                case "producer":
                    Producer.run(a);
                    break;
                case "clustering":
                    Clustering.run(a);
                    break;
                case "broadcasting":
                    Broadcasting.run(a);
                    break;
                case "tag-filter":
                    TagFilter.run(a);
                    break;
                case "orderly":
                    Orderly.run(a);
                    break;
                case "sql92":
                    Sql92.run(a);
                    break;
                case "sql92-disabled":
                    Sql92.runDisabled(a);
                    break;
                case "lite-pull-seek":
                    LitePullSeek.run(a);
                    break;
                case "consumer-resume":
                    ConsumerResume.run(a);
                    break;
                case "restart-produce":
                    Restart.produce(a);
                    break;
                case "restart-verify":
                    Restart.verify(a);
                    break;
                case "ha-consume":
                    Ha.consume(a);
                    break;
                case "admin":
                    Admin.run(a);
                    break;
                case "acl-send-receive":
                    Acl.sendReceive(a);
                    break;
                case "acl-send":
                    Acl.send(a);
                    break;
                case "acl-pull":
                    Acl.pull(a);
                    break;
                case "acl-admin":
                    Acl.admin(a);
                    break;
                case "query":
                    Query.run(a);
                    break;
                case "crash-produce":
                    Crash.produce(a);
                    break;
                case "crash-verify":
                    Crash.verify(a);
                    break;
                case "store-write":
                    StoreCompat.write(a);
                    break;
                case "store-read":
                    StoreCompat.read(a);
                    break;
                case "timer-delays":
                    Timers.delays(a);
                    break;
                case "timer-produce":
                    Timers.produce(a);
                    break;
                case "timer-verify":
                    Timers.verify(a);
                    break;
                case "timer-bench":
                    TimerBench.run(a);
                    break;
                case "tx-bench":
                    FeatureBench.tx(a);
                    break;
                case "sql-bench":
                    FeatureBench.sql(a);
                    break;
                case "delay-levels":
                    DelayRetry.delayLevels(a);
                    break;
                case "retry-dlq":
                    DelayRetry.retryDlq(a);
                    break;
                case "orderly-dlq":
                    DelayRetry.orderlyDlq(a);
                    break;
                case "delay-produce":
                    DelayRetry.delayProduce(a);
                    break;
                case "delay-verify":
                    DelayRetry.delayVerify(a);
                    break;
                case "tx-local":
                    Transactions.local(a);
                    break;
                case "tx-immunity":
                    Transactions.immunity(a);
                    break;
                case "tx-never":
                    Transactions.never(a);
                    break;
                case "tx-restart-produce":
                    Transactions.restartProduce(a);
                    break;
                case "tx-restart-verify":
                    Transactions.restartVerify(a);
                    break;
                case "pop-consume":
                    Pop.consume(a);
                    break;
                case "pop-hold":
                    Pop.hold(a);
                    break;
                case "pop-return":
                    Pop.comeBack(a);
                    break;
                case "cross-from-kafka":
                    CrossFromKafka.run(a);
                    break;
                case "cross-to-kafka":
                    CrossToKafka.run(a);
                    break;
                default:
                    throw new Common.Fail("unknown scenario " + a.scenario);
            }
            System.out.println("PASS");
            code = 0;
        } catch (Common.Fail f) {
            System.out.println("FAIL: " + f.getMessage());
            code = 1;
        } catch (Throwable t) {
            System.out.println("FAIL: unexpected " + t);
            t.printStackTrace(System.out);
            code = 1;
        }
        System.out.flush();
        Runtime.getRuntime().halt(code);
    }
}
