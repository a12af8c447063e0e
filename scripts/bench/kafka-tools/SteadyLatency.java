import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produce latency of a broker once the client is warm: kafka-producer-perf-test at a fixed rate
 * counts its own JVM's first seconds (JIT, connections, metadata), whose 100-400 ms sends fill the
 * p99 of a one-minute run with either broker. This sends WARMUP records at RATE per second, then
 * RECORDS more, timing each from send() to its callback as perf-test does, and reports only the
 * second part.
 *
 * <p>Run with the kafka-tools classpath (scripts/bench-kafka.sh):
 * {@code java -cp CP SteadyLatency.java BOOTSTRAP TOPIC WARMUP RECORDS RATE SIZE ACKS}. Prints
 * {@code avg=… p50=… p99=… p999=… max=…} in milliseconds.
 */
public class SteadyLatency {
    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: SteadyLatency BOOTSTRAP TOPIC WARMUP RECORDS RATE SIZE ACKS");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        int warmup = Integer.parseInt(args[2]);
        int records = Integer.parseInt(args[3]);
        long rate = Long.parseLong(args[4]);
        byte[] value = new byte[Integer.parseInt(args[5])];
        Arrays.fill(value, (byte) 'x');

        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("acks", args[6]);
        props.put("enable.idempotence", "false");
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());

        long[] latencies = new long[records];
        AtomicLong failed = new AtomicLong();
        int total = warmup + records;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            long start = System.nanoTime();
            long interval = 1_000_000_000L / rate;
            for (int i = 0; i < total; i++) {
                // Paced as perf-test's throttler: never ahead of RATE, catching up when behind.
                long due = start + i * interval;
                long now;
                while ((now = System.nanoTime()) < due) {
                    LockSupport.parkNanos(due - now);
                }
                final int slot = i - warmup;
                final long sent = System.nanoTime();
                producer.send(new ProducerRecord<>(topic, value), (metadata, error) -> {
                    if (error != null) {
                        failed.incrementAndGet();
                    } else if (slot >= 0) {
                        latencies[slot] = System.nanoTime() - sent;
                    }
                });
            }
            producer.flush();
        }
        if (failed.get() > 0) {
            System.err.println(failed.get() + " sends failed");
            System.exit(1);
        }
        Arrays.sort(latencies);
        double sum = 0;
        for (long l : latencies) {
            sum += l;
        }
        System.out.printf("avg=%.2f p50=%.2f p99=%.2f p999=%.2f max=%.2f%n",
                sum / records / 1e6, at(latencies, 0.50), at(latencies, 0.99), at(latencies, 0.999),
                latencies[records - 1] / 1e6);
    }

    private static double at(long[] sorted, double quantile) {
        int index = (int) Math.min(sorted.length - 1, Math.ceil(quantile * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e6;
    }
}
