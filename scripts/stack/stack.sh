#!/usr/bin/env bash
# The whole distributed pipeline on ONE machine, as separate processes: the eight services (query-api,
# connector-gateway, chunk-indexer, deletion-worker, acl-propagator, graph-writer, extractor,
# entity-resolver) against the dev servers of scripts/dev-services/services.sh (Kafka, PostgreSQL,
# OpenSearch, Neo4j, Redis, S3). `make stack` / `make stack-stop` call it; docs/operations.md explains it.
#
#   scripts/stack/stack.sh {start|stop|status|env}
#
#   start    write the stack's settings (once), run `python -m kgrag_runtime.admin init`, start every service
#            in the background (each in a session of its own) and wait until each answers /readyz
#   stop     SIGTERM each service's process group, SIGKILL what is left after the grace period
#   status   pid and /readyz of each service; exit 1 if any is down
#   env      the path of the settings file (source it to run admin commands against the stack)
#
# Vectors: there is no Qdrant server among the dev servers, and qdrant-client's local mode (the only
# vector option without one) is one process per folder. So unless KGRAG_QDRANT_URL names a real server
# (then every process shares it), each process that touches vectors gets its OWN local-mode folder: the
# chunk-indexer's vectors are not the query API's, and the query API's dense leg finds nothing here —
# search on this stack is BM25 (OpenSearch) plus the graph. Everything else is shared, as in production.
#
# Settings (environment variables, all optional):
#   KGRAG_STACK_DIR       run folder: env.sh (settings, mode 600), logs/, pids/, qdrant/ (default <repo>/.stack)
#   KGRAG_STACK_NAME      names the stack's database, topics, groups, index, bucket, Redis and Neo4j
#                         namespaces on the shared servers (default: stack; [a-z0-9-], 1-30)
#   KGRAG_STACK_QUERY_PORT=8000  KGRAG_STACK_GATEWAY_PORT=8080
#   KGRAG_STACK_OPS_PORT=9101    first of the six workers' ops ports (9101-9106, as in docker-compose.yml)
#   KGRAG_STACK_DEV_ENV   the dev servers' settings (default <repo>/.cache/dev-services/env.sh; skipped
#                         when KGRAG_TEST_PG_DSN is already set)
#   KGRAG_STACK_PYTHON    the interpreter (default <repo>/.venv/bin/python, as `make install` makes it)
#   KGRAG_STACK_START_TIMEOUT=300  seconds for all services to become ready
#   KGRAG_AUTH_SECRET     the services' token key (default: generated once into env.sh)
#   KGRAG_QDRANT_URL      a Qdrant server for every process (default: a local folder per process)

set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
STACK_DIR="${KGRAG_STACK_DIR:-$REPO_ROOT/.stack}"
NAME="${KGRAG_STACK_NAME:-stack}"
QUERY_PORT="${KGRAG_STACK_QUERY_PORT:-8000}"
GATEWAY_PORT="${KGRAG_STACK_GATEWAY_PORT:-8080}"
OPS_PORT="${KGRAG_STACK_OPS_PORT:-9101}"
DEV_ENV="${KGRAG_STACK_DEV_ENV:-$REPO_ROOT/.cache/dev-services/env.sh}"
PY="${KGRAG_STACK_PYTHON:-$REPO_ROOT/.venv/bin/python}"
START_TIMEOUT="${KGRAG_STACK_START_TIMEOUT:-300}"
STOP_GRACE=30
ENV_FILE="$STACK_DIR/env.sh"
PORTS_FILE="$STACK_DIR/ports.sh"
# status and stop use the ports the running stack was started with.
if [ "${1:-}" != start ] && [ -f "$PORTS_FILE" ]; then
  # shellcheck disable=SC1090
  . "$PORTS_FILE"
fi

# service  module  port-kind (http | ops)  uses-vectors
SERVICES=(
  "query-api kgrag_query_api http 1"
  "connector-gateway kgrag_connector_gateway http 0"
  "chunk-indexer kgrag_chunk_indexer ops 1"
  "deletion-worker kgrag_deletion_worker ops 1"
  "acl-propagator kgrag_acl_propagator ops 1"
  "graph-writer kgrag_graph_writer ops 0"
  "extractor kgrag_extractor ops 0"
  "entity-resolver kgrag_entity_resolver ops 0"
)

die() { echo "stack: $*" >&2; exit 1; }

