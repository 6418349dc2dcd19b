"""Search filters on the distributed runtime: documents fed through Kafka, filters inside the Qdrant payload
filter (qdrant-client; local mode here, as the other distributed tests) and the OpenSearch filter clauses."""

from __future__ import annotations

from datetime import date

import pytest

from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.filters import SearchFilters
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.dated_corpus import CAPACITY, CORPUS

pytestmark = pytest.mark.integration
ENGINEER = Caller(groups=("engineering",))


def test_filters_run_inside_qdrant_and_opensearch(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    indexer = stores.indexer(distributed_settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    kg = KgragApp(
        searcher=stores.searcher(),
        ingestion=KafkaIngest(producer(distributed_settings, "test")),
        ingest_log=stores.store,
        stats_source=stores.store,
        cache=stores.cache,
        llm=None,
    )
    assert {o.status for o in kg.ingest(CORPUS)} == {IngestStatus.QUEUED}
    wait_for(lambda: stores.store.stats().documents == len(CORPUS), what="the corpus indexed")
    wait_for(lambda: stores.keywords.count() == len(CORPUS), what="the corpus in OpenSearch")

    everything = kg.search(CAPACITY, ENGINEER, top_k=10)
    assert {h.doc_id for h in everything.hits} == {"wiki-atlas-2023", "ticket-atlas-2024", "wiki-harbor"}
    assert everything.limits["route_counts"] == {"bm25": 3, "dense": 3}  # the positive control

    wiki = SearchFilters.build(sources=["wiki"])
    filtered = kg.search(CAPACITY, ENGINEER, top_k=10, filters=wiki)
    assert {h.doc_id for h in filtered.hits} == {"wiki-atlas-2023", "wiki-harbor"}
    assert filtered.limits["route_counts"] == {"bm25": 2, "dense": 2}  # the engines never returned the ticket

    # Each engine on its own, asked for one candidate: the best match outside the filter never takes the place.
    allowed = sorted({d.acl.acl_class_id for d in CORPUS if d.doc_id != "hr-bands"})
    vector = stores.searcher().embedder.embed_query(CAPACITY)
    in_2024 = SearchFilters.build(date_from=date(2024, 1, 1), date_to=date(2024, 12, 31))
    as_of_2023 = SearchFilters.build(as_of=date(2023, 12, 31))
    chunk_doc = {c.chunk_id: d.doc_id for d in CORPUS for c in stores.store.chunks_of(d.doc_id)}
    for filters, expected in ((in_2024, {"ticket-atlas-2024", "wiki-harbor"}), (as_of_2023, {"wiki-atlas-2023"})):
        dense = stores.vectors.search(vector, allowed, 10, filters=filters)
        bm25 = stores.keywords.search(CAPACITY, allowed, 10, filters=filters)
        assert {chunk_doc[h.chunk_id] for h in dense} == expected
        assert {chunk_doc[h.chunk_id] for h in bm25} <= expected and bm25

    answer = kg.ask(CAPACITY, ENGINEER, filters=as_of_2023)
    assert {c["doc_id"] for c in answer["citations"]} == {"wiki-atlas-2023"}  # type: ignore[union-attr,index]
    with pytest.raises(KgragError) as err:
        kg.search(CAPACITY, ENGINEER, filters=SearchFilters.build(sources=["hr"]))
    assert err.value.code is ErrorCode.INVALID_FILTER
    assert kg.search(CAPACITY, Caller(groups=("hr",)), filters=SearchFilters.build(sources=["hr"])).hits
