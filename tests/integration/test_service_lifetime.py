"""Every distributed service exits cleanly on SIGTERM and SIGINT (docs/security.md, section 9).

Each service runs as its deployment runs it, `python -m <package>` with KGRAG_* settings, on the real
servers (own topics, consumer groups, index, bucket, Redis namespace). A clean exit is: through the normal
exit path (a status, not death by the signal), within the bound, nothing left in the process's session,
and for a Kafka worker its consumer group left (no member). Positive controls: each service answered its
health endpoint and each worker was a member of its group just before the signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from confluent_kafka.admin import AdminClient

from kgrag_runtime.distributed import DistributedStores
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import group_id
from tests.integration.conftest import wait_for
from tests.neo4j_lock import neo4j_held
from tests.pipeline.test_process_lifetime import free_port

pytestmark = pytest.mark.integration
WORKERS = {
    "acl-propagator": "kgrag_acl_propagator",
    "chunk-indexer": "kgrag_chunk_indexer",
    "deletion-worker": "kgrag_deletion_worker",
    "entity-resolver": "kgrag_entity_resolver",
    "extractor": "kgrag_extractor",
    "graph-writer": "kgrag_graph_writer",
}
HTTP = {"query-api": "kgrag_query_api", "connector-gateway": "kgrag_connector_gateway"}
START_S = 150.0  # eight interpreters importing their engines at once, on a busy 2-core machine
STOP_S = 30.0


@dataclass
class Service:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def healthy(self) -> bool:
        assert self.proc.poll() is None, f"{self.name} exited early:\n{self.log.read_text()[-3000:]}"
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


def session_members(sid: int) -> list[int]:
    """Live processes of session `sid` (each service starts its own session, so this is it and its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if stat[0] != "Z" and int(stat[3]) == sid:  # fields after the name: state, ppid, pgrp, session
            found.append(int(entry.name))
    return found


def environment(settings: KgragSettings, service: str, tmp: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KGRAG_")}
    dsn = settings.pg_dsn.get_secret_value() if settings.pg_dsn else ""
    redis = settings.redis_url.get_secret_value() if settings.redis_url else ""
    env.update(
        KGRAG_RUNTIME="distributed",
        KGRAG_PG_DSN=dsn,
        KGRAG_KEK_DIR=str(settings.kek_dir),
        KGRAG_KAFKA_BOOTSTRAP=settings.kafka_bootstrap or "",
        KGRAG_KAFKA_GROUP_PREFIX=settings.kafka_group_prefix,
        KGRAG_KAFKA_TOPIC_PREFIX=settings.kafka_topic_prefix,
        KGRAG_OPENSEARCH_URL=settings.opensearch_url or "",
        KGRAG_OPENSEARCH_INDEX=settings.opensearch_index,
        # qdrant-client's local mode allows one process per folder: each service has its own.
        KGRAG_QDRANT_PATH=str(tmp / f"qdrant-{service}"),
        KGRAG_QDRANT_COLLECTION=settings.qdrant_collection,
        KGRAG_NEO4J_URI=settings.neo4j_uri or "",
        KGRAG_REDIS_URL=redis,
        KGRAG_REDIS_NAMESPACE=settings.redis_namespace,
        KGRAG_S3_ENDPOINT=settings.s3_endpoint or "",
        KGRAG_S3_BUCKET=settings.s3_bucket,
        KGRAG_OPS_PORT=str(port),
        KGRAG_PORT=str(port),
        KGRAG_AUTH_SECRET="lifetime-key-" + "x" * 32,
    )
    return env


@pytest.fixture
def services(distributed_settings: KgragSettings, stores: DistributedStores, tmp_path: Path) -> Iterator[list[Service]]:
    # `stores` first: the database is migrated and the KEK made before eight processes open them at once.
    # The graph-writer applies the Neo4j schema as it starts: not while a contract suite wipes the database.
    lock = neo4j_held(distributed_settings.neo4j_uri or "")
    lock.__enter__()
    started: list[Service] = []
    for name, module in {**WORKERS, **HTTP}.items():
        port = free_port()
        log = tmp_path / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", module],
                env=environment(distributed_settings, name, tmp_path, port),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(Service(name, proc, port, log))
    try:
        yield started
    finally:
        for service in started:  # only what this test started, by pid, even when an assertion failed
            if service.proc.poll() is None:
                service.proc.kill()
                service.proc.wait(STOP_S)
        lock.__exit__(None, None, None)


def group_members(admin: AdminClient, group: str) -> int:
    [future] = admin.describe_consumer_groups([group], request_timeout=10).values()
    return len(future.result().members)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_every_service_exits_cleanly_on_the_signal(
    services: list[Service], distributed_settings: KgragSettings, sig: signal.Signals
) -> None:
    admin = AdminClient({"bootstrap.servers": distributed_settings.kafka_bootstrap or ""})
    for service in services:
        wait_for(service.healthy, timeout_s=START_S, what=f"{service.name} to answer /healthz")
    for service in services:
        if service.name in WORKERS:
            group = group_id(distributed_settings, service.name)
            wait_for(lambda g=group: group_members(admin, g) == 1, what=f"{service.name} to join its group")
        assert session_members(service.proc.pid) == [service.proc.pid]  # positive control: it runs, alone

    for service in services:
        service.proc.send_signal(sig)
    failures = []
    for service in services:
        try:
            code = service.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            failures.append(f"{service.name}: still running {STOP_S:.0f}s after {sig.name}")
            continue
        tail = service.log.read_text(errors="replace")[-2000:]
        if code < 0:
            failures.append(f"{service.name}: died of signal {-code} instead of shutting down\n{tail}")
        elif code not in (0, 128 + sig):
            failures.append(f"{service.name}: exit status {code}\n{tail}")
        elif "Traceback" in tail:
            failures.append(f"{service.name}: a traceback on the way out\n{tail}")
        left = session_members(service.proc.pid)
        if left:
            failures.append(f"{service.name}: left processes {left} behind")
        if service.name in WORKERS and group_members(admin, group_id(distributed_settings, service.name)):
            failures.append(f"{service.name}: still a member of its consumer group")
    assert failures == [], "\n".join(failures)