port_of() {  # port_of SERVICE
  local i=0 line svc
  for line in "${SERVICES[@]}"; do
    read -r svc _ _ _ <<<"$line"
    case "$svc" in
      query-api) [ "$svc" = "$1" ] && { echo "$QUERY_PORT"; return; } ;;
      connector-gateway) [ "$svc" = "$1" ] && { echo "$GATEWAY_PORT"; return; } ;;
      *) [ "$svc" = "$1" ] && { echo $((OPS_PORT + i)); return; }; i=$((i + 1)) ;;
    esac
  done
  die "unknown service $1"
}

alive() { [ -f "$STACK_DIR/pids/$1.pid" ] && kill -0 "$(cat "$STACK_DIR/pids/$1.pid")" 2>/dev/null; }

ready_code() {  # the HTTP status of SERVICE's /readyz, 000 when it does not answer
  curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$(port_of "$1")/readyz" || true
}

write_env() {
  [[ "$NAME" =~ ^[a-z0-9-]{1,30}$ ]] || die "KGRAG_STACK_NAME must be 1-30 of [a-z0-9-], not '$NAME'"
  if [ -z "${KGRAG_TEST_PG_DSN:-}" ]; then
    [ -f "$DEV_ENV" ] || die "no dev-server settings at $DEV_ENV: run \`make services\` first (or set KGRAG_STACK_DEV_ENV)"
    # shellcheck disable=SC1090
    . "$DEV_ENV"
  fi
  local db="kgrag_${NAME//-/_}"
  "$PY" - "$ENV_FILE" "$NAME" "$db" <<'PYEOF'
import base64, os, secrets, shlex, sys
from psycopg.conninfo import make_conninfo

path, name, db = sys.argv[1:]
env = os.environ
settings = {
    "KGRAG_RUNTIME": "distributed",
    "KGRAG_PG_DSN": make_conninfo(env["KGRAG_TEST_PG_DSN"], dbname=db),
    "KGRAG_KEK": base64.b64encode(os.urandom(32)).decode(),
    "KGRAG_AUTH_SECRET": env.get("KGRAG_AUTH_SECRET") or secrets.token_urlsafe(32),
    "KGRAG_KAFKA_BOOTSTRAP": env["KGRAG_TEST_KAFKA_BOOTSTRAP"],
    "KGRAG_KAFKA_TOPIC_PREFIX": f"{name}.",
    "KGRAG_KAFKA_GROUP_PREFIX": f"kgrag-{name}",
    "KGRAG_KAFKA_TOPIC_PARTITIONS": "4",
    "KGRAG_OPENSEARCH_URL": env["KGRAG_TEST_OPENSEARCH_URL"],
    "KGRAG_OPENSEARCH_INDEX": f"kgrag-chunks-{name}",
    "KGRAG_QDRANT_COLLECTION": f"kgrag_{name.replace('-', '_')}",
    "KGRAG_NEO4J_URI": env["KGRAG_TEST_NEO4J_URI"],
    "KGRAG_NEO4J_NAMESPACE": name,
    "KGRAG_REDIS_URL": env["KGRAG_TEST_REDIS_URL"],
    "KGRAG_REDIS_NAMESPACE": f"kgrag-{name}",
    "KGRAG_S3_ENDPOINT": env["KGRAG_TEST_S3_ENDPOINT"],
    "KGRAG_S3_BUCKET": f"kgrag-{name}",
    "AWS_ACCESS_KEY_ID": env["KGRAG_TEST_S3_ACCESS_KEY"],
    "AWS_SECRET_ACCESS_KEY": env["KGRAG_TEST_S3_SECRET_KEY"],
    "AWS_DEFAULT_REGION": env.get("KGRAG_TEST_S3_REGION", "us-east-1"),
}
if env.get("KGRAG_QDRANT_URL"):
    settings["KGRAG_QDRANT_URL"] = env["KGRAG_QDRANT_URL"]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # it holds the KEK and the token key
with os.fdopen(fd, "w") as out:
    out.write("# Settings of the stack started by scripts/stack/stack.sh. Usage: set -a; . THIS; set +a\n")
    out.writelines(f"{k}={shlex.quote(v)}\n" for k, v in settings.items())
PYEOF
}

