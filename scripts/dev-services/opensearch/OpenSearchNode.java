// A single-node OpenSearch 2.x for local integration tests, run inside this JVM from Maven Central jars.
// Node has a protected constructor that takes plugin classes from the classpath (the one the test
// framework's MockNode uses), so the two modules we need load without a distribution or a plugins/ folder:
//   - Netty4Plugin          (transport-netty4-client): the HTTP REST layer and the transport layer;
//   - CommonAnalysisPlugin  (analysis-common): stemmers and language analyzers such as "english".
// We subclass Node directly instead of using MockNode: org.opensearch.test:framework drags in
// randomizedtesting, and with it on the classpath Randomness.get() demands a RandomizedRunner context
// ("No context information for thread") and the node fails to start outside a test runner.
// Unlike the distribution this runs as root (no bootstrap checks, no jar-hell check, no security manager).
// Started and stopped by ../services.sh (SIGTERM = clean shutdown).
//
//   java -Xmx1g -cp 'libs/*:classes' OpenSearchNode <home-dir> [host] [http-port] [transport-port]

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

public final class OpenSearchNode {
    /** A plain Node with classpath plugins. */
    static final class EmbeddedNode extends Node {
        EmbeddedNode(Settings settings, Collection<Class<? extends Plugin>> plugins) {
            super(InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), null, () -> "kgrag-dev-0"),
                    plugins, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: OpenSearchNode <home-dir> [host] [http-port] [transport-port]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        String host = args.length > 1 ? args[1] : "127.0.0.1";
        String httpPort = args.length > 2 ? args[2] : "9200";
        String transportPort = args.length > 3 ? args[3] : "9300";
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));

        Settings settings = Settings.builder()
                .put("cluster.name", "kgrag-dev")
                .put("node.name", "kgrag-dev-0")
                .put("path.home", home.toString())
                .put("path.data", home.resolve("data").toString())
                .put("path.logs", home.resolve("logs").toString())
                .put("discovery.type", "single-node")
                .put("network.host", host)
                .put("http.port", httpPort)
                .put("transport.port", transportPort)
                // A dev box's disk is often > 90 % full: don't let the disk watermarks block shard
                // allocation (the cluster would stay red/yellow for reasons unrelated to the code).
                .put("cluster.routing.allocation.disk.threshold_enabled", false)
                .build();

        Node node = new EmbeddedNode(settings, List.of(Netty4Plugin.class, CommonAnalysisPlugin.class));
        node.start();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("OpenSearchNode: shutting down");
            try {
                node.close();
                System.out.println("OpenSearchNode: stopped");
            } catch (Exception e) {
                e.printStackTrace();
            }
            stopped.countDown();
        }, "opensearch-shutdown"));

        System.out.printf("OpenSearchNode: started, HTTP on http://%s:%s, home %s%n", host, httpPort, home);
        System.out.flush();
        stopped.await();
    }
}
