"""Distributed benchmarks on the real servers: freshness under steady load, and chunk-indexer scale-out.

    uv run python -m kgrag_runtime.benchmarks.distributed --docs 200 --rate 5 --replicas 1,2 \\
        --out bench-results/distributed

1. **Freshness.** Documents are produced one at a time at a steady rate through `KafkaIngest` (the query
   API's ingestion path), each stamped with its produce time (in the event's metadata and in the
   benchmark's own table). A chunk-indexer `ConsumerRunner` (the runtime's default batch size and poll
   timeout) consumes them on a thread of this process. A probe thread polls every pending document until
   it is *searchable*: ACTIVE in PostgreSQL (committed last by the indexer), a chunk of it returned by an
   OpenSearch BM25 search for its unique token under its own ACL class, and its vectors in the vector
   index. Freshness = first poll that saw all three − produce time.
2. **Scale-out.** A backlog of N documents is put on a fresh 12-partition topic while the chunk-indexer
   replicas — separate OS processes (`python -m kgrag_runtime.benchmarks.distributed --worker-…`), one
   consumer group — have joined the group and paused their partitions; then all resume at once and the
   drain time (resume → last offset commit) gives docs/s and chunks/s. Each configuration gets fresh
   topics, database, index, bucket and Redis namespace, so the embedding cache starts empty every time.
   Replicas load the model and warm it up before the clock starts. Each replica reports its partition
   assignment and how many messages it took from each partition.

The vector projection is the honest compromise of this machine: there is no Qdrant server here, and
qdrant-client's local mode is a brute-force Python toy with one client per directory. So each process
writes its vectors to its **own Qdrant Edge shard** (the real Qdrant engine, in process, with a flushed
write-ahead log, like the embedded runtime) through the same `VectorIndex` port. Everything else —
Kafka, PostgreSQL, OpenSearch, S3, Redis — is the shared server, as in production. Consequences, stated in
the results too: the vector write is an in-process call, not a network round trip to a Qdrant server;
with 2 replicas the vectors are split over 2 unshared shards (the scale-out table compares ingest
throughput, not a searchable shared index); freshness is measured on the single-process path, where the
probe reads the same shard as the worker.

Every endpoint must be on the loopback interface (the benchmark creates and drops databases, topics,
indexes and buckets); every loop is bounded in count and time; everything created is removed afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import ipaddress
import json
import logging
import os
import platform
import queue
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

import psycopg
from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pydantic import SecretStr
from rich.console import Console

from kgrag_adapters.opensearch.keyword_index import OpenSearchKeywordIndex
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_adapters.qdrant_edge.vector_index import EdgeVectorIndex
from kgrag_adapters.redis.cache import RedisCache
from kgrag_adapters.s3.object_store import S3ObjectStore
from kgrag_core.acl import Caller
from kgrag_core.documents import DocumentStatus, SourceDocument
from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler, StagedChunks
from kgrag_core.handlers.protocol import HandlerResult
from kgrag_core.indexing.indexer import DocumentIndexer
from kgrag_core.ports import Embedder
from kgrag_core.retrieval.hybrid import HybridSearcher
from kgrag_runtime.benchmarks.synthetic import synthetic_documents
from kgrag_runtime.distributed import producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.kafka.runner import ConsumerRunner, RunnerSettings
from kgrag_runtime.kafka.topics import all_topics, ensure_topics
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_embedder, build_indexer, build_key_ring
from kgrag_runtime.worker import group_id

log = logging.getLogger(__name__)

SERVICE = "chunk-indexer"
TOPIC_PARTITIONS = 12
PROTOCOL = "KGRAG-BENCH"
STAMP_KEY = "bench_produced_at"
# Small documents: 2 sections x 2 paragraphs x 60 words plus a token line chunk into 3 chunks each.
DOC_SHAPE = {"sections": 2, "paragraphs": 2, "words": 60}
PROBE_INTERVAL_S = 0.05
WARMUP_DOCS = 2
# The diagnostic runner variant. Lag used to be measured on the consume loop (one broker round trip per
# partition, each waiting behind the fetcher's long poll: ~6 s per refresh at 12 partitions, every 5 s).
# It is now measured by `kafka.lag.LagMonitor` on a thread of its own; the diagnostic rows push its
# refresh past the run, so the two variants show that measuring lag no longer costs throughput.
NO_LAG_REFRESH_S = 1e9
RUNNER_DEFAULT = "defaults"
RUNNER_NO_LAG = "lag refresh off (diagnostic)"
RUNNER_NO_PIPELINE = "pipeline off (same-run baseline)"
VECTOR_NOTE = (
    "Vector projection: one Qdrant Edge shard per worker process (the real Qdrant engine, in process) — "
    "there is no Qdrant server on this machine, and qdrant-client's local mode is a single-client Python "
    "toy. Kafka, PostgreSQL, OpenSearch, S3 and Redis are the shared servers. The vector write is an "
    "in-process call, not a network round trip; with several replicas the vectors land in unshared "
    "shards, so the scale-out table compares ingest throughput only; freshness is measured on the "
    "single-process path, where the probe reads the worker's shard."
)

# Where the dev services listen (scripts/dev-services/services.sh) unless KGRAG_TEST_* or a flag says.
_DEFAULTS = {
    "kafka": ("KGRAG_TEST_KAFKA_BOOTSTRAP", "127.0.0.1:9092"),
    "pg": ("KGRAG_TEST_PG_DSN", "postgresql://postgres:kgrag@127.0.0.1:5433/kgrag"),
    "opensearch": ("KGRAG_TEST_OPENSEARCH_URL", "http://127.0.0.1:9200"),
    "redis": ("KGRAG_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
    "s3": ("KGRAG_TEST_S3_ENDPOINT", "http://127.0.0.1:8333"),
    "s3_access_key": ("KGRAG_TEST_S3_ACCESS_KEY", "kgragdev"),
    "s3_secret_key": ("KGRAG_TEST_S3_SECRET_KEY", "kgragdevsecret"),
}


class BenchmarkError(RuntimeError):
    """A benchmark phase could not finish (a server refused, a replica died, a time limit passed)."""


# --- endpoints and per-run isolation ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoints:
    """The servers the benchmark runs against; `pg_server_dsn` must be allowed to CREATE DATABASE."""

    kafka: str
    pg_server_dsn: str
    opensearch: str
    redis: str
    s3: str
    s3_access_key: str
    s3_secret_key: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: str | None) -> Endpoints:
        """Flags (`overrides`) first, then the KGRAG_TEST_* variables of the dev services, then their defaults."""
        source = os.environ if env is None else env
        values = {key: overrides.get(key) or source.get(var) or default for key, (var, default) in _DEFAULTS.items()}
        return cls(
            values["kafka"],
            values["pg"],
            values["opensearch"],
            values["redis"],
            values["s3"],
            values["s3_access_key"],
            values["s3_secret_key"],
        )

    def hosts(self) -> dict[str, str]:
        pg_host = conninfo_to_dict(self.pg_server_dsn).get("host") or "localhost"
        return {
            "kafka": self.kafka,
            "postgresql": f"{pg_host}:{conninfo_to_dict(self.pg_server_dsn).get('port') or 5432}",
            "opensearch": self.opensearch,
            "redis": _without_credentials(self.redis),
            "s3": self.s3,
        }

    def check_loopback(self) -> None:
        """Refuse anything but 127.0.0.0/8, ::1 and localhost: the benchmark creates and drops things."""
        names = [h.rsplit(":", 1)[0] for h in self.kafka.split(",")]
        names.append(str(conninfo_to_dict(self.pg_server_dsn).get("host") or "localhost"))
        names.extend(urlparse(u).hostname or "" for u in (self.opensearch, self.redis, self.s3))
        bad = [n for n in names if not _is_loopback(n)]
        if bad:
            raise BenchmarkError(
                f"refusing to benchmark against non-loopback hosts {sorted(set(bad))}: the "
                "distributed benchmark creates and drops databases, topics, indexes and buckets; "
                "run it against scripts/dev-services/services.sh"
            )


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host in ("localhost", "") or host.startswith("/"):  # "" or a socket directory: a local PostgreSQL
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _without_credentials(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.hostname}:{parsed.port}{parsed.path}"


@contextlib.contextmanager
def _aws_credentials(endpoints: Endpoints) -> Iterator[None]:
    """The S3 adapter reads the standard AWS chain; supply the dev store's keys where none are set."""
    added = [k for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if k not in os.environ]
    os.environ.setdefault("AWS_ACCESS_KEY_ID", endpoints.s3_access_key)
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", endpoints.s3_secret_key)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