start() {
  mkdir -p "$STACK_DIR/logs" "$STACK_DIR/pids" "$STACK_DIR/qdrant"
  local line svc module kind vectors
  for line in "${SERVICES[@]}"; do
    read -r svc _ _ _ <<<"$line"
    alive "$svc" && die "$svc is already running (pid $(cat "$STACK_DIR/pids/$svc.pid")): \`make stack-stop\` first"
  done
  [ -x "$PY" ] || die "no Python at $PY: run \`make install\` (or set KGRAG_STACK_PYTHON)"
  [ -f "$ENV_FILE" ] || write_env  # kept across restarts: the same KEK, token key and names
  printf 'QUERY_PORT=%s\nGATEWAY_PORT=%s\nOPS_PORT=%s\n' "$QUERY_PORT" "$GATEWAY_PORT" "$OPS_PORT" > "$PORTS_FILE"
  set -a
  # shellcheck disable=SC1090
  . "$ENV_FILE"
  set +a
  echo "stack: init (migrations, topics, index template, Neo4j constraints) ..."
  "$PY" -m kgrag_runtime.admin init > "$STACK_DIR/logs/init.log" 2>&1 || { cat "$STACK_DIR/logs/init.log" >&2; die "init failed"; }
  for line in "${SERVICES[@]}"; do
    read -r svc module kind vectors <<<"$line"
    local port extra=()
    port="$(port_of "$svc")"
    if [ "$kind" = http ]; then extra+=("KGRAG_PORT=$port"); else extra+=("KGRAG_OPS_PORT=$port"); fi
    if [ "$vectors" = 1 ] && [ -z "${KGRAG_QDRANT_URL:-}" ]; then
      extra+=("KGRAG_QDRANT_PATH=$STACK_DIR/qdrant/$svc")  # local mode: one process per folder
    fi
    # A session of its own: `stop` signals the whole process group, so nothing it started is orphaned.
    setsid env "${extra[@]}" "$PY" -m "$module" > "$STACK_DIR/logs/$svc.log" 2>&1 < /dev/null &
    echo $! > "$STACK_DIR/pids/$svc.pid"
  done
  local deadline=$((SECONDS + START_TIMEOUT)) pending
  while :; do
    pending=()
    for line in "${SERVICES[@]}"; do
      read -r svc _ _ _ <<<"$line"
      if ! alive "$svc"; then
        echo "stack: $svc exited; its log ends:" >&2
        tail -n 30 "$STACK_DIR/logs/$svc.log" >&2
        stop >&2
        exit 1
      fi
      [ "$(ready_code "$svc")" = 200 ] || pending+=("$svc")
    done
    [ ${#pending[@]} -eq 0 ] && break
    if [ $SECONDS -ge $deadline ]; then
      echo "stack: not ready after ${START_TIMEOUT}s: ${pending[*]} (logs in $STACK_DIR/logs)" >&2
      stop >&2
      exit 1
    fi
    sleep 2
  done
  status
  echo "stack: ready. query API http://127.0.0.1:$QUERY_PORT, connector gateway http://127.0.0.1:$GATEWAY_PORT;"
  echo "stack: settings in $ENV_FILE (set -a; . $ENV_FILE; set +a); stop with \`make stack-stop\`"
}

stop() {
  local line svc pid waited
  for line in "${SERVICES[@]}"; do
    read -r svc _ _ _ <<<"$line"
    [ -f "$STACK_DIR/pids/$svc.pid" ] || continue
    pid="$(cat "$STACK_DIR/pids/$svc.pid")"
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  for line in "${SERVICES[@]}"; do
    read -r svc _ _ _ <<<"$line"
    [ -f "$STACK_DIR/pids/$svc.pid" ] || continue
    pid="$(cat "$STACK_DIR/pids/$svc.pid")"
    waited=0
    # The whole group: a process the service started counts too.
    while pgrep -g "$pid" > /dev/null 2>&1 && [ $waited -lt $((STOP_GRACE * 10)) ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    if pgrep -g "$pid" > /dev/null 2>&1; then
      echo "stack: $svc did not stop within ${STOP_GRACE}s: SIGKILL" >&2
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$STACK_DIR/pids/$svc.pid"
    echo "stack: $svc stopped"
  done
}

status() {
  local line svc down=0 code
  printf '%-18s %-8s %-6s %s\n' service pid port readyz
  for line in "${SERVICES[@]}"; do
    read -r svc _ _ _ <<<"$line"
    if alive "$svc"; then
      code="$(ready_code "$svc")"
      printf '%-18s %-8s %-6s %s\n' "$svc" "$(cat "$STACK_DIR/pids/$svc.pid")" "$(port_of "$svc")" "$code"
      [ "$code" = 200 ] || down=1
    else
      printf '%-18s %-8s %-6s %s\n' "$svc" - "$(port_of "$svc")" stopped
      down=1
    fi
  done
  return $down
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  env) echo "$ENV_FILE" ;;
  *) echo "usage: $0 {start|stop|status|env}" >&2; exit 2 ;;
esac
