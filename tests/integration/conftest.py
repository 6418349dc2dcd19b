"""Fixtures for tests against the real servers of `scripts/dev-services/services.sh start`.

Connection settings come from `.cache/dev-services/env.sh` (KGRAG_TEST_*). An unreachable server fails
the test with the command that starts it; nothing is skipped. Every test gets its own database, topic
prefix, index, collection, bucket and Redis namespace, so tests never see each other's data.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import urlparse

import pytest

from kgrag_core.ports import Embedder, IngestLog
from kgrag_runtime.distributed import DistributedStores, open_stores
from kgrag_runtime.kafka.runner import ConsumerRunner, RunnerSettings
from kgrag_runtime.kafka.topics import ensure_topics
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import group_id

pytestmark = pytest.mark.integration

ENV = {
    "kafka": ("KGRAG_TEST_KAFKA_BOOTSTRAP", "127.0.0.1:9092"),
    "opensearch": ("KGRAG_TEST_OPENSEARCH_URL", "http://127.0.0.1:9200"),
    "neo4j": ("KGRAG_TEST_NEO4J_URI", "bolt://127.0.0.1:7687"),
    "redis": ("KGRAG_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
    "s3": ("KGRAG_TEST_S3_ENDPOINT", "http://127.0.0.1:8333"),
}


def endpoint(service: str) -> str:
    name, default = ENV[service]
    value = os.environ.get(name, default)
    parsed = urlparse(value if "://" in value else f"tcp://{value}")
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 0), timeout=2):
            pass
    except OSError as err:
        pytest.fail(
            f"{service} is not reachable at {value} ({err}). Start it with "
            f"`scripts/dev-services/services.sh start {service}` and `source .cache/dev-services/env.sh`."
        )
    return value


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder

    return OnnxMiniLmEmbedder()


@pytest.fixture
def distributed_settings(tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> KgragSettings:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", os.environ.get("KGRAG_TEST_S3_ACCESS_KEY", "kgragdev"))
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", os.environ.get("KGRAG_TEST_S3_SECRET_KEY", "kgragdevsecret"))
    return settings_of_own(tmp_path, pg_dsn)


def settings_of_own(folder: Path, pg_dsn: str) -> KgragSettings:
    """Distributed settings on the dev servers under names of this caller's own (topics created); the caller
    sets the S3 keys (AWS_*) in the environment, and drops what it made with drop_server_side."""
    tag = uuid.uuid4().hex[:10]
    settings = KgragSettings(
        runtime="distributed",
        data_dir=folder / "unused",
        kek_dir=folder / "keys",  # one KEK for every process of the test (ADR 0008)
        pg_dsn=pg_dsn,
        kafka_bootstrap=endpoint("kafka"),
        kafka_group_prefix=f"test-{tag}",
        kafka_topic_prefix=f"t{tag}.",
        kafka_topic_partitions=4,
        opensearch_url=endpoint("opensearch"),
        opensearch_index=f"kgrag-chunks-{tag}",
        # Deletions here do not wait for OpenSearch's retention lease (about 30 s each); the shredding
        # test asks for the wait and checks the purge.
        opensearch_purge_wait_s=0.0,
        qdrant_path=folder / "qdrant",
        qdrant_collection=f"chunks_{tag}",
        neo4j_uri=endpoint("neo4j"),
        neo4j_namespace=f"test-{tag}",  # the test's own nodes in the shared database
        redis_url=endpoint("redis"),
        redis_namespace=f"kgrag-test-{tag}",
        s3_endpoint=endpoint("s3"),
        s3_bucket=f"kgrag-test-{tag}",
    )
    ensure_topics(settings.kafka_bootstrap or "", partitions=4, replication=1, prefix=settings.kafka_topic_prefix)
    return settings


@pytest.fixture
def stores(distributed_settings: KgragSettings, embedder: Embedder) -> Iterator[DistributedStores]:
    with open_stores(distributed_settings, embedder=embedder) as opened:
        yield opened
        opened.cache.invalidate_all()
        opened.objects.delete_prefix("")
    drop_server_side(distributed_settings)


def drop_server_side(settings: KgragSettings) -> None:
    """Leave nothing behind on the shared servers: the test's index, topics and bucket. SeaweedFS gives every
    bucket a volume of its own and refuses writes once its volumes run out, so a leaked bucket per test
    breaks later tests."""
    import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints and no stubs are locked
    from confluent_kafka.admin import AdminClient
    from opensearchpy import OpenSearch

    from kgrag_runtime.kafka.topics import all_topics

    s3 = boto3.session.Session().client("s3", endpoint_url=settings.s3_endpoint, region_name="us-east-1")
    try:
        # A test that never wrote an object never created its bucket. Emptied by the caller (delete_prefix).
        if any(b["Name"] == settings.s3_bucket for b in s3.list_buckets()["Buckets"]):
            s3.delete_bucket(Bucket=settings.s3_bucket)
    finally:
        s3.close()

    client = OpenSearch(settings.opensearch_url)
    client.indices.delete(index=settings.opensearch_index, ignore_unavailable=True)
    client.close()
    admin = AdminClient({"bootstrap.servers": settings.kafka_bootstrap or ""})
    for future in admin.delete_topics(all_topics(settings.kafka_topic_prefix), operation_timeout=30).values():
        future.result()


class Workers:
    """Consumer runners on threads, as separate processes would run them."""

    def __init__(self, settings: KgragSettings) -> None:
        self.settings = settings
        self._threads: list[tuple[threading.Event, threading.Thread, ConsumerRunner]] = []

    def start(
        self, service: str, handler: object, *, batch_size: int = 16, outcome_log: IngestLog | None = None
    ) -> ConsumerRunner:
        from kgrag_runtime.distributed import producer

        runner = ConsumerRunner(
            handler,  # type: ignore[arg-type]
            bootstrap=self.settings.kafka_bootstrap or "",
            group_id=group_id(self.settings, service),
            producer=producer(self.settings, service),
            settings=RunnerSettings(
                batch_size=batch_size,
                poll_timeout_s=0.2,
                backoff_initial_s=0.1,
                backoff_max_s=1.0,
                lag_refresh_s=0.5,
                lag_stale_after_s=3.0,
            ),
            extra_config={"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
            outcome_log=outcome_log,
        )
        stop = threading.Event()
        thread = threading.Thread(target=runner.run, args=(stop,), name=service, daemon=True)
        thread.start()
        self._threads.append((stop, thread, runner))
        return runner

    def stop_all(self) -> None:
        for stop, _, _ in self._threads:
            stop.set()
        for _, thread, _ in self._threads:
            thread.join(timeout=30)
        self._threads.clear()


@pytest.fixture
def workers(distributed_settings: KgragSettings) -> Iterator[Workers]:
    pool = Workers(distributed_settings)
    with ExitStack() as stack:
        stack.callback(pool.stop_all)
        yield pool


def wait_for(condition: Callable[[], bool], *, timeout_s: float = 60.0, what: str = "condition") -> float:
    """Poll until the condition holds; return the seconds it took. Bounded: fails after `timeout_s`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if condition():
            return time.monotonic() - started
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout_s}s waiting for {what}")


def wait_until_quiet(runners: Sequence[ConsumerRunner], *, timeout_s: float = 90.0) -> None:
    """Wait until every runner's group has committed everything, for two seconds on end: a chain of events
    (acl.changed -> chunks.changed -> graph.changed -> entities.changed) has run out."""
    since: list[float] = []

    def idle() -> bool:
        if any(r.lag_report()["lag_fresh"] is not True or r.lag > 0 for r in runners):
            since.clear()
            return False
        since.append(time.monotonic())
        return since[-1] - since[0] >= 2.0

    wait_for(idle, timeout_s=timeout_s, what="every consumer group caught up")
