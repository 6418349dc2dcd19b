// A single-node OpenSearch 2.x for local integration tests, run inside this JVM from Maven Central jars:
// org.opensearch.node.MockNode (from org.opensearch.test:framework) accepts plugins from the classpath, so
// the two modules we need are loaded without a distribution or a plugins/ folder:
//   - Netty4Plugin          (transport-netty4-client): the HTTP REST layer and the transport layer;
//   - CommonAnalysisPlugin  (analysis-common): stemmers and language analyzers such as "english".
// Unlike the distribution this runs as root (no bootstrap checks, no jar-hell check, no security manager).
// Started and stopped by ../services.sh (SIGTERM = clean shutdown).
//
//   java -Xmx1g -cp 'libs/*:classes' OpenSearchNode <home-dir> [host] [http-port] [transport-port]

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.node.MockNode;
import org.opensearch.node.Node;
import org.opensearch.transport.Netty4Plugin;

public final class OpenSearchNode {
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

        Node node = new MockNode(settings, List.of(Netty4Plugin.class, CommonAnalysisPlugin.class));
        node.start();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("OpenSearchNode: shutting down");
            try {
                node.close();
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
