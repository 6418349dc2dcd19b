"""A curator's merge survives an ACL round trip through the whole Kafka pipeline (docs/security.md, section 8).

The scenario of tests/pipeline/test_curation_survives.py on the distributed runtime: the chunk-indexer,
acl-propagator, extractor, entity-resolver and the graph-writer's knowledge projection run as Kafka consumer
groups on the real servers (Neo4j in a namespace of the test's own). Two records name one system twice; an
admin merges them through the query API's wiring (which announces the merge on Kafka); one record is made
restricted and public again with acl.changed events, so its facts are extracted again, the resolver runs
and the projection re-reads. Afterwards both PostgreSQL (what the query API reads) and Neo4j show one
entity to the admin and to an outsider, and the merge log still holds the merge. Positive control: while the
record is restricted the outsider no longer finds its name, and a leadership reader still sees the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_core.acl import PUBLIC, AclClass, Caller, readable_classes
from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED, ENTITIES_CHANGED, GRAPH_CHANGED
from kgrag_core.graph.routing import Route
from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_core.handlers.knowledge_projection import KnowledgeProjectionHandler
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, query_app
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.graph import build_resolution, build_resolver_handler
from kgrag_runtime.kafka.runner import ConsumerRunner
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import build_key_ring
from tests.integration.conftest import Workers, wait_for, wait_until_quiet
from tests.neo4j_lock import neo4j_held
from tests.pipeline.test_curation_survives import ADMIN, ATLAS, PLANNER, READER, _assert_one_entity, _system

pytestmark = pytest.mark.integration
LEADER = Caller(user="grace.oneill", groups=("leadership",))


@pytest.fixture
def source(distributed_settings: KgragSettings) -> Iterator[PostgresKnowledgeSource]:
    dsn = distributed_settings.pg_dsn.get_secret_value() if distributed_settings.pg_dsn else ""
    with PostgresKnowledgeSource.connect(dsn, kek=build_key_ring(distributed_settings)) as source:
        yield source


@pytest.fixture
def neo(distributed_settings: KgragSettings, source: PostgresKnowledgeSource) -> Iterator[Neo4jKnowledgeGraph]:
    with neo4j_held(distributed_settings.neo4j_uri or "") as uri:
        # The deployment's namespace: the query API reads this projection while it is caught up. Sealed, as
        # the graph-writer service writes it (the query API's reader opens it with the store's cipher).
        with Neo4jKnowledgeGraph.connect(
            uri, namespace=distributed_settings.neo4j_namespace, cipher=source.cipher, name_index=source.name_index
        ) as graph:
            try:
                yield graph
            finally:
                graph.drop_namespace()


@pytest.fixture
def pipeline(
    distributed_settings: KgragSettings,
    stores: DistributedStores,
    workers: Workers,
    source: PostgresKnowledgeSource,
    neo: Neo4jKnowledgeGraph,
) -> Iterator[tuple[KgragApp, list[ConsumerRunner]]]:
    settings = distributed_settings
    indexer = stores.indexer(settings)
    extractor = build_extractor(settings, store=stores.extraction, llm=None)
    resolution = build_resolution(settings, store=stores.store, embedder=stores.embedder)
    runners = [
        workers.start("chunk-indexer", ChunkIndexerHandler(indexer, topics=(DOCUMENTS_CHANGED,))),
        workers.start("acl-propagator", AclPropagatorHandler(indexer)),
        workers.start("extractor", ExtractorHandler(stores.store, extractor, topics=(CHUNKS_CHANGED,))),
        workers.start("entity-resolver", build_resolver_handler(settings, resolution)),
        workers.start(
            "graph-writer",
            KnowledgeProjectionHandler(source, neo, topics=(CHUNKS_CHANGED, GRAPH_CHANGED, ENTITIES_CHANGED)),
        ),
    ]
    yield query_app(settings, stores, llm=None), runners
    workers.stop_all()  # before the projection's connection closes


def _neo_clusters(neo: Neo4jKnowledgeGraph, stores: DistributedStores, ids: Sequence[str], caller: Caller) -> set[str]:
    """The canonical ids Neo4j shows `caller` for `ids` (one id: one entity)."""
    acl = None if caller.admin else readable_classes(stores.store.acl_classes(), caller)
    found = [neo.entity(i, acl) for i in ids]
    assert all(s is not None for s in found), (caller, ids, found)
    return {s.entity.entity_id for s in found if s is not None}


def test_a_hand_merge_survives_an_acl_round_trip_through_kafka(
    pipeline: tuple[KgragApp, list[ConsumerRunner]], stores: DistributedStores, neo: Neo4jKnowledgeGraph, tmp_path: Path
) -> None:
    kg, runners = pipeline
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (ATLAS, PLANNER)), encoding="utf-8")
    kg.ingest(list(iter_path(path)))
    graph = kg.require_graph()

    def systems() -> bool:
        return all(
            [c for c in graph.resolve(n, ADMIN)["candidates"] if c["type"] == "System"]
            for n in ("Atlas", "Route Planner")
        )

    wait_for(systems, timeout_s=90, what="both records extracted on Kafka")
    wait_until_quiet(runners)
    atlas, planner = _system(graph, "Atlas")["entity_id"], _system(graph, "Route Planner")["entity_id"]
    assert atlas != planner
    merge_id = str(graph.merge([atlas, planner], canonical_id=atlas, reason="test: one system, renamed")["merge_id"])
    wait_until_quiet(runners)
    _assert_one_entity(kg, atlas, planner)
    for caller in (ADMIN, READER):
        assert len(_neo_clusters(neo, stores, [atlas, planner], caller)) == 1  # projected through entities.changed

    kg.change_acl(PLANNER["id"], AclClass.of(["group:leadership"]))
    wait_for(
        lambda: graph.resolve("Route Planner", READER)["candidates"] == [],
        timeout_s=60,
        what="the record restricted on Kafka",
    )
    wait_until_quiet(runners)
    # Positive control: restricted, its name is gone for the outsider; the leadership reader has the cluster.
    assert graph.resolve("Route Planner", READER)["candidates"] == []
    cluster = _system(graph, "Route Planner", LEADER)
    assert cluster == _system(graph, "Atlas", LEADER) and atlas in cluster["members"]

    kg.change_acl(PLANNER["id"], AclClass.of([PUBLIC]))
    wait_for(
        lambda: graph.resolve("Route Planner", READER)["candidates"] != [],
        timeout_s=60,
        what="the record public again on Kafka",
    )
    wait_until_quiet(runners)
    _assert_one_entity(kg, atlas, planner)
    for caller in (ADMIN, READER):
        assert len(_neo_clusters(neo, stores, [atlas, planner], caller)) == 1, caller
    [logged] = [m for m in graph.merges() if m["merge_id"] == merge_id]
    assert logged["reverted"] is False
    # The entity API's reads above were served by the Neo4j projection once it had caught up (KGRAG_GRAPH_READS).
    assert kg.graph_reads is not None and kg.graph_reads.counts[Route.PROJECTION] > 0
    assert kg.graph_reads.lag() == 0
