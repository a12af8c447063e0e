package dev.skiff.testcontainers;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The few RocketMQ remoting requests the module sends itself (is the broker registered, create a
 * topic, is it routed), one connection per request, JSON headers.
 *
 * <p>Why not the official admin client: its classes moved between client lines (4.9.x
 * {@code org.apache.rocketmq.common.protocol}, 5.x {@code org.apache.rocketmq.remoting.protocol}),
 * so a module built on one line breaks a test that uses the other. With no RocketMQ dependency the
 * module works beside whichever client the test brings. The frame is RocketMQ's: a 4-byte length,
 * a 4-byte header length whose high byte is the serialization (0 = JSON), the header, the body.
 */
final class Remoting {
    /** Request codes, as {@code RequestCode} names them. */
    static final int UPDATE_AND_CREATE_TOPIC = 17;
    static final int GET_ROUTEINFO_BY_TOPIC = 105;
    static final int GET_BROKER_CLUSTER_INFO = 106;

    private static final AtomicInteger OPAQUE = new AtomicInteger();
    private static final Pattern CODE = Pattern.compile("\"code\"\\s*:\\s*(-?\\d+)");
    private static final Pattern REMARK = Pattern.compile("\"remark\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
    /** Answers are small here; anything larger is not a RocketMQ peer answering these codes. */
    private static final int MAX_FRAME = 16 << 20;

    private Remoting() {}

    /** A response: its code (0 = success), remark and body. */
    record Response(int code, String remark, byte[] body) {
        String bodyText() {
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** Sends one request to {@code addr} ({@code host:port}) and reads its response. */
    static Response call(String addr, int code, Map<String, String> extFields, Duration timeout)
            throws IOException {
        int colon = addr.lastIndexOf(':');
        InetSocketAddress to = new InetSocketAddress(addr.substring(0, colon),
                Integer.parseInt(addr.substring(colon + 1)));
        int millis = (int) timeout.toMillis();
        try (Socket socket = new Socket()) {
            socket.connect(to, millis);
            socket.setSoTimeout(millis);
            socket.setTcpNoDelay(true);
            byte[] header = header(code, extFields).getBytes(StandardCharsets.UTF_8);
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            out.writeInt(4 + header.length);
            out.writeInt(header.length); // high byte 0: JSON
            out.write(header);
            out.flush();

            DataInputStream in = new DataInputStream(socket.getInputStream());
            int length = in.readInt();
            if (length < 4 || length > MAX_FRAME) {
                throw new IOException(addr + " answered a frame of " + length + " bytes");
            }
            int headerLength = in.readInt() & 0xFFFFFF;
            if (headerLength > length - 4) {
                throw new IOException(addr + " answered a header longer than its frame");
            }
            byte[] replyHeader = new byte[headerLength];
            in.readFully(replyHeader);
            byte[] body = new byte[length - 4 - headerLength];
            in.readFully(body);
            String json = new String(replyHeader, StandardCharsets.UTF_8);
            Matcher c = CODE.matcher(json);
            if (!c.find()) {
                throw new IOException(addr + " answered a header without a code: " + json);
            }
            Matcher r = REMARK.matcher(json);
            return new Response(Integer.parseInt(c.group(1)), r.find() ? r.group(1) : "", body);
        }
    }

    /**
     * Whether the name server at {@code namesrv} lists {@code broker} as a master: clients can
     * find it (a port that accepts connections says nothing about that).
     */
    static boolean masterRegistered(String namesrv, String broker, Duration timeout)
            throws IOException {
        Response r = call(namesrv, GET_BROKER_CLUSTER_INFO, Map.of(), timeout);
        // ClusterInfo's brokerAddrs map broker id to address; Java's JSON writes the key bare.
        return r.code() == 0 && Pattern.compile("(?:\"0\"|\\b0)\\s*:\\s*\""
                + Pattern.quote(broker) + "\"").matcher(r.bodyText()).find();
    }

    /** Creates (or updates) {@code topic} on {@code broker} with {@code queues} read and write queues. */
    static void createTopic(String broker, String topic, int queues, Duration timeout)
            throws IOException {
        Map<String, String> ext = new LinkedHashMap<>();
        ext.put("topic", topic);
        ext.put("defaultTopic", "TBW102");
        ext.put("readQueueNums", Integer.toString(queues));
        ext.put("writeQueueNums", Integer.toString(queues));
        ext.put("perm", "6"); // read and write
        ext.put("topicFilterType", "SINGLE_TAG");
        ext.put("topicSysFlag", "0");
        ext.put("order", "false");
        Response r = call(broker, UPDATE_AND_CREATE_TOPIC, ext, timeout);
        if (r.code() != 0) {
            throw new IOException("creating topic " + topic + " on " + broker + ": code "
                    + r.code() + ", " + r.remark());
        }
    }

    /** Whether the name server has a route with queues for {@code topic}. */
    static boolean routed(String namesrv, String topic, Duration timeout) throws IOException {
        Response r = call(namesrv, GET_ROUTEINFO_BY_TOPIC, Map.of("topic", topic), timeout);
        return r.code() == 0 && r.bodyText().matches("(?s).*\"queueDatas\"\\s*:\\s*\\[\\s*\\{.*");
    }

    private static String header(int code, Map<String, String> extFields) {
        StringBuilder json = new StringBuilder()
                .append("{\"code\":").append(code)
                .append(",\"flag\":0,\"language\":\"JAVA\",\"opaque\":")
                .append(OPAQUE.incrementAndGet())
                .append(",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":0,\"extFields\":{");
        String sep = "";
        for (Map.Entry<String, String> e : extFields.entrySet()) {
            json.append(sep).append(quote(e.getKey())).append(':').append(quote(e.getValue()));
            sep = ",";
        }
        return json.append("}}").toString();
    }

    private static String quote(String s) {
        StringBuilder q = new StringBuilder("\"");
        for (char ch : s.toCharArray()) {
            switch (ch) {
                case '"' -> q.append("\\\"");
                case '\\' -> q.append("\\\\");
                default -> {
                    if (ch < 0x20) {
                        q.append(String.format("\\u%04x", (int) ch));
                    } else {
                        q.append(ch);
                    }
                }
            }
        }
        return q.append('"').toString();
    }
}
