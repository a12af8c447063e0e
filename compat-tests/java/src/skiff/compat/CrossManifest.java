package skiff.compat;

import static skiff.compat.Common.check;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * The manifest that the cross-protocol scenarios (cross-from-kafka, cross-to-kafka) share with
 * the Kafka client's program (java/kafka-cross/KafkaCross.java): one line per record as Kafka
 * sees it, tab-separated,
 *
 * <pre>partition  offset  timestamp  key  value  headers</pre>
 *
 * with key and value in base64 ({@code -} for null) and headers as comma-separated
 * {@code name:value} pairs, each in base64 (a null value {@code -}), in order; an empty field for
 * none.
 */
final class CrossManifest {
    private CrossManifest() {
    }

    /** A record header: a text name (names may repeat) and a binary value, possibly null. */
    static final class Header {
        final String name;
        final byte[] value;

        Header(String name, byte[] value) {
            this.name = name;
            this.value = value;
        }
    }

    /** One record: where it is (partition = queue id, offset = queue offset) and what it holds. */
    static final class Entry {
        final int partition;
        final long offset;
        final long timestamp;
        final byte[] key;
        /** Null for a tombstone. */
        final byte[] value;
        final List<Header> headers;

        Entry(int partition, long offset, long timestamp, byte[] key, byte[] value, List<Header> headers) {
            this.partition = partition;
            this.offset = offset;
            this.timestamp = timestamp;
            this.key = key;
            this.value = value;
            this.headers = headers;
        }

        String where() {
            return partition + ":" + offset;
        }
    }

    private static String b64(byte[] b) {
        return b == null ? "-" : Base64.getEncoder().encodeToString(b);
    }

    private static byte[] unb64(String s) {
        return s.equals("-") ? null : Base64.getDecoder().decode(s);
    }

    static List<Entry> read(Path path) throws IOException {
        List<Entry> entries = new ArrayList<>();
        for (String line : Files.readAllLines(path, StandardCharsets.UTF_8)) {
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split("\t", -1);
            check(f.length == 6, "manifest line with %d fields: %s", f.length, line);
            List<Header> headers = new ArrayList<>();
            if (!f[5].isEmpty()) {
                for (String pair : f[5].split(",", -1)) {
                    String[] kv = pair.split(":", -1);
                    check(kv.length == 2 && !kv[0].equals("-"), "manifest header %s in: %s", pair, line);
                    headers.add(new Header(new String(unb64(kv[0]), StandardCharsets.UTF_8), unb64(kv[1])));
                }
            }
            entries.add(new Entry(Integer.parseInt(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]), unb64(f[3]),
                unb64(f[4]), headers));
        }
        check(!entries.isEmpty(), "the manifest %s is empty", path);
        return entries;
    }

    /** Written aside and renamed: the reader never sees half a manifest. */
    static void write(Path path, List<Entry> entries) throws IOException {
        StringBuilder b = new StringBuilder();
        for (Entry e : entries) {
            List<String> headers = new ArrayList<>();
            for (Header h : e.headers) {
                headers.add(b64(Common.utf8(h.name)) + ":" + b64(h.value));
            }
            b.append(e.partition).append('\t').append(e.offset).append('\t').append(e.timestamp).append('\t')
                .append(b64(e.key)).append('\t').append(b64(e.value)).append('\t').append(String.join(",", headers))
                .append('\n');
        }
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        Files.createDirectories(path.toAbsolutePath().getParent());
        Files.writeString(tmp, b.toString(), StandardCharsets.UTF_8);
        Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * The bytes as the text of a RocketMQ property (KEYS or a user property), or null when they
     * are not such text: empty, not UTF-8, or holding the separators 0x01 and 0x02.
     */
    static String propertyText(byte[] b) {
        if (b == null || b.length == 0) {
            return null;
        }
        String s;
        try {
            s = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
        return s.indexOf('\u0001') >= 0 || s.indexOf('\u0002') >= 0 ? null : s;
    }

    /** For failure messages: the text and bytes of a short value, the length of a long one. */
    static String show(byte[] b) {
        if (b == null) {
            return "null";
        }
        return b.length <= 64 ? "\"" + new String(b, StandardCharsets.UTF_8) + "\" " + java.util.Arrays.toString(b)
            : b.length + " bytes starting " + java.util.Arrays.toString(java.util.Arrays.copyOf(b, 8));
    }
}
