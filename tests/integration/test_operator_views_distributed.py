"""Operator views on the distributed runtime (docs/security.md, section 11).

The four checks of tests/pipeline/test_operator_views_http.py, run against the query API as it is wired on
the distributed stores (`query_app`; the corpus indexed and extracted by Kafka consumer groups): every route
classified, every admin route refused to reader, in-group reader and ingest tokens, the admin token served
(positive control), and `/healthz`, `/readyz`, `/metrics` naming no document. Plus the workers' own ops
endpoints (the same OpsServer and readiness check `run_worker` serves): nothing they answer names a
document either, after the worker indexed the restricted ones.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from kgrag_core.acl import Caller
from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED
from kgrag_core.extraction.records import RerunScope
from kgrag_core.graph.model import DecisionKind, PairDecision
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_query_api.api import create_app
from kgrag_runtime.distributed import DistributedStores, query_app
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.kafka.runner import ConsumerRunner
from kgrag_runtime.ops_server import OpsServer
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.worker import readiness
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.test_entities_http import VERIFIER
from tests.pipeline.test_operator_views_http import (
    SECRET_TITLE,
    _restricted_record,
    test_every_route_is_classified,
    test_operator_views_refuse_every_token_without_the_admin_scope,
    test_the_admin_token_gets_the_operator_views,
    test_what_needs_no_token_names_no_document,
)

pytestmark = pytest.mark.integration
# The embedded module's tests, collected here so they run on this module's `operated` fixture.
__all__ = [
    "test_every_route_is_classified",
    "test_operator_views_refuse_every_token_without_the_admin_scope",
    "test_the_admin_token_gets_the_operator_views",
    "test_what_needs_no_token_names_no_document",
]
NAMES = {"record-osprey-a": "Larkspur Holdings", "record-osprey-b": "Quillmark"}


@pytest.fixture
def indexed(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> tuple[ConsumerRunner, list[str]]:
    """The restricted records indexed and extracted on Kafka; the chunk-indexer's runner and the entity ids."""
    settings = distributed_settings
    runner = workers.start("chunk-indexer", ChunkIndexerHandler(stores.indexer(settings), topics=(DOCUMENTS_CHANGED,)))
    extractor = build_extractor(settings, store=stores.extraction, llm=None)
    workers.start("extractor", ExtractorHandler(stores.store, extractor, topics=(CHUNKS_CHANGED,)))
    kg = query_app(settings, stores, llm=None)
    kg.ingest([_restricted_record(doc_id, name) for doc_id, name in NAMES.items()])
    graph = kg.require_graph()

    def ids() -> list[str]:
        admin = Caller(admin=True)
        return sorted(c["entity_id"] for n in NAMES.values() for c in graph.resolve(n, admin)["candidates"])

    wait_for(lambda: len(ids()) == 2, what="both records extracted on Kafka")
    return runner, ids()


@pytest.fixture
def operated(
    indexed: tuple[ConsumerRunner, list[str]], distributed_settings: KgragSettings, stores: DistributedStores
) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """As the embedded fixture: something in every operator view (a merge, a queued pair, an extraction run)."""
    _, ids = indexed
    kg = query_app(distributed_settings, stores, llm=None)
    graph = kg.require_graph()
    merge = graph.merge(ids, reason="one company")
    graph.split(str(merge["merge_id"]))
    graph.store.queue_for_review([PairDecision(ids[0], ids[1], DecisionKind.REVIEW, 0.7, (), "test: review")])
    run = kg.require_extraction().rerun(RerunScope(doc_ids=("record-osprey-a",)), "operator-view", dry_run=False)
    with TestClient(create_app(kg, VERIFIER)) as client:
        yield client, {"entity": ids[0], "merge_id": str(merge["merge_id"]), "run_id": str(run["run_id"])}


def test_a_worker_s_ops_endpoints_name_no_document(
    indexed: tuple[ConsumerRunner, list[str]], stores: DistributedStores
) -> None:
    runner, ids = indexed
    ops = OpsServer(
        "127.0.0.1",
        0,
        live=lambda: {"ok": True},
        ready=lambda: readiness(runner, stores.store.stats, max_lag=10_000),
        registry=runner.metrics.registry,
    ).start()
    try:
        for path in ("/healthz", "/readyz", "/metrics"):
            response = httpx.get(f"http://127.0.0.1:{ops.port}{path}", timeout=10)
            assert response.status_code == 200, (path, response.text)
            for secret in (SECRET_TITLE, *NAMES.values(), *NAMES, *ids):
                assert secret not in response.text, (path, secret)
        # Positive control: the worker did index them (its metrics count the events), and the title exists.
        metrics = httpx.get(f"http://127.0.0.1:{ops.port}/metrics", timeout=10).text
        [processed] = [line for line in metrics.splitlines() if line.startswith("kgrag_events_processed_total")]
        assert float(processed.rsplit(" ", 1)[1]) >= len(NAMES), processed
        assert {d.title for d in stores.store.get_documents(list(NAMES)).values()} == {SECRET_TITLE}
    finally:
        ops.stop()
