// A Neo4j Community server for local integration tests: the embedded DBMS with the Bolt connector on,
// authentication off, bound to loopback. Started and stopped by ../services.sh (SIGTERM = clean shutdown).
//
//   java --add-opens=... -cp 'libs/*:classes' Neo4jServer <home-dir> [host] [bolt-port] [pagecache-MiB]
//
// There is no HTTP connector here (that lives in the neo4j-server distribution); drivers speak Bolt.

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;

public final class Neo4jServer {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Neo4jServer <home-dir> [host] [bolt-port] [pagecache-MiB]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        String host = args.length > 1 ? args[1] : "127.0.0.1";
        int port = args.length > 2 ? Integer.parseInt(args[2]) : 7687;
        long pageCacheMiB = args.length > 3 ? Long.parseLong(args[3]) : 128;

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(host, port))
                .setConfig(BoltConnector.advertised_address, new SocketAddress(host, port))
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                // No anonymous usage pings ("UDC") from a test server.
                .setConfig(GraphDatabaseSettings.udc_enabled, false)
                // Keep the footprint small: the page cache is off-heap and would otherwise default to
                // half of the free RAM.
                .setConfig(GraphDatabaseSettings.pagecache_memory, pageCacheMiB * 1024 * 1024)
                // Transaction logs: by default each database (neo4j and system) preallocates a 256 MiB
                // file and keeps two days of them: half a gigabyte of disk for a few test rows.
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, 32L * 1024 * 1024)
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "2 files")
                .build();

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("Neo4jServer: shutting down");
            dbms.shutdown();
            System.out.println("Neo4jServer: stopped");
            stopped.countDown();
        }, "neo4j-shutdown"));

        System.out.printf("Neo4jServer: started, Bolt on bolt://%s:%d, home %s%n", host, port, home);
        System.out.flush();
        stopped.await();
    }
}
