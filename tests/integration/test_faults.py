"""Fault tests on the real servers: a store outage, a killed worker, a broker restart, and parity with
the embedded runtime. Nothing may be lost and nothing duplicated in any store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import pytest

from kgrag_core.events import DOCUMENTS_CHANGED, document_changed_from_source
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ports import Embedder
from kgrag_runtime.benchmarks.synthetic import synthetic_documents
from kgrag_runtime.distributed import DistributedStores, open_stores, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.integration.faults import ToggleProxy

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def assert_consistent(stores: DistributedStores, expected_docs: int) -> None:
    """Every store agrees with PostgreSQL: same chunk IDs, no extras, no duplicates."""
    docs = stores.store.list_documents()
    assert len(docs) == expected_docs
    chunk_ids = sorted(c.chunk_id for d in docs for c in stores.store.chunks_of(d.doc_id))
    assert len(chunk_ids) == len(set(chunk_ids))
    assert stores.vectors.count() == len(chunk_ids)
    assert stores.keywords.count() == len(chunk_ids)
    for d in docs:
        expected = sorted(c.chunk_id for c in stores.store.chunks_of(d.doc_id))
        assert stores.vectors.ids_for_doc(d.doc_id) == expected
        assert stores.keywords.ids_for_doc(d.doc_id) == expected
    assert len(stores.objects.list_keys("docs/")) == expected_docs


def test_opensearch_outage_backs_off_and_catches_up(
    distributed_settings: KgragSettings, embedder: Embedder, workers: Workers
) -> None:
    url = urlparse(distributed_settings.opensearch_url or "")
    proxy = ToggleProxy(url.hostname or "127.0.0.1", url.port or 9200)
    settings = distributed_settings.model_copy(update={"opensearch_url": f"http://127.0.0.1:{proxy.port}"})
    with open_stores(settings, embedder=embedder) as stores:
        runner = workers.start(
            "chunk-indexer",
            ChunkIndexerHandler(stores.indexer(settings), name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)),
        )
        proxy.block()
        KafkaIngest(producer(settings, "test")).ingest(synthetic_documents(6, seed=21))
        wait_for(lambda: runner.metrics.retries._value.get() >= 5, what="the indexer retrying")  # type: ignore[attr-defined]
        assert not runner.healthy  # readiness reports the stuck store while it backs off
        assert stores.store.stats().documents == 0  # PostgreSQL is written last: nothing half-indexed
        proxy.unblock()
        wait_for(lambda: stores.store.stats().documents == 6, timeout_s=90, what="catching up after the outage")
        # PostgreSQL commits inside the handler; the runner marks itself healthy after the offsets commit.
        wait_for(lambda: runner.healthy, timeout_s=30, what="readiness recovering after the outage")
        assert_consistent(stores, 6)
    proxy.close()


def _env(settings: KgragSettings) -> dict[str, str]:
    env = dict(os.environ)
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        secret = getattr(value, "get_secret_value", None)
        if isinstance(value, (list, dict)):  # pydantic-settings reads complex values as JSON
            env[f"KGRAG_{name.upper()}"] = json.dumps(value)
        else:
            env[f"KGRAG_{name.upper()}"] = str(secret() if secret else value)
    env["KGRAG_OPS_PORT"] = "0"
    env["KGRAG_INGEST_BATCH_DOCUMENTS"] = "4"  # several batches, so a kill lands between commits
    return env


def _pg_count(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM documents WHERE status = 'ACTIVE'").fetchone()
    return int(row[0]) if row else 0


def test_a_killed_worker_loses_nothing_and_duplicates_nothing(
    distributed_settings: KgragSettings, embedder: Embedder
) -> None:
    total = 40
    dsn = distributed_settings.pg_dsn.get_secret_value() if distributed_settings.pg_dsn else ""
    # Create the schema and stores first, then hand the Qdrant path over to the worker processes.
    with open_stores(distributed_settings, embedder=embedder):
        pass
    KafkaIngest(producer(distributed_settings, "test")).ingest(synthetic_documents(total, seed=33))
    env = _env(distributed_settings)
    command = [sys.executable, "-m", "kgrag_chunk_indexer"]

    first = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: _pg_count(dsn) >= 1, timeout_s=120, what="the first worker to index a document")
    first.send_signal(signal.SIGKILL)  # mid-batch: no clean shutdown, no commit of the batch in hand
    first.communicate(timeout=30)
    killed_at = _pg_count(dsn)
    assert killed_at < total, "the worker finished before it could be killed; make the backlog larger"

    second = subprocess.Popen(command, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: _pg_count(dsn) == total, timeout_s=180, what="the restarted worker to finish the backlog")
    finally:
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=60)
    assert second.returncode == 0, err.decode()[-2000:]
    with open_stores(distributed_settings, embedder=embedder) as stores:
        assert_consistent(stores, total)


def test_pipeline_resumes_after_a_broker_restart(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    runner = workers.start(
        "chunk-indexer",
        ChunkIndexerHandler(stores.indexer(distributed_settings), name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)),
    )
    send = producer(distributed_settings, "test")
    docs = list(synthetic_documents(24, seed=45))

    def produce(batch: list) -> None:  # type: ignore[type-arg]
        for doc in batch:
            send.produce(DOCUMENTS_CHANGED, doc.doc_id, document_changed_from_source(doc).model_dump(mode="json"))

    produce(docs[:8])
    send.flush()
    wait_for(lambda: stores.store.stats().documents >= 4, what="indexing under way")

    script = REPO / "scripts" / "dev-services" / "services.sh"
    restart = threading.Thread(
        target=lambda: subprocess.run(
            ["bash", str(script), "restart", "kafka"], check=True, capture_output=True, timeout=240
        )
    )
    wait_for(lambda: bool(runner.lag_report()["lag_fresh"]), timeout_s=30, what="a fresh lag reading")
    restart.start()
    time.sleep(1.0)
    # Produced while the broker is going down and coming back: the producer buffers and retries.
    produce(docs[8:])
    # While the broker is away the lag cannot be measured: readiness must say so, not "lag 0".
    wait_for(lambda: not runner.lag_report()["lag_fresh"], timeout_s=120, what="lag reading going stale")
    restart.join(timeout=250)
    send.flush(timeout_s=180)
    wait_for(lambda: stores.store.stats().documents == 24, timeout_s=180, what="all documents after the restart")
    assert_consistent(stores, 24)
    wait_for(lambda: bool(runner.lag_report()["lag_fresh"]) and runner.lag == 0, timeout_s=60, what="lag 0, fresh")
