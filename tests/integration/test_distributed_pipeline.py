"""The distributed runtime end to end on real Kafka, PostgreSQL, OpenSearch, Qdrant (client local mode),
Neo4j, Redis and S3: the same handlers as the embedded runtime, run by Kafka consumer groups."""

from __future__ import annotations

import pytest

from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
from kgrag_core.acl import Caller, acl_from_source
from kgrag_core.documents import DocumentStatus, SourceDocument
from kgrag_core.events import DOCUMENTS_CHANGED, DOCUMENTS_DELETED
from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.graph_writer import GraphWriterHandler
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.corpus import corpus

pytestmark = pytest.mark.integration
ADMIN = Caller(admin=True)


def start_pipeline(
    settings: KgragSettings, stores: DistributedStores, workers: Workers, graph: Neo4jLexicalGraph
) -> KgragApp:
    indexer = stores.indexer(settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    workers.start("deletion-worker", ChunkIndexerHandler(indexer, name="deletion-worker", topics=(DOCUMENTS_DELETED,)))
    workers.start("acl-propagator", AclPropagatorHandler(indexer))
    workers.start("graph-writer", GraphWriterHandler(stores.store, graph))
    return KgragApp(
        searcher=stores.searcher(),
        ingestion=KafkaIngest(producer(settings, "test")),
        ingest_log=stores.store,
        stats_source=stores.store,
        cache=stores.cache,
        llm=None,
    )


@pytest.fixture
def graph(distributed_settings: KgragSettings):  # type: ignore[no-untyped-def]
    g = Neo4jLexicalGraph.connect(distributed_settings.neo4j_uri or "")
    for doc in corpus():
        g.delete_document(doc.doc_id)
    yield g
    for doc in corpus():
        g.delete_document(doc.doc_id)
    g.close()


def test_ingest_search_acl_delete_through_kafka(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers, graph: Neo4jLexicalGraph
) -> None:
    kg = start_pipeline(distributed_settings, stores, workers, graph)
    queued = kg.ingest(corpus())
    assert {o.status for o in queued} == {IngestStatus.QUEUED}

    wait_for(lambda: stores.store.stats().documents == 3, what="three documents indexed")
    chunk_ids = {d.doc_id: [c.chunk_id for c in stores.store.chunks_of(d.doc_id)] for d in corpus()}
    total = sum(len(v) for v in chunk_ids.values())
    assert stores.vectors.count() == stores.keywords.count() == total
    hits = kg.search("Harbor certificate expired", Caller(groups=("engineering",))).hits
    assert hits[0].doc_id == "harbor"
    assert all(h.doc_id != "salary" for h in kg.search("142,000 euros", Caller(groups=("engineering",))).hits)
    wait_for(lambda: graph.chunk_ids("atlas") == chunk_ids["atlas"], what="atlas in Neo4j")
    assert kg.ask("Who is the on-call owner of Atlas?", Caller())["answered"] is True

    # ACL change: engineering loses Harbor, hr gains it — in every projection.
    kg.change_acl("harbor", acl_from_source({"groups": ["hr"]}))
    hr_class = acl_from_source({"groups": ["hr"]}).acl_class_id
    wait_for(lambda: stores.keywords.search("Harbor certificate", [hr_class], 5) != [], what="ACL in OpenSearch")
    engineer_hits = kg.search("Harbor certificate expired", Caller(groups=("engineering",))).hits
    assert all(h.doc_id != "harbor" for h in engineer_hits)
    assert kg.search("Harbor certificate expired", Caller(groups=("hr",))).hits[0].doc_id == "harbor"

    # Deletion: gone from PostgreSQL, Qdrant, OpenSearch, S3, Neo4j, and the answer cache.
    kg.delete("atlas")
    wait_for(
        lambda: (d := stores.store.get_document("atlas")) is not None and d.status is DocumentStatus.DELETED,
        what="atlas deleted",
    )
    assert stores.vectors.ids_for_doc("atlas") == []
    assert stores.keywords.ids_for_doc("atlas") == []
    assert stores.objects.list_keys("") and all("atlas" not in k for k in stores.objects.list_keys(""))
    assert len(stores.objects.list_keys("")) == 2
    wait_for(lambda: graph.chunk_ids("atlas") == [], what="atlas gone from Neo4j")
    assert kg.ask("Who is the on-call owner of Atlas?", Caller())["answered"] is False
    (record,) = stores.store.deletion_records("atlas")
    assert sorted(record.chunk_ids) == sorted(chunk_ids["atlas"])


def test_malformed_event_goes_to_the_dead_letter_topic_and_the_partition_moves_on(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    from confluent_kafka import Consumer

    indexer = stores.indexer(distributed_settings)
    runner = workers.start(
        "chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,))
    )
    send = producer(distributed_settings, "test")
    # Same key, so the bad events sit in front of the good one in the same partition.
    send.produce_raw(DOCUMENTS_CHANGED, "atlas", b"{not json")
    send.produce_raw(DOCUMENTS_CHANGED, "atlas", b'{"doc_id": "atlas", "title": 7}')
    KafkaIngest(send).ingest([corpus()[0]])
    wait_for(lambda: stores.store.get_document("atlas") is not None, what="the good event after the bad ones")

    consumer = Consumer(
        {
            "bootstrap.servers": distributed_settings.kafka_bootstrap,
            "group.id": "dlq-reader",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([distributed_settings.kafka_topic_prefix + "chunk-indexer.dlq"])
    dead: list[dict[str, str]] = []
    wait_for(lambda: bool(_drain(consumer, dead)) or len(dead) >= 2, what="two dead letters")
    consumer.close()
    codes = sorted(h["error_code"] for h in dead)
    assert codes == ["MALFORMED_EVENT", "MALFORMED_JSON"]
    assert all(h["reason"] for h in dead)
    assert runner.metrics.dlq._value.get() == 2  # type: ignore[attr-defined]


def _drain(consumer, out: list[dict[str, str]]) -> bool:  # type: ignore[no-untyped-def]
    for message in consumer.consume(10, 0.5):
        if message.error() is None:
            out.append({k: v.decode() for k, v in (message.headers() or [])})
    return len(out) >= 2


def test_the_extractor_service_builds_facts_from_kafka_and_deletion_removes_them(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    from kgrag_core.extraction.records import RerunScope
    from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
    from kgrag_core.handlers.extractor import ExtractorHandler
    from kgrag_runtime.extraction import build_extractor
    from kgrag_testing.scripted_llm import ScriptedChatModel

    indexer = stores.indexer(distributed_settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    workers.start("deletion-worker", ChunkIndexerHandler(indexer, name="deletion-worker", topics=(DOCUMENTS_DELETED,)))
    model = ScriptedChatModel(lambda messages: '{"entities": [], "relations": [], "claims": []}')
    extractor = build_extractor(distributed_settings, store=stores.extraction, llm=model)
    workers.start("extractor", ExtractorHandler(stores.store, extractor))
    record = SourceDocument(
        doc_id="record-site-kfk",
        source="records",
        uri="records://kfk",
        title="KFK-1",
        body=render_record("site", {"code": "KFK-1", "name": "KFK-1", "capacity_pallets": "5000"}).encode(),
        acl=acl_from_source(None),
        media_type=RECORD_MEDIA_TYPE,
    )
    kg = KgragApp(
        searcher=stores.searcher(),
        ingestion=KafkaIngest(producer(distributed_settings, "test")),
        ingest_log=stores.store,
        stats_source=stores.store,
        cache=stores.cache,
        llm=None,
    )
    kg.ingest([*corpus(), record])
    wait_for(lambda: bool(stores.extraction.claims(entity="KFK-1")), what="tier-1 facts from the record")
    (claim,) = stores.extraction.claims(entity="KFK-1")
    assert (claim.attribute, claim.value, claim.doc_id) == ("capacity_pallets", "5000", "record-site-kfk")
    chunk_ids = [c.chunk_id for c in stores.extraction.chunks_in_scope(RerunScope())]
    wait_for(lambda: len(stores.extraction.states(chunk_ids)) == len(chunk_ids), what="every chunk extracted")
    kg.delete("record-site-kfk")
    wait_for(lambda: stores.extraction.claims(entity="KFK-1") == [], what="the record's facts removed")


def test_the_entity_resolver_service_merges_after_extraction(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
    from kgrag_core.handlers.entity_resolver import EntityResolverHandler
    from kgrag_core.handlers.extractor import ExtractorHandler
    from kgrag_runtime.extraction import build_extractor
    from kgrag_runtime.graph import build_resolution

    indexer = stores.indexer(distributed_settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    workers.start(
        "extractor",
        ExtractorHandler(stores.store, build_extractor(distributed_settings, store=stores.extraction, llm=None)),
    )
    resolver = EntityResolverHandler(
        build_resolution(distributed_settings, store=stores.store, embedder=stores.embedder)
    )
    workers.start("entity-resolver", resolver)
    # The same person twice: in an HR export (with an email, a strong id) and named in a wiki page (tier 2
    # finds the name). Extraction keeps them apart; resolution merges them into one canonical entity.
    record = SourceDocument(
        doc_id="record-person-dana",
        source="records",
        uri="records://dana",
        title="Dana Smit",
        body=render_record(
            "person", {"name": "Dana Smit", "email": "dana.smit@northwind.example", "team": "Routing"}
        ).encode(),
        acl=acl_from_source(None),
        media_type=RECORD_MEDIA_TYPE,
    )
    page = SourceDocument(
        doc_id="wiki-dana",
        source="wiki",
        uri="wiki://dana",
        title="Routing team notes",
        body=b"# Routing team notes\n\nDana Smit leads the Routing team and reviews every Atlas release.\n",
        acl=acl_from_source(None),
    )
    KafkaIngest(producer(distributed_settings, "test")).ingest([record, page])

    def merged() -> bool:
        found = stores.store.entities_named(["Dana Smit"], None).get("dana smit", [])
        return len(found) == 1 and len(found[0].members) >= 2

    wait_for(merged, timeout_s=90, what="the two Dana Smit entities resolved into one")
    (dana,) = stores.store.entities_named(["Dana Smit"], None)["dana smit"]
    assert ("email", "dana.smit@northwind.example") in dana.strong_ids
    assert resolver.last_report is not None and resolver.last_report.merges >= 1
