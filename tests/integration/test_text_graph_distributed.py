"""The text graph on the distributed runtime: the extractor service's handler builds it from chunks.changed
on Kafka, the query API's wiring walks it, and a walk never reaches a passage through a chunk the caller
cannot read (the scenario of tests/pipeline/test_text_graph_pipeline.py, with its positive control)."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_runtime.distributed import DistributedStores, query_app
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.quality_metrics import TextGraphMetrics
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.text_graph import with_text_graph
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.test_text_graph_pipeline import INSIDER, MEMO, OUTSIDER, QUESTION, SECURITY_DOCS, _docs

pytestmark = pytest.mark.integration


def _built(stores: DistributedStores, doc_ids: list[str]) -> bool:
    with stores.store.pool as conn:
        row = conn.execute(
            "SELECT count(DISTINCT doc_id) FROM text_graph_mentions WHERE doc_id = ANY(%s)", (doc_ids,)
        ).fetchone()
    return row is not None and row[0] == len(doc_ids)


def test_the_extractor_service_builds_the_text_graph_and_walks_respect_access(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    settings = distributed_settings.model_copy(update={"text_graph": True, "text_graph_timeout_s": 60.0})
    indexer = stores.indexer(settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    registry = CollectorRegistry()
    metrics = TextGraphMetrics(registry)
    extractor = ExtractorHandler(
        stores.store,
        build_extractor(settings, store=stores.extraction, llm=None),
        name="extractor",
        topics=(CHUNKS_CHANGED,),
    )
    handler = with_text_graph(settings, extractor, stores.store, metrics, embedder=stores.embedder)
    assert handler is not extractor  # the service runs the text graph's handler with the extractor's
    workers.start("extractor", handler)
    kg = query_app(settings, stores, llm=None)

    kg.ingest(SECURITY_DOCS)
    wait_for(lambda: _built(stores, [d.doc_id for d in SECURITY_DOCS]), what="the text graph built on Kafka")
    before = kg.search(QUESTION, OUTSIDER, top_k=3)  # KGRAG_TEXT_GRAPH=true: the default
    info = before.limits["text_graph"]
    assert isinstance(info, dict) and info["used"] is True, info

    kg.ingest([MEMO])
    wait_for(lambda: _built(stores, [MEMO.doc_id]), what="the memo's edges built on Kafka")
    outsider = kg.search(QUESTION, OUTSIDER, top_k=3)
    insider = kg.search(QUESTION, INSIDER, top_k=3)
    assert [h.chunk_id for h in outsider.hits] == [h.chunk_id for h in before.hits]
    assert "t1-zephyr" not in _docs(outsider) and "t1-memo" not in _docs(outsider)
    assert "t1-memo" in _docs(insider) and "t1-zephyr" in _docs(insider)  # positive control: the bridge
    assert (registry.get_sample_value("kgrag_text_graph_build_seconds_count") or 0) >= 2