@contextlib.contextmanager
def _isolated_run(endpoints: Endpoints, label: str, data_dir: Path) -> Iterator[KgragSettings]:
    """Settings for one run with its own database, topics (12 partitions), consumer group, OpenSearch
    index, S3 bucket and Redis namespace; all of them removed afterwards, whatever happened."""
    tag = f"{label}{uuid.uuid4().hex[:8]}"
    database = f"kgrag_bench_{tag}"
    settings = KgragSettings(
        runtime="distributed",
        data_dir=data_dir,
        kek_dir=data_dir / "keys",  # one KEK for the run's every process (ADR 0008)
        pg_dsn=SecretStr(make_conninfo(endpoints.pg_server_dsn, dbname=database)),
        kafka_bootstrap=endpoints.kafka,
        kafka_group_prefix=f"bench-{tag}",
        kafka_topic_prefix=f"bench-{tag}.",
        kafka_topic_partitions=TOPIC_PARTITIONS,
        opensearch_url=endpoints.opensearch,
        opensearch_index=f"kgrag-chunks-bench-{tag}",
        qdrant_path=None,
        qdrant_url=None,
        redis_url=SecretStr(endpoints.redis),
        redis_namespace=f"kgrag-bench-{tag}",
        s3_endpoint=endpoints.s3,
        s3_bucket=f"kgrag-bench-{tag}",
    )
    with psycopg.connect(endpoints.pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
    try:
        ensure_topics(endpoints.kafka, partitions=TOPIC_PARTITIONS, replication=1, prefix=settings.kafka_topic_prefix)
        yield settings
    finally:
        _cleanup(endpoints, settings, database)


def _cleanup(endpoints: Endpoints, settings: KgragSettings, database: str) -> None:
    """Remove what a run created. Each step is attempted even if an earlier one failed."""
    steps: list[tuple[str, Callable[[], object]]] = [
        ("consumer group", lambda: _delete_group(endpoints.kafka, group_id(settings, SERVICE))),
        ("topics", lambda: _delete_topics(endpoints.kafka, settings.kafka_topic_prefix)),
        ("OpenSearch index", lambda: _delete_index(endpoints.opensearch, settings.opensearch_index)),
        ("S3 bucket", lambda: _delete_bucket(endpoints, settings.s3_bucket)),
        ("Redis namespace", lambda: _delete_namespace(endpoints.redis, settings.redis_namespace)),
        ("database", lambda: _drop_database(endpoints.pg_server_dsn, database)),
    ]
    for what, step in steps:
        try:
            step()
        except Exception as err:  # noqa: BLE001 - cleanup goes on; the failure is reported
            log.warning("could not remove the benchmark's %s: %s", what, err)


def _delete_group(bootstrap: str, group: str, *, wait_s: float = 20.0) -> None:
    """Delete the group; a member that did not leave cleanly keeps it non-empty until its session
    times out (10 s), so retry for up to `wait_s`."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + wait_s
    while True:
        try:
            for future in admin.delete_consumer_groups([group], request_timeout=30).values():
                future.result()
            return
        except KafkaException as err:
            code = err.args[0].code()
            if code == KafkaError.GROUP_ID_NOT_FOUND:  # never joined: nothing to delete
                return
            if code != KafkaError.NON_EMPTY_GROUP or time.monotonic() > deadline:
                raise
        time.sleep(1.0)


def _delete_topics(bootstrap: str, prefix: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=30).topics)
    names = [t for t in all_topics(prefix) if t in existing]
    if names:
        for future in admin.delete_topics(names, operation_timeout=30).values():
            future.result()


def _delete_index(url: str, index: str) -> None:
    from opensearchpy import OpenSearch

    client = OpenSearch(hosts=[url])
    try:
        client.indices.delete(index=index, ignore_unavailable=True)
    finally:
        client.close()


def _delete_bucket(endpoints: Endpoints, bucket: str) -> None:
    import boto3  # type: ignore[import-untyped]  # boto3 ships no type hints and no stubs are locked
    from botocore.config import Config  # type: ignore[import-untyped]  # ditto (botocore)

    client = boto3.session.Session().client(
        "s3",
        endpoint_url=endpoints.s3,
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", endpoints.s3_access_key),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", endpoints.s3_secret_key),
        config=Config(region_name="us-east-1", s3={"addressing_style": "path"}, connect_timeout=5, read_timeout=30),
    )
    try:
        for _ in range(100):  # bounded: 100 pages of 1,000 keys
            page = client.list_objects_v2(Bucket=bucket, MaxKeys=1000)
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if not keys:
                break
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
        client.delete_bucket(Bucket=bucket)
    except Exception as err:
        if "NoSuchBucket" not in str(err):
            raise
    finally:
        client.close()


def _delete_namespace(url: str, namespace: str) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    try:
        keys = list(client.scan_iter(match=f"{namespace}:*", count=500))
        for start in range(0, len(keys), 500):
            client.unlink(*keys[start : start + 500])
    finally:
        client.close()


def _drop_database(server_dsn: str, database: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(database)))


# --- the stores a chunk-indexer process writes ------------------------------------------------------


@dataclass(slots=True)
class _IndexerStores:
    store: PostgresStore
    vectors: EdgeVectorIndex
    keywords: OpenSearchKeywordIndex
    objects: S3ObjectStore
    cache: RedisCache
    embedder: Embedder

    def indexer(self, settings: KgragSettings) -> DocumentIndexer:
        """The same indexer `DistributedStores.indexer` builds, with the vector index swapped (see the
        module docstring): the benchmark measures the production use case, not a copy of it."""
        return build_indexer(
            settings,
            store=self.store,
            vectors=self.vectors,
            keywords=self.keywords,
            objects=self.objects,
            cache=self.cache,
            embedder=self.embedder,
        )


@contextlib.contextmanager
def _open_indexer_stores(settings: KgragSettings, shard: Path, embedder: Embedder) -> Iterator[_IndexerStores]:
    with contextlib.ExitStack() as stack:
        dsn = settings.pg_dsn.get_secret_value() if settings.pg_dsn else ""
        redis_url = settings.redis_url.get_secret_value() if settings.redis_url else ""
        store = stack.enter_context(
            PostgresStore.connect(dsn, kek=build_key_ring(settings), encrypt=settings.content_encryption)
        )
        vectors = stack.enter_context(EdgeVectorIndex(shard, embedder.dimension))
        keywords = stack.enter_context(
            OpenSearchKeywordIndex.connect(settings.opensearch_url or "", index=settings.opensearch_index)
        )
        objects = stack.enter_context(S3ObjectStore.connect(settings.s3_endpoint, settings.s3_bucket))
        cache = stack.enter_context(RedisCache.connect(redis_url, namespace=settings.redis_namespace))
        yield _IndexerStores(store, vectors, keywords, objects, cache, embedder)


class _TimedHandler(ChunkIndexerHandler):
    """The chunk-indexer handler, unchanged, timing its two halves: stage (validate, chunk, embed) and
    finish (the projections' writes and the PostgreSQL commit)."""

    def __init__(self, indexer: DocumentIndexer) -> None:
        super().__init__(indexer, name=SERVICE, topics=(DOCUMENTS_CHANGED,))
        self.stage_s: list[float] = []
        self.finish_s: list[float] = []

    def stage(self, topic: str, batch: Sequence[tuple[str, Mapping[str, object]]]) -> StagedChunks:
        started = time.perf_counter()
        try:
            return super().stage(topic, batch)
        finally:
            self.stage_s.append(time.perf_counter() - started)

    def finish(self, staged: StagedChunks) -> HandlerResult:
        started = time.perf_counter()
        try:
            return super().finish(staged)
        finally:
            self.finish_s.append(time.perf_counter() - started)


class _MeasuredRunner(ConsumerRunner):
    """The runtime's ConsumerRunner, unchanged in how it consumes, plus what the benchmark reads: the
    partition assignment, messages per partition, first/last batch times, and a join-and-hold phase.
    It uses ConsumerRunner's `_consumer`, `_subscribed` and `_process`; mypy checks those names."""

    def __init__(
        self,
        handler: ChunkIndexerHandler,
        settings: KgragSettings,
        client_id: str,
        *,
        lag_refresh: bool = True,
        pipeline: bool = True,
    ) -> None:
        super().__init__(
            handler,
            bootstrap=settings.kafka_bootstrap or "",
            group_id=group_id(settings, SERVICE),
            producer=producer(settings, client_id),
            settings=RunnerSettings(pipeline=pipeline)
            if lag_refresh
            else RunnerSettings(lag_refresh_s=NO_LAG_REFRESH_S, pipeline=pipeline),
            # Only membership timing: a replica that dies releases its partitions within seconds.
            extra_config={"client.id": client_id, "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000},
        )
        self.partition_messages: dict[int, int] = {}
        self.batches = 0
        self.batch_log: list[tuple[float, float]] = []  # (committed at, seconds), wall clock
        self.first_batch_at: float | None = None
        self.last_commit_at: float | None = None
        self.assignment_history: list[tuple[float, list[int]]] = []
        self.failed_attempts = 0  # batches the runner had to retry: a server failed mid-measurement
        self._consumed_at: dict[int, float] = {}  # pipelined batches (by the list's identity): consumed at
        self._serial_started = time.time()

    def assignment(self) -> list[int]:
        return sorted(tp.partition for tp in self._consumer.assignment())

    def hold(self, timeout_s: float) -> list[int]:
        """Join the group (subscribing once) and serve its protocol for up to `timeout_s` without
        consuming: a message that arrives anyway is rewound, so the running phase starts from it."""
        self.subscribe()
        message = self._consumer.poll(timeout_s)
        if message is not None:
            err = message.error()
            if err is None:
                self._consumer.seek(
                    TopicPartition(message.topic() or "", message.partition() or 0, message.offset() or 0)
                )
            elif err.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(err)
        self._note_assignment()
        return self.assignment()

    def pause_all(self) -> list[int]:
        self._consumer.pause(self._consumer.assignment())
        return self.assignment()

    def resume_all(self) -> None:
        self._consumer.resume(self._consumer.assignment())

    def _process(self, messages: Sequence[Message]) -> None:
        try:
            super()._process(messages)  # handle, produce outputs, flush, commit offsets
        except BaseException:
            # Counted, never swallowed: the runner backs off and retries the same batch.
            self.failed_attempts += 1
            raise

    def _pipelined(self, messages: list[Message], stop: threading.Event | None, started: float) -> bool:
        self._consumed_at[id(messages)] = time.time()
        if super()._pipelined(messages, stop, started):
            return True
        del self._consumed_at[id(messages)]  # runs serially: timed by _process_with_backoff
        return False

    def _settle(self, *, stop: threading.Event | None = None, retry: bool = True) -> bool:
        ok = super()._settle(stop=stop, retry=retry)
        if not ok:
            self.failed_attempts += 1  # a staged batch's writes failed (then redone alone)
        return ok

    def _committed(self, messages: Sequence[Message]) -> None:
        """Per batch: consumed (wall clock) → committed; with the pipeline that spans its stage, its wait
        behind the batch before and its writes."""
        self.last_commit_at = time.time()
        started = self._consumed_at.pop(id(messages), None) or self._serial_started
        self.batch_log.append((self.last_commit_at, self.last_commit_at - started))
        if self.first_batch_at is None:
            self.first_batch_at = started
        self.batches += 1
        for message in messages:
            partition = message.partition() or 0
            self.partition_messages[partition] = self.partition_messages.get(partition, 0) + 1
        self._note_assignment()

    def _process_with_backoff(self, messages: list[Message], stop: threading.Event | None) -> None:
        self._serial_started = time.time()
        super()._process_with_backoff(messages, stop)

    def _note_assignment(self) -> None:
        current = self.assignment()
        if not self.assignment_history or self.assignment_history[-1][1] != current:
            self.assignment_history.append((time.time(), current))


# --- documents ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _BenchDoc:
    doc: SourceDocument
    token: str


def _bench_documents(count: int, label: str, *, seed: int) -> list[_BenchDoc]:
    """`synthetic.py`'s documents, small (3 chunks), each with a token no other document contains."""
    run = uuid.uuid4().hex[:6]
    out: list[_BenchDoc] = []
    for i, doc in enumerate(synthetic_documents(count, seed=seed, **DOC_SHAPE)):
        # Letters then digits: the english analyzer keeps it whole and the stemmer leaves it alone.
        token = f"kgb{run}{label}{i:06d}"
        body = doc.body + f"\nTracking reference {token}.\n".encode()
        out.append(_BenchDoc(dataclasses.replace(doc, doc_id=f"bench-{label}-{i:06d}", body=body), token))
    return out


def _stamped(doc: SourceDocument) -> tuple[SourceDocument, float]:
    now = time.time()
    return dataclasses.replace(doc, metadata={**doc.metadata, STAMP_KEY: f"{now:.6f}"}), now


# --- 1. freshness under steady load -----------------------------------------------------------------


@dataclass(slots=True)
class _Pending:
    bench: _BenchDoc
    produced_at: float


@dataclass(slots=True)
class _Probe:
    """Polls pending documents until each is searchable; bounded by `deadline` (monotonic)."""

    store: PostgresStore
    keywords: OpenSearchKeywordIndex
    vectors: EdgeVectorIndex
    deadline: float
    pending: dict[str, _Pending] = field(default_factory=dict)
    seen_at: dict[str, float] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    pass_seconds: list[float] = field(default_factory=list)
    max_pending: int = 0
    error: Exception | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def expect(self, bench: _BenchDoc, produced_at: float) -> None:
        with self.lock:
            self.pending[bench.doc.doc_id] = _Pending(bench, produced_at)
            self.max_pending = max(self.max_pending, len(self.pending))

    def outstanding(self) -> int:
        with self.lock:
            return len(self.pending)

    def run(self) -> None:
        try:
            while not self.stop.is_set() and time.monotonic() < self.deadline:
                started = time.perf_counter()
                with self.lock:
                    todo = list(self.pending.values())
                for item in todo:
                    if self._searchable(item.bench):
                        seen = time.time()
                        with self.lock:
                            self.pending.pop(item.bench.doc.doc_id, None)
                            self.seen_at[item.bench.doc.doc_id] = seen
                if todo:
                    self.pass_seconds.append(time.perf_counter() - started)
                self.stop.wait(PROBE_INTERVAL_S)
        except Exception as err:  # noqa: BLE001 - reported by the caller; a thread must not die silently
            self.error = err

    def _searchable(self, bench: _BenchDoc) -> bool:
        doc = bench.doc
        stored = self.store.get_document(doc.doc_id)  # committed last by the indexer: the cheap gate
        if stored is None or stored.status is not DocumentStatus.ACTIVE:
            return False
        hits = self.keywords.search(bench.token, [doc.acl.acl_class_id], 5)
        if not hits or not self.vectors.ids_for_doc(doc.doc_id):
            return False
        chunk_ids = {c.chunk_id for c in self.store.chunks_of(doc.doc_id)}
        if hits[0].chunk_id not in chunk_ids:
            return False
        self.chunks[doc.doc_id] = len(chunk_ids)
        return True


def bench_freshness(
    endpoints: Endpoints,
    console: Console,
    *,
    docs: int,
    rate_per_s: float,
    settle_s: float = 300.0,
    lag_refresh: bool = True,
    pipeline: bool = True,
) -> dict[str, Any]:
    """Produce `docs` documents at `rate_per_s`, one chunk-indexer on a thread; per-document time from
    produce to searchable. `settle_s` bounds the wait after the last produce; `pipeline` False runs the
    runner serially (each batch's writes before the next batch's embedding), the same-run baseline."""
    if docs < 1 or rate_per_s <= 0:
        raise ValueError("docs must be >= 1 and rate_per_s > 0")
    items = _bench_documents(docs, "f", seed=21)
    warmup = _bench_documents(WARMUP_DOCS, "w", seed=22)
    with (
        tempfile.TemporaryDirectory(prefix="kgrag-bench-") as tmp,
        _isolated_run(endpoints, "f", Path(tmp)) as settings,
    ):
        embedder = build_embedder(settings)
        dsn = settings.pg_dsn.get_secret_value() if settings.pg_dsn else ""
        with (
            _open_indexer_stores(settings, Path(tmp) / "shard", embedder) as stores,
            PostgresStore.connect(dsn, kek=build_key_ring(settings)) as probe_store,
            OpenSearchKeywordIndex.connect(
                settings.opensearch_url or "", index=settings.opensearch_index
            ) as probe_keywords,
        ):
            handler = _TimedHandler(stores.indexer(settings))
            runner = _MeasuredRunner(handler, settings, f"{SERVICE}-0", lag_refresh=lag_refresh, pipeline=pipeline)
            label = RUNNER_NO_PIPELINE if not pipeline else RUNNER_DEFAULT if lag_refresh else RUNNER_NO_LAG
            worker_stop = threading.Event()
            worker_error: list[Exception] = []

            def work() -> None:
                try:
                    runner.run(worker_stop)
                except Exception as err:  # noqa: BLE001 - reported below, from the main thread
                    worker_error.append(err)

            worker = threading.Thread(target=work, name="bench-chunk-indexer", daemon=True)
            produce_s = docs / rate_per_s
            probe = _Probe(
                probe_store, probe_keywords, stores.vectors, deadline=time.monotonic() + 180 + produce_s + settle_s
            )
            prober = threading.Thread(target=probe.run, name="bench-probe", daemon=True)
            ingest = KafkaIngest(producer(settings, "bench-producer"))
            load_start = os.getloadavg()[0]
            worker.start()
            prober.start()
            try:
                console.print(f"Freshness: warm-up ({WARMUP_DOCS} documents: model, group join)…")
                for bench in warmup:
                    doc, at = _stamped(bench.doc)
                    probe.expect(dataclasses.replace(bench, doc=doc), at)
                    ingest.ingest([doc])
                _wait_until(
                    lambda: probe.outstanding() == 0,
                    180,
                    "the warm-up documents to become searchable",
                    worker_error,
                    probe,
                )
                warm_seen = set(probe.seen_at)
                warm_done = time.time()
                probe.pass_seconds.clear()
                probe.max_pending = 0
                console.print(f"Freshness: {docs} documents at {rate_per_s:g}/s, runner {label}…")
                produced: dict[str, float] = {}
                started = time.monotonic()
                for i, bench in enumerate(items):
                    delay = started + i / rate_per_s - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    doc, at = _stamped(bench.doc)
                    probe.expect(dataclasses.replace(bench, doc=doc), at)
                    produced[doc.doc_id] = at
                    ingest.ingest([doc])  # returns once Kafka acknowledged it
                produce_elapsed = time.monotonic() - started
                _wait_until(
                    lambda: probe.outstanding() == 0,
                    settle_s,
                    "every document to become searchable",
                    worker_error,
                    probe,
                    fail=False,
                )
            finally:
                probe.stop.set()
                worker_stop.set()
                prober.join(timeout=30)
                worker.join(timeout=60)
            _raise_thread_errors(worker_error, probe)
            load_end = os.getloadavg()[0]
            measured = {d: t for d, t in probe.seen_at.items() if d not in warm_seen}
            verified = _hybrid_check(
                probe_store, stores.vectors, probe_keywords, embedder, [b for b in items if b.doc.doc_id in measured]
            )
            model_chunks_per_s = _model_alone(probe_store, embedder, [b.doc.doc_id for b in items[:16]])

    in_order = [measured[d] - produced[d] for d in produced if d in measured]  # produce order
    latencies = sorted(in_order)
    quarter = len(in_order) // 4
    chunks = sum(probe.chunks.get(d, 0) for d in measured)
    window = (max(measured.values()) - min(produced.values())) if measured else 0.0
    p50, p95 = _percentiles(latencies)
    batches = [seconds for at, seconds in runner.batch_log if at > warm_done]
    achieved = chunks / window if window > 0 else 0.0
    offered_chunks = rate_per_s * (chunks / len(measured)) if measured else 0.0
    return {
        "runner": label,
        "pipeline": pipeline,
        "documents": docs,
        "offered_docs_per_s": rate_per_s,
        "produced_docs_per_s": docs / produce_elapsed if produce_elapsed > 0 else float(docs),
        "searchable": len(measured),
        "not_searchable": docs - len(measured),
        "chunks": chunks,
        "achieved_docs_per_s": len(measured) / window if window > 0 else 0.0,
        "achieved_chunks_per_s": achieved,
        "freshness_p50_s": p50,
        "freshness_p95_s": p95,
        "freshness_max_s": latencies[-1] if latencies else float("nan"),
        "freshness_min_s": latencies[0] if latencies else float("nan"),
        "target_p95_s": 5.0,
        "target_met": bool(latencies) and len(measured) == docs and p95 <= 5.0,
        "offered_chunks_per_s": offered_chunks,
        "model_alone_chunks_per_s": model_chunks_per_s,
        # Saturated: the queue grew during the run (the last quarter waited far longer than the first),
        # or the model alone cannot embed the offered chunk rate; freshness then measures the queue.
        "first_quarter_p50_s": _percentiles(in_order[:quarter])[0] if quarter else float("nan"),
        "last_quarter_p50_s": _percentiles(in_order[-quarter:])[0] if quarter else float("nan"),
        "saturated": (
            quarter >= 2 and _percentiles(in_order[-quarter:])[0] > 2 * _percentiles(in_order[:quarter])[0] + 1.0
        )
        or offered_chunks > model_chunks_per_s,
        "freshness_s_in_produce_order": [round(v, 3) for v in in_order],
        "batches": len(batches),
        "batch_handle_p50_s": _percentiles(batches)[0] if batches else float("nan"),
        "batch_handle_p95_s": _percentiles(batches)[1] if batches else float("nan"),
        # The handler's two halves per batch (warm-up included): the model's part and the writes' part.
        "stage_p50_s": _percentiles(sorted(handler.stage_s))[0] if handler.stage_s else float("nan"),
        "write_p50_s": _percentiles(sorted(handler.finish_s))[0] if handler.finish_s else float("nan"),
        "docs_per_batch": (len(measured) / len(batches)) if batches else float("nan"),
        "probe_pass_p95_ms": _percentiles(sorted(probe.pass_seconds))[1] * 1000 if probe.pass_seconds else 0.0,
        "max_pending_docs": probe.max_pending,
        "hybrid_search_found": verified,
        "handler_retries": runner.failed_attempts,
        "embed_threads": settings.embed_threads,
        "load_avg_1m_start": load_start,
        "load_avg_1m_end": load_end,
    }


def _hybrid_check(
    store: PostgresStore,
    vectors: EdgeVectorIndex,
    keywords: OpenSearchKeywordIndex,
    embedder: Embedder,
    items: Sequence[_BenchDoc],
) -> int:
    """After the clock: how many documents the full hybrid search (as an admin) returns for their token."""
    searcher = HybridSearcher(store, store, vectors, keywords, embedder)
    caller = Caller(admin=True)
    found = 0
    for bench in items:
        hits = searcher.search(bench.token, caller, top_k=5).hits
        found += any(h.doc_id == bench.doc.doc_id for h in hits)
    return found


def _model_alone(store: PostgresStore, embedder: Embedder, doc_ids: Sequence[str]) -> float:
    """Same-run capacity check: the embedding model alone on these documents' chunk texts (embedded as
    the indexer embeds them), in batches of 32. Says how many chunks/s this box can embed right now."""
    texts = [f"{' > '.join(c.breadcrumb) or doc_id}\n{c.text}" for doc_id in doc_ids for c in store.chunks_of(doc_id)]
    if not texts:
        return float("nan")
    started = time.perf_counter()
    for start in range(0, len(texts), 32):
        embedder.embed_documents(texts[start : start + 32])
    return len(texts) / (time.perf_counter() - started)


def _raise_thread_errors(worker_error: Sequence[Exception], probe: _Probe) -> None:
    hint = (
        " — did a server restart mid-run? Check `scripts/dev-services/services.sh status` and rerun; "
        "numbers across a restart would not mean anything"
    )
    if worker_error:
        raise BenchmarkError(f"the chunk-indexer failed: {worker_error[0]!r}{hint}") from worker_error[0]
    if probe.error is not None:
        raise BenchmarkError(f"the searchability probe failed: {probe.error!r}{hint}") from probe.error


def _wait_until(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    worker_error: list[Exception],
    probe: _Probe,
    *,
    fail: bool = True,
) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        _raise_thread_errors(worker_error, probe)
        if condition():
            return True
        time.sleep(0.1)
    if fail:
        raise BenchmarkError(f"timed out after {timeout_s:.0f}s waiting for {what}")
    return False


# --- 2. scale-out: replicas as processes ----------------------------------------------------------------


class _Replica:
    """A worker process and the protocol lines it prints (read on a thread into a queue)."""

    def __init__(
        self,
        index: int,
        settings: KgragSettings,
        threads: int,
        shard: Path,
        log_path: Path,
        max_seconds: float,
        *,
        lag_refresh: bool,
        pipeline: bool = True,
    ) -> None:
        self.index = index
        self.log_path = log_path
        env = {k: v for k, v in os.environ.items() if not k.startswith("KGRAG_")}
        env.update(_settings_env(settings.model_copy(update={"embed_threads": threads})))
        env["PYTHONUNBUFFERED"] = "1"
        self._log: IO[bytes] = log_path.open("wb")
        self.proc = subprocess.Popen(  # our own interpreter and module, no shell
            [
                sys.executable,
                "-m",
                "kgrag_runtime.benchmarks.distributed",
                "--worker-replica",
                str(index),
                "--worker-shard",
                str(shard),
                "--worker-max-seconds",
                f"{max_seconds:.0f}",
                *([] if lag_refresh else ["--worker-no-lag-refresh"]),
                *([] if pipeline else ["--worker-no-pipeline"]),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            text=True,
            bufsize=1,
        )
        self.lines: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"bench-replica-{index}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(PROTOCOL + " "):
                kind, _, payload = line[len(PROTOCOL) + 1 :].strip().partition(" ")
                self.lines.put((kind, json.loads(payload or "{}")))
        self.lines.put(("EXIT", {}))

    def send(self, command: str) -> None:
        if self.proc.stdin is not None and self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.write(command + "\n")
                self.proc.stdin.flush()

    def expect(self, kind: str, timeout_s: float) -> dict[str, Any]:
        """The next line of `kind`, skipping others; raises if the process exits or the time passes."""
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BenchmarkError(f"replica {self.index}: no {kind} within {timeout_s:.0f}s{self.log_tail()}")
            try:
                got, payload = self.lines.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if got == kind:
                return payload
            if got in ("EXIT", "ERROR"):
                raise BenchmarkError(f"replica {self.index} stopped before {kind}: {payload}{self.log_tail()}")

    def drain(self) -> list[tuple[str, dict[str, Any]]]:
        out: list[tuple[str, dict[str, Any]]] = []
        for _ in range(10_000):
            try:
                out.append(self.lines.get_nowait())
            except queue.Empty:
                break
        return out

    def log_tail(self) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace")[-2000:]
        return f"\n--- replica {self.index} log (tail) ---\n{text}" if text else ""

    def close(self) -> None:
        """Ask it to stop, then terminate and kill it if it does not (only this Popen's own process)."""
        self.send("STOP")
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._reader.join(timeout=5)
        self._log.close()


def _settings_env(settings: KgragSettings) -> dict[str, str]:
    """KGRAG_* variables from which a worker process's `KgragSettings()` reads exactly these settings."""
    env: dict[str, str] = {}
    for name in KgragSettings.model_fields:
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, SecretStr):
            env[f"KGRAG_{name.upper()}"] = value.get_secret_value()
        elif isinstance(value, list | tuple | set | frozenset | dict):
            # pydantic-settings reads complex fields from the environment as JSON.
            env[f"KGRAG_{name.upper()}"] = json.dumps(sorted(value) if isinstance(value, set | frozenset) else value)
        else:
            env[f"KGRAG_{name.upper()}"] = str(value)
    return env


def bench_scale_out(
    endpoints: Endpoints,
    console: Console,
    *,
    docs: int,
    replicas: int,
    threads: int,
    drain_limit_s: float = 900.0,
    lag_refresh: bool = True,
    pipeline: bool = True,
) -> dict[str, Any]:
    """Drain a backlog of `docs` documents with `replicas` worker processes in one consumer group; then the
    model alone (with the replicas' ONNX threads) on a sample of the same chunks, in this process."""
    if not 1 <= replicas <= TOPIC_PARTITIONS:
        raise ValueError(f"replicas must be between 1 and {TOPIC_PARTITIONS} (the topic's partitions)")
    items = _bench_documents(docs, "s", seed=31)
    runner = RUNNER_NO_PIPELINE if not pipeline else RUNNER_DEFAULT if lag_refresh else RUNNER_NO_LAG
    console.print(
        f"Scale-out: {replicas} replica(s) × {threads} ONNX thread(s), backlog of {docs} documents, runner {runner}…"
    )
    with (
        tempfile.TemporaryDirectory(prefix="kgrag-bench-") as tmp,
        _isolated_run(endpoints, "s", Path(tmp)) as settings,
    ):
        dsn = settings.pg_dsn.get_secret_value() if settings.pg_dsn else ""
        workers: list[_Replica] = []
        try:
            for i in range(replicas):
                workers.append(
                    _Replica(
                        i,
                        settings,
                        threads,
                        Path(tmp) / f"shard-{i}",
                        Path(tmp) / f"replica-{i}.log",
                        max_seconds=drain_limit_s + 600,
                        lag_refresh=lag_refresh,
                        pipeline=pipeline,
                    )
                )
            for w in workers:
                w.expect("READY", 300)
            for w in workers:
                w.send("JOIN")
            split = _await_split(workers, timeout_s=120)
            for w in workers:
                w.send("PAUSE")
            paused = {w.index: w.expect("PAUSED", 60)["partitions"] for w in workers}
            if _split_problem(paused, replicas):
                raise BenchmarkError(f"the group's assignment changed while pausing: {paused}")
            produce_started = time.time()
            outcomes = KafkaIngest(producer(settings, "bench-producer")).ingest([_stamped(b.doc)[0] for b in items])
            produce_s = time.time() - produce_started
            if len(outcomes) != docs:
                raise BenchmarkError(f"produced {len(outcomes)} of {docs} documents")
            load_start = os.getloadavg()[0]
            go_at = time.time()
            for w in workers:
                w.send("GO")
            with PostgresStore.connect(dsn) as store:
                deadline = time.monotonic() + drain_limit_s
                while store.stats().documents < docs:
                    if time.monotonic() > deadline:
                        raise BenchmarkError(
                            f"the backlog did not drain within {drain_limit_s:.0f}s "
                            f"({store.stats().documents} of {docs} documents indexed)"
                        )
                    for w in workers:
                        if w.proc.poll() is not None:
                            raise BenchmarkError(f"replica {w.index} exited during the drain{w.log_tail()}")
                    time.sleep(0.25)
                load_end = os.getloadavg()[0]
                for w in workers:
                    w.send("STOP")
                results = [w.expect("RESULT", 120) for w in workers]
                stats = store.stats()
            keyword_count = _opensearch_count(settings)
        finally:
            for w in workers:
                w.close()
        with PostgresStore.connect(dsn, kek=build_key_ring(settings)) as store:
            model_alone = _model_alone(
                store,
                build_embedder(settings.model_copy(update={"embed_threads": threads})),
                [b.doc.doc_id for b in items[:: max(1, docs // 16)][:16]],
            )
    last = max(r["last_commit_at"] or go_at for r in results)
    first = min((r["first_batch_at"] for r in results if r["first_batch_at"] is not None), default=go_at)
    drain_s = last - go_at
    vector_points = sum(int(r["vector_points"]) for r in results)
    messages = sum(int(r["messages"]) for r in results)
    return {
        "runner": runner,
        "replicas": replicas,
        "embed_threads_per_replica": threads,
        "documents": docs,
        "chunks": stats.chunks,
        "produce_s": produce_s,
        "drain_s": drain_s,
        "first_batch_delay_s": first - go_at,
        "docs_per_s": docs / drain_s,
        "chunks_per_s": stats.chunks / drain_s,
        "model_alone_chunks_per_s": model_alone,
        "pipeline": pipeline,
        "split_before_backlog": split,
        "per_replica": [
            {
                "replica": r["replica"],
                "pid": r["pid"],
                "final_assignment": r["assignment"],
                "assignment_changes_after_go": r["assignment_changes_after_go"],
                "messages": r["messages"],
                "messages_per_partition": r["partition_messages"],
                "batches": r["batches"],
                "batch_p50_s": r["batch_p50_s"],
                "handler_retries": r["handler_retries"],
                "lag_refreshes": r["lag_refreshes"],
                "vector_points": r["vector_points"],
                "busy_s": (r["last_commit_at"] - r["first_batch_at"]) if r["first_batch_at"] else 0.0,
            }
            for r in results
        ],
        "verified": {
            "postgres_documents": stats.documents,
            "postgres_chunks": stats.chunks,
            "opensearch_chunks": keyword_count,
            "vector_points_all_shards": vector_points,
            "messages_consumed": messages,
            "ok": stats.documents == docs and keyword_count == vector_points == stats.chunks and messages >= docs,
        },
        "load_avg_1m_start": load_start,
        "load_avg_1m_end": load_end,
    }


def _await_split(workers: Sequence[_Replica], *, timeout_s: float, stable_s: float = 2.0) -> dict[int, list[int]]:
    """Wait until the group gave every partition to exactly one replica, each has some, and it held still."""
    latest: dict[int, list[int]] = {w.index: [] for w in workers}
    changed = time.monotonic()
    deadline = changed + timeout_s
    while time.monotonic() < deadline:
        for w in workers:
            for kind, payload in w.drain():
                if kind == "ASSIGN":
                    latest[w.index] = payload["partitions"]
                    changed = time.monotonic()
                elif kind in ("EXIT", "ERROR"):
                    raise BenchmarkError(f"replica {w.index} stopped while joining: {payload}{w.log_tail()}")
        if not _split_problem(latest, len(workers)) and time.monotonic() - changed >= stable_s:
            return latest
        time.sleep(0.1)
    raise BenchmarkError(
        f"the consumer group did not split the {TOPIC_PARTITIONS} partitions within {timeout_s:.0f}s: {latest}"
    )


def _split_problem(assignment: Mapping[int, Sequence[int]], replicas: int) -> str | None:
    owned = [p for parts in assignment.values() for p in parts]
    if len(assignment) != replicas or any(not parts for parts in assignment.values()):
        return "a replica has no partitions"
    if sorted(owned) != list(range(TOPIC_PARTITIONS)):
        return "partitions missing or assigned twice"
    return None


def _opensearch_count(settings: KgragSettings) -> int:
    with OpenSearchKeywordIndex.connect(settings.opensearch_url or "", index=settings.opensearch_index) as index:
        return index.count()


# --- the worker process ------------------------------------------------------------------------------


def _emit(kind: str, payload: Mapping[str, Any]) -> None:
    print(f"{PROTOCOL} {kind} {json.dumps(payload)}", flush=True)


def worker_main(
    replica: int, shard: Path, max_seconds: float, *, lag_refresh: bool = True, pipeline: bool = True
) -> int:
    """One chunk-indexer replica: READY → JOIN (report ASSIGN) → PAUSE → GO → STOP (report RESULT).

    Commands arrive on stdin; end of input counts as STOP, so the process never outlives the benchmark.
    `max_seconds` bounds the whole life of the process."""
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    deadline = time.monotonic() + max_seconds
    commands: queue.Queue[str] = queue.Queue()
    stop = threading.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            command = line.strip()
            commands.put(command)
            if command == "STOP":
                stop.set()
        commands.put("STOP")
        stop.set()

    threading.Thread(target=read_commands, name="commands", daemon=True).start()

    def next_command(timeout_s: float) -> str | None:
        try:
            return commands.get(timeout=timeout_s)
        except queue.Empty:
            return None

    try:
        settings = KgragSettings()
        embedder = build_embedder(settings)
        embedder.embed_documents(["warm up the model before the clock starts"] * 4)
        with _open_indexer_stores(settings, shard, embedder) as stores:
            stores.store.stats()
            runner = _MeasuredRunner(
                ChunkIndexerHandler(stores.indexer(settings), name=SERVICE, topics=(DOCUMENTS_CHANGED,)),
                settings,
                f"bench-replica-{replica}",
                lag_refresh=lag_refresh,
                pipeline=pipeline,
            )
            try:
                _emit("READY", {"replica": replica, "pid": os.getpid(), "embed_threads": settings.embed_threads})
                while (command := next_command(1.0)) != "JOIN":
                    if command == "STOP" or time.monotonic() > deadline:
                        return 0
                reported: list[int] | None = None
                go_at = 0.0
                while time.monotonic() < deadline:  # joining, then holding paused until GO
                    partitions = runner.hold(0.2)
                    if partitions != reported:
                        reported = partitions
                        _emit("ASSIGN", {"replica": replica, "partitions": partitions})
                    command = next_command(0.0)
                    if command == "PAUSE":
                        _emit("PAUSED", {"replica": replica, "partitions": runner.pause_all()})
                    elif command == "GO":
                        go_at = time.time()
                        runner.resume_all()
                        break
                    elif command == "STOP":
                        return 0
                changes_before = len(runner.assignment_history)
                while not stop.is_set() and time.monotonic() < deadline:
                    runner.step(stop)
                _emit(
                    "RESULT",
                    {
                        "replica": replica,
                        "pid": os.getpid(),
                        "go_at": go_at,
                        "assignment": runner.assignment(),
                        "assignment_changes_after_go": len(runner.assignment_history) - changes_before,
                        "messages": sum(runner.partition_messages.values()),
                        "partition_messages": {str(p): n for p, n in sorted(runner.partition_messages.items())},
                        "batches": runner.batches,
                        "batch_p50_s": _percentiles([b for _, b in runner.batch_log])[0] if runner.batch_log else 0.0,
                        "first_batch_at": runner.first_batch_at,
                        "last_commit_at": runner.last_commit_at,
                        "vector_points": stores.vectors.count(),
                        "handler_retries": runner.failed_attempts,
                        "lag_refreshes": runner.lag_monitor.refreshes,
                    },
                )
            finally:
                runner.close()
    except Exception as err:
        log.exception("replica %d failed", replica)
        _emit("ERROR", {"replica": replica, "error": repr(err)})
        return 1
    return 0


# --- the whole run, and its report -------------------------------------------------------------------


def run_distributed_benchmarks(
    out: Path,
    console: Console,
    *,
    docs: int,
    rate_per_s: float,
    replicas: Sequence[int],
    backlog: int | None = None,
    endpoints: Endpoints | None = None,
    settle_s: float = 300.0,
    drain_limit_s: float = 900.0,
    lag_diagnostic: bool = True,
    pipeline_baseline: bool = False,
) -> dict[str, Any]:
    """Freshness at `rate_per_s` over `docs` documents, then scale-out for each replica count in
    `replicas` (a 1 runs with 1 and with all cores' ONNX threads; n > 1 runs with cores // n threads
    each) on a backlog of `backlog` (default `docs`) documents. Everything runs with the runner's
    defaults and, if `lag_diagnostic`, again with its lag refresh off (see NO_LAG_REFRESH_S); if
    `pipeline_baseline`, freshness once more with the runner serial (RunnerSettings.pipeline off).
    Writes results.md and results.json."""
    endpoints = endpoints or Endpoints.from_env()
    endpoints.check_loopback()
    out.mkdir(parents=True, exist_ok=True)
    cores = os.cpu_count() or 1
    settings = KgragSettings()
    machine = _machine()
    console.print(f"Machine: {machine}")
    results: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine,
        "servers": endpoints.hosts(),
        "settings": {
            "topic_partitions": TOPIC_PARTITIONS,
            "runner": "ConsumerRunner defaults (batch 64 messages, poll timeout 0.5 s, lag refresh every 5 s)"
            + ("; diagnostic rows: lag refresh off" if lag_diagnostic else ""),
            "documents": f"synthetic.py {DOC_SHAPE} + one unique token line (3 chunks each)",
            "chunk_max_tokens": settings.chunk_max_tokens,
            "chunk_overlap_tokens": settings.chunk_overlap_tokens,
            "embedder": settings.embedder,
            "embed_batch_size": settings.embed_batch_size,
            "freshness_embed_threads": settings.embed_threads or "onnxruntime default (all cores)",
            "probe_interval_s": PROBE_INTERVAL_S,
        },
        "vector_projection": VECTOR_NOTE,
    }
    variants = [True, False] if lag_diagnostic else [True]
    with _aws_credentials(endpoints):
        results["freshness"] = bench_freshness(endpoints, console, docs=docs, rate_per_s=rate_per_s, settle_s=settle_s)
        results["freshness_diagnostic"] = (
            bench_freshness(endpoints, console, docs=docs, rate_per_s=rate_per_s, settle_s=settle_s, lag_refresh=False)
            if lag_diagnostic
            else None
        )
        results["freshness_pipeline_off"] = (
            bench_freshness(endpoints, console, docs=docs, rate_per_s=rate_per_s, settle_s=settle_s, pipeline=False)
            if pipeline_baseline
            else None
        )
        rows: list[dict[str, Any]] = []
        runs = [(lag_refresh, True) for lag_refresh in variants] + ([(True, False)] if pipeline_baseline else [])
        for lag_refresh, pipeline in runs:
            for n in replicas:
                for threads in sorted({1, max(1, cores // n)}) if n == 1 else [max(1, cores // n)]:
                    rows.append(
                        bench_scale_out(
                            endpoints,
                            console,
                            docs=backlog or docs,
                            replicas=n,
                            threads=threads,
                            drain_limit_s=drain_limit_s,
                            lag_refresh=lag_refresh,
                            pipeline=pipeline,
                        )
                    )
        for row in rows:
            base = next(
                (
                    r
                    for r in rows
                    if r["runner"] == row["runner"] and r["replicas"] == 1 and r["embed_threads_per_replica"] == 1
                ),
                None,
            )
            row["speedup_vs_1x1"] = row["chunks_per_s"] / base["chunks_per_s"] if base else None
        results["scale_out"] = rows
    (out / "results.json").write_text(json.dumps(results, indent=2))
    markdown = markdown_report(results)
    (out / "results.md").write_text(markdown)
    console.print(markdown, markup=False, highlight=False, soft_wrap=True)
    return results


def markdown_report(results: Mapping[str, Any]) -> str:
    f = results["freshness"]
    lines = [
        f"Machine: {results['machine']} · {results['date']}",
        "",
        "Settings: " + "; ".join(f"{k} = {v}" for k, v in results["settings"].items()),
        "",
        f"Table 1 — freshness under steady load: one chunk-indexer (a thread of the benchmark process), "
        f"documents produced one at a time through KafkaIngest; freshness = produce → searchable "
        f"(ACTIVE in PostgreSQL, found by an OpenSearch BM25 search for its token, vectors in the Qdrant Edge "
        f"shard), polled every {PROBE_INTERVAL_S * 1000:.0f} ms; achieved = searchable documents ÷ (last "
        f"searchable − first produce); model alone = the embedding model by itself on a sample of the same chunk "
        f"texts right after the run (a same-run capacity check). Target: p95 ≤ {f['target_p95_s']:g} s.",
        "",
        "| runner | docs | offered docs/s (chunks/s) | achieved docs/s | achieved chunks/s | model alone chunks/s | "
        "p50 s | p95 s | max s | searchable | hybrid search finds | p95 ≤ 5 s | docs/batch | batch p50 s | "
        "retried batches | load 1m start→end |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    fresh_rows = [row for row in (f, results.get("freshness_diagnostic"), results.get("freshness_pipeline_off")) if row]
    lines += [_freshness_row(row) for row in fresh_rows]
    lines.append("")
    lines += [
        f"Batch halves ({row['runner']}): stage (validate, chunk, embed) p50 "
        f"{row.get('stage_p50_s', float('nan')):.2f} s, writes (OpenSearch, S3, vectors, PostgreSQL commit) p50 "
        f"{row.get('write_p50_s', float('nan')):.2f} s."
        for row in fresh_rows
    ]
    lines.append("")
    for row in fresh_rows:
        if row["saturated"]:
            lines += [
                f"Saturated ({row['runner']}): {row['offered_chunks_per_s']:.1f} chunks/s were offered; the pipeline "
                f"delivered {row['achieved_chunks_per_s']:.1f}, and the embedding model alone, measured right after "
                f"on the same chunk texts, managed {row['model_alone_chunks_per_s']:.1f} chunks/s on this machine. "
                f"Documents queued (median freshness {row['first_quarter_p50_s']:.1f} s in the first quarter of the "
                f"run, {row['last_quarter_p50_s']:.1f} s in the last), so these numbers measure that queue more than "
                "the indexing path.",
                "",
            ]
    rows = results.get("scale_out") or []
    if rows:
        lines += [
            f"Table 2 — scale-out: chunk-indexer replicas as separate processes in one consumer group, "
            f"draining a backlog on a {TOPIC_PARTITIONS}-partition topic (drain = resume → last offset commit; "
            "model load and group join excluded). " + results["vector_projection"],
            "",
            "| runner | replicas × ONNX threads | docs | chunks | drain s | docs/s | chunks/s | model alone chunks/s | "
            "pipeline / model | vs 1×1 (same runner) | "
            "partitions (messages) per replica | GO → first batch s | lag readings (off the loop, sum) | "
            "retried batches | verified | load 1m start→end |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            split = " · ".join(
                f"r{p['replica']}: {_ranges(p['final_assignment'])} ({p['messages']})" for p in r["per_replica"]
            )
            v = r["verified"]
            check = (
                f"yes ({v['postgres_chunks']} chunks in PG = OpenSearch = vector shards)"
                if v["ok"]
                else f"NO: PG {v['postgres_documents']} docs/{v['postgres_chunks']} chunks, OpenSearch "
                f"{v['opensearch_chunks']}, vectors {v['vector_points_all_shards']}"
            )
            lines.append(
                f"| {r['runner']} | {r['replicas']} × {r['embed_threads_per_replica']} | {r['documents']} | "
                f"{r['chunks']} | "
                f"{r['drain_s']:.1f} | {r['docs_per_s']:.2f} | {r['chunks_per_s']:.1f} | "
                f"{r.get('model_alone_chunks_per_s', float('nan')):.1f} | "
                f"{_ratio(_of_model(r))} | "
                f"{_ratio(r['speedup_vs_1x1'])} | {split} | {r['first_batch_delay_s']:.1f} | "
                f"{sum(p['lag_refreshes'] for p in r['per_replica'])} | "
                f"{sum(p['handler_retries'] for p in r['per_replica'])} | {check} | "
                f"{r['load_avg_1m_start']:.1f}→{r['load_avg_1m_end']:.1f} |"
            )
        lines.append("")
    return "\n".join(lines)


def _freshness_row(f: Mapping[str, Any]) -> str:
    return (
        f"| {f['runner']} | {f['documents']} | {f['offered_docs_per_s']:g} ({f['offered_chunks_per_s']:.1f}) | "
        f"{f['achieved_docs_per_s']:.2f} | {f['achieved_chunks_per_s']:.1f} | {f['model_alone_chunks_per_s']:.1f} | "
        f"{f['freshness_p50_s']:.2f} | {f['freshness_p95_s']:.2f} | {f['freshness_max_s']:.2f} | "
        f"{f['searchable']}/{f['documents']} | {f['hybrid_search_found']}/{f['searchable']} | "
        f"{'yes' if f['target_met'] else 'no'} | {f['docs_per_batch']:.1f} | {f['batch_handle_p50_s']:.2f} | "
        f"{f['handler_retries']} | {f['load_avg_1m_start']:.1f}→{f['load_avg_1m_end']:.1f} |"
    )


def _of_model(row: Mapping[str, Any]) -> float | None:
    model = row.get("model_alone_chunks_per_s")
    return float(row["chunks_per_s"]) / float(model) if model else None


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _ranges(partitions: Sequence[int]) -> str:
    return ",".join(str(p) for p in partitions) or "none"


def _percentiles(values: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 as the other benchmarks take them: the sorted values at n // 2 and int(0.95 n)."""
    if not values:
        return float("nan"), float("nan")
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def _machine() -> str:
    return (
        f"{platform.machine()} · {os.cpu_count()} cores · Python {platform.python_version()} · "
        f"{platform.system()} · load average {os.getloadavg()[0]:.1f} at start"
    )


# --- command line ----------------------------------------------------------------------------------


def _replica_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if any(not 1 <= v <= TOPIC_PARTITIONS for v in values):
        raise argparse.ArgumentTypeError(f"replica counts must be between 1 and {TOPIC_PARTITIONS}")
    return values


def _positive(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    return parse


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kgrag_runtime.benchmarks.distributed",
        description="Distributed benchmarks on the dev servers (Kafka, PostgreSQL, OpenSearch, Redis, S3): "
        "freshness (produce → searchable) under a steady document rate, and chunk-indexer "
        "throughput with 1 vs n replica processes in one consumer group.",
        epilog="Servers come from the KGRAG_TEST_* variables (`source .cache/dev-services/env.sh`) or the flags "
        "above, and must be on 127.0.0.1: each run creates and afterwards drops its own database, topics, "
        "index, bucket and Redis keys. Start the servers with `scripts/dev-services/services.sh start`. "
        "Results: OUT/results.md and OUT/results.json. See docs/benchmarks.md.",
    )
    parser.add_argument(
        "--docs", type=_positive(int), default=200, help="documents produced for the freshness benchmark (default 200)"
    )
    parser.add_argument(
        "--rate", type=_positive(float), default=5.0, help="steady produce rate in documents per second (default 5)"
    )
    parser.add_argument(
        "--replicas",
        type=_replica_list,
        default=[1, 2],
        help="replica counts for the scale-out benchmark, comma-separated; '' skips it "
        "(default 1,2; 1 runs with 1 and with all-cores ONNX threads)",
    )
    parser.add_argument(
        "--backlog", type=_positive(int), default=None, help="documents in the scale-out backlog (default: --docs)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("bench-results/distributed"),
        help="folder for results.md and results.json (default bench-results/distributed)",
    )
    parser.add_argument(
        "--settle",
        type=_positive(float),
        default=300.0,
        help="seconds to wait after the last produce for stragglers (default 300)",
    )
    parser.add_argument(
        "--no-lag-diagnostic",
        action="store_true",
        help="skip the diagnostic rows that rerun everything with the consumer runner's lag refresh "
        "off (it costs about 0.5 s per assigned partition on the consume loop; see the docs)",
    )
    parser.add_argument(
        "--pipeline-baseline",
        action="store_true",
        help="add a freshness row with the runner serial (RunnerSettings(pipeline=False)): each batch's "
        "writes before the next batch's embedding, the same-run baseline for the one-deep pipeline",
    )
    parser.add_argument(
        "--drain-limit",
        type=_positive(float),
        default=900.0,
        help="seconds one scale-out drain may take before the run fails (default 900)",
    )
    for name in ("kafka", "pg", "opensearch", "redis", "s3"):
        var, default = _DEFAULTS[name]
        parser.add_argument(
            f"--{name}",
            default=None,
            metavar="ADDR",
            help=f"default ${var}, else {default if name != 'pg' else 'the dev-services DSN'}",
        )
    parser.add_argument("--worker-replica", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-shard", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-max-seconds", type=float, default=1800.0, help=argparse.SUPPRESS)
    parser.add_argument("--worker-no-lag-refresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-no-pipeline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker_replica is not None:
        if args.worker_shard is None:
            parser.error("--worker-replica needs --worker-shard")
        return worker_main(
            args.worker_replica,
            args.worker_shard,
            args.worker_max_seconds,
            lag_refresh=not args.worker_no_lag_refresh,
            pipeline=not args.worker_no_pipeline,
        )

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s %(message)s")
    endpoints = Endpoints.from_env(
        kafka=args.kafka, pg=args.pg, opensearch=args.opensearch, redis=args.redis, s3=args.s3
    )
    console = Console(stderr=True)
    try:
        run_distributed_benchmarks(
            args.out,
            console,
            docs=args.docs,
            rate_per_s=args.rate,
            replicas=args.replicas,
            backlog=args.backlog,
            endpoints=endpoints,
            settle_s=args.settle,
            drain_limit_s=args.drain_limit,
            lag_diagnostic=not args.no_lag_diagnostic,
            pipeline_baseline=args.pipeline_baseline,
        )
    except BenchmarkError as err:
        console.print(f"[red]benchmark failed:[/red] {err}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
