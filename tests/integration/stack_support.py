"""`make stack` for the tests: the eight services as separate processes against the dev servers, on free
ports, in a stack folder and under names of the test's own; stopped with `make stack-stop` and checked to
leave no process behind, then everything it made on the shared servers is removed."""

from __future__ import annotations

import os
import random
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import jwt
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 420
SERVICES = 8


@dataclass(frozen=True)
class Stack:
    folder: Path
    name: str
    query_url: str
    gateway_url: str
    env: dict[str, str]  # the caller's environment plus the stack's settings (env.sh)

    def token(self, user: str, scopes: str, *groups: str) -> str:
        now = int(time.time())
        claims = {"sub": user, "groups": list(groups), "scope": scopes, "iss": "kgrag-local", "aud": "kgrag"}
        return jwt.encode({**claims, "iat": now, "exp": now + 3600}, self.env["KGRAG_AUTH_SECRET"], algorithm="HS256")

    def pids(self) -> dict[str, int]:
        return {p.stem: int(p.read_text()) for p in sorted((self.folder / "pids").glob("*.pid"))}


def _free_base(count: int) -> int:
    """The first of `count` consecutive ports that are free now."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20_000, 40_000)
        try:
            for port in range(base, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no free port range found")


def _settings(env_file: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in env_file.read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out[key] = shlex.split(value)[0] if value else ""
    return out


def _group_members(pgids: set[int]) -> list[tuple[int, str]]:
    """(process group, command) of each process still in one of these groups (a service, or anything it
    started)."""
    left = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # it ended while we looked
        if int(fields[2]) in pgids and fields[0] != "Z":
            left.append((int(fields[2]), f"{proc.name}: {command[:120]}"))
    return left


def make(target: str, env: dict[str, str], timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", target], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )


def free_ports() -> int:
    """The first of SERVICES consecutive free ports: query API, gateway, then the six workers' ops ports."""
    return _free_base(SERVICES)


def dev_env() -> dict[str, str]:
    """The dev servers' settings (KGRAG_TEST_*) as `make stack` reads them, and nothing else of KGRAG_*;
    endpoint() fails the test, with the command that starts it, when a server does not answer."""
    from tests.integration.conftest import ENV, endpoint
    from tests.pipeline.cli_runner import cli_env

    env = cli_env(**{k: v for k, v in os.environ.items() if k.startswith("KGRAG_TEST_")})
    env.update({name: endpoint(service) for service, (name, _) in ENV.items()})
    env.setdefault("KGRAG_TEST_PG_DSN", "postgresql://postgres:kgrag@127.0.0.1:5433/kgrag")
    env.setdefault("KGRAG_TEST_S3_ACCESS_KEY", "kgragdev")
    env.setdefault("KGRAG_TEST_S3_SECRET_KEY", "kgragdevsecret")
    return env


@contextmanager
def running_stack(folder: Path, base_env: dict[str, str], *, base: int | None = None) -> Iterator[Stack]:
    """`make stack` on free ports (from `base`) under a unique name; `make stack-stop`, the no-orphan check
    and the purge of the shared servers afterwards, whatever happened."""
    name = f"t{uuid.uuid4().hex[:10]}"
    base = free_ports() if base is None else base
    env = {
        **base_env,
        "KGRAG_STACK_DIR": str(folder),
        "KGRAG_STACK_NAME": name,
        "KGRAG_STACK_QUERY_PORT": str(base),
        "KGRAG_STACK_GATEWAY_PORT": str(base + 1),
        "KGRAG_STACK_OPS_PORT": str(base + 2),
        "KGRAG_STACK_PYTHON": sys.executable,
    }
    pgids: set[int] = set()
    try:
        started = make("stack", env, START_TIMEOUT_S)
        pgids = {int(p.read_text()) for p in (folder / "pids").glob("*.pid")}
        assert started.returncode == 0, started.stdout[-3000:] + started.stderr[-3000:]
        stack = Stack(
            folder,
            name,
            f"http://127.0.0.1:{base}",
            f"http://127.0.0.1:{base + 1}",
            {**env, **_settings(folder / "env.sh")},
        )
        yield stack
    finally:
        try:
            stopped = make("stack-stop", env, 120)
            left = _group_members(pgids)
            for pgid in {group for group, _ in left}:  # never leave them running for the next test
                os.killpg(pgid, signal.SIGKILL)
            assert stopped.returncode == 0, stopped.stderr
            assert not left, f"processes left after make stack-stop: {left}"
        finally:
            if (folder / "env.sh").exists():
                purge(_settings(folder / "env.sh"))


def purge(settings: dict[str, str]) -> None:
    """Remove what the stack made on the shared servers: database, topics, index, Neo4j namespace, Redis
    keys, stored objects."""
    from confluent_kafka.admin import AdminClient
    from opensearchpy import OpenSearch

    from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
    from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
    from kgrag_adapters.redis.cache import RedisCache
    from kgrag_adapters.s3.object_store import S3ObjectStore
    from kgrag_runtime.kafka.topics import all_topics

    prefix = settings["KGRAG_KAFKA_TOPIC_PREFIX"]
    admin = AdminClient({"bootstrap.servers": settings["KGRAG_KAFKA_BOOTSTRAP"]})
    existing = set(admin.list_topics(timeout=30).topics)
    doomed = [t for t in all_topics(prefix) if t in existing]
    for future in admin.delete_topics(doomed, operation_timeout=30).values() if doomed else []:
        future.result()
    client = OpenSearch(settings["KGRAG_OPENSEARCH_URL"])
    client.indices.delete(index=settings["KGRAG_OPENSEARCH_INDEX"], ignore_unavailable=True)
    client.close()
    with Neo4jLexicalGraph.connect(settings["KGRAG_NEO4J_URI"], namespace=settings["KGRAG_NEO4J_NAMESPACE"]) as graph:
        graph.drop_namespace()
        Neo4jKnowledgeGraph(graph.driver, graph.database, namespace=graph.namespace).drop_namespace()
    cache = RedisCache.connect(settings["KGRAG_REDIS_URL"], namespace=settings["KGRAG_REDIS_NAMESPACE"])
    cache.invalidate_all()
    cache.close()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", settings["AWS_ACCESS_KEY_ID"])
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", settings["AWS_SECRET_ACCESS_KEY"])
    S3ObjectStore.connect(settings["KGRAG_S3_ENDPOINT"], settings["KGRAG_S3_BUCKET"]).delete_prefix("")
    dsn = conninfo_to_dict(settings["KGRAG_PG_DSN"])
    database = str(dsn.pop("dbname"))
    with psycopg.connect(**{**dsn, "dbname": "postgres"}, autocommit=True) as conn:  # type: ignore[arg-type]
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))
