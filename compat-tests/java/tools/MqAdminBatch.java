// Runs several mqadmin commands in one JVM (tests/mqadmin.rs): each line of the file named by
// the first argument is one command, its words separated by tabs. MQAdminStartup.main prints
// and swallows a command's exception and does not exit, so it can be called once per line.
// Each command's output (stderr too, where stack traces go) sits between marker lines.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

public class MqAdminBatch {
    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        System.setErr(System.out);
        for (String line : lines) {
            if (line.isEmpty()) {
                continue;
            }
            String[] words = line.split("\t");
            System.out.println("##### BEGIN " + String.join(" ", words));
            try {
                org.apache.rocketmq.tools.command.MQAdminStartup.main(words);
            } catch (Throwable t) {
                t.printStackTrace(System.out);
            }
            System.out.println();
            System.out.println("##### END");
            System.out.flush();
        }
        System.exit(0);
    }
}
