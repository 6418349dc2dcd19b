"""The distributed runtime end to end on real Kafka, PostgreSQL, OpenSearch, Qdrant (client local mode),
Neo4j, Redis and S3: the same handlers as the embedded runtime, run by Kafka consumer groups."""

from __future__ import annotations

import dataclasses

import pytest

from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
from kgrag_core.acl import Caller, acl_from_source
from kgrag_core.documents import DocumentStatus
from kgrag_core.errors import ErrorCode
from kgrag_core.events import DOCUMENTS_CHANGED, DOCUMENTS_DELETED, document_changed_from_source
from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.graph_writer import GraphWriterHandler
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, connect_neo4j, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.kafka.codec import encode
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
    # The test's own namespace (distributed_settings): a deployment's or another test's nodes are never touched.
    g = connect_neo4j(distributed_settings)
    yield g
    g.drop_namespace()
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


def test_every_rejected_record_goes_to_the_dead_letter_topic_as_it_came_and_the_partition_moves_on(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    from confluent_kafka import Consumer

    indexer = stores.indexer(distributed_settings)
    runner = workers.start(
        "chunk-indexer",
        ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)),
        outcome_log=stores.store,
    )
    send = producer(distributed_settings, "test")
    good = corpus()[0]
    # A valid event whose document bytes are not UTF-8: rejected by the indexer, not by the decoder.
    latin1 = dataclasses.replace(corpus()[1], doc_id="latin1-notes", body=b"caf\xe9 \xff notes")
    latin1_bytes = encode(DOCUMENTS_CHANGED, document_changed_from_source(latin1).model_dump(mode="json"))
    originals = {
        "MALFORMED_JSON": b"{not json",
        "MALFORMED_EVENT": b'{"doc_id": "atlas", "title": 7}',
        "INVALID_UTF8": latin1_bytes,
    }
    # Same key for the first two, so the bad events sit in front of the good one in the same partition.
    send.produce_raw(DOCUMENTS_CHANGED, "atlas", originals["MALFORMED_JSON"])
    send.produce_raw(DOCUMENTS_CHANGED, "atlas", originals["MALFORMED_EVENT"])
    send.produce_raw(DOCUMENTS_CHANGED, "latin1-notes", originals["INVALID_UTF8"])
    KafkaIngest(send).ingest([good])
    wait_for(lambda: stores.store.get_document("atlas") is not None, what="the good event after the bad ones")

    consumer = Consumer(
        {
            "bootstrap.servers": distributed_settings.kafka_bootstrap,
            "group.id": "dlq-reader",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([distributed_settings.kafka_topic_prefix + "chunk-indexer.dlq"])
    dead: list[tuple[dict[str, str], bytes]] = []
    wait_for(lambda: _drain(consumer, dead, 3), what="three dead letters")
    consumer.close()
    by_code = {headers["error_code"]: (headers, value) for headers, value in dead}
    assert sorted(by_code) == sorted(originals)
    source_topic = distributed_settings.kafka_topic_prefix + DOCUMENTS_CHANGED
    for code, (headers, value) in by_code.items():
        assert value == originals[code], code  # the original bytes, never a re-serialised copy
        assert headers["reason"]
        assert headers["source_topic"] == source_topic
        assert int(headers["source_partition"]) >= 0 and int(headers["source_offset"]) >= 0
    assert runner.metrics.dlq._value.get() == 3  # type: ignore[attr-defined]
    # Every document's outcome is in the ingest log, rejected ones with their code (positive control: the
    # good one is there as INDEXED).
    assert [(o.status, o.error_code) for o in stores.store.outcomes_for("latin1-notes")] == [
        (IngestStatus.REJECTED, ErrorCode.INVALID_UTF8)
    ]
    assert stores.store.outcomes_for("atlas")[0].status is IngestStatus.INDEXED


def _drain(consumer, out: list[tuple[dict[str, str], bytes]], want: int) -> bool:  # type: ignore[no-untyped-def]
    for message in consumer.consume(10, 0.5):
        if message.error() is None:
            out.append(({k: v.decode() for k, v in (message.headers() or [])}, message.value()))
    return len(out) >= want
