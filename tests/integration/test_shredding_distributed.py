"""Crypto-shredding on the distributed runtime (ADR 0008): Kafka payloads are ciphertext that a deletion
makes unreadable, and OpenSearch expunges the deleted chunks. Real Kafka, PostgreSQL, OpenSearch, S3."""

from __future__ import annotations

import json
import uuid

import pytest
from confluent_kafka import Consumer

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import (
    DOCUMENTS_CHANGED,
    DocumentChanged,
    document_changed_from_source,
    source_from_document_changed,
)
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ingest import IngestStatus
from kgrag_core.shredding import PurgeStatus
from kgrag_runtime.distributed import DistributedStores, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.kafka.codec import dead_letter_topic
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.corpus import doc

pytestmark = pytest.mark.integration


@pytest.fixture
def distributed_settings(distributed_settings: KgragSettings) -> KgragSettings:
    """The deployment default: a deletion's purge waits for the retention lease to let soft deletes go."""
    return distributed_settings.model_copy(update={"opensearch_purge_wait_s": 45.0})


def _raw_records(settings: KgragSettings, doc_id: str, topic: str = DOCUMENTS_CHANGED) -> list[bytes]:
    """The topic's raw record values for `doc_id`, read from the start of the log."""
    consumer = Consumer(
        {
            "bootstrap.servers": settings.kafka_bootstrap,
            "group.id": f"raw-reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([settings.kafka_topic_prefix + topic])
    found: list[bytes] = []

    def drained() -> bool:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None and msg.key() == doc_id.encode():
            value = msg.value()
            if value is not None:
                found.append(bytes(value))
        return bool(found)

    try:
        wait_for(drained, timeout_s=60, what=f"the raw {topic} record")
    finally:
        consumer.close()
    return found


def test_kafka_payload_is_ciphertext_and_dies_with_the_key(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    secret = "zq" + uuid.uuid4().hex
    doc_id = "kafka-" + uuid.uuid4().hex[:10]
    indexer = stores.indexer(distributed_settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    ingest = KafkaIngest(producer(distributed_settings, "test"), cipher=stores.store.cipher)
    ingest.ingest(
        [
            doc(doc_id, f"# Plan {secret}\n\nThe vault code is {secret}.\n", title=secret),
            doc(doc_id + "-live", "# Live\n\nThis document stays.\n\n## More\n\nAnd so does this part.\n"),
        ]
    )
    wait_for(lambda: stores.store.get_document(doc_id + "-live") is not None, what="the sealed events indexed")
    # Positive control: the worker opened the event; an allowed reader reads the text from the store.
    assert any(secret in c.text for c in stores.store.chunks_of(doc_id))

    [raw] = _raw_records(distributed_settings, doc_id)
    assert secret.encode() not in raw  # the log segment holds ciphertext only
    event = DocumentChanged.model_validate(json.loads(raw))
    assert event.sealed_b64 and event.title == "" and event.body_b64 == ""
    assert secret.encode() in source_from_document_changed(event, stores.store.cipher).body  # opens before

    outcome = indexer.delete(doc_id)
    assert outcome.status is IngestStatus.DELETED
    # The same record, replayed from the log after the deletion, no longer opens: its key is destroyed.
    with pytest.raises(KgragError) as err:
        source_from_document_changed(event, stores.store.cipher)
    assert err.value.code is ErrorCode.CONTENT_SHREDDED
    # Replayed to the chunk-indexer, the dead record is skipped (no dead letter, nothing indexed again).
    replay = ChunkIndexerHandler(indexer).handle(DOCUMENTS_CHANGED, [(doc_id, json.loads(raw))])
    assert [(o.doc_id, o.status) for o in replay.outcomes] == [(doc_id, IngestStatus.UNCHANGED)]
    assert replay.dead_letters == [] and replay.outputs == []
    assert stores.store.chunks_of(doc_id) == []
    [record] = stores.store.deletion_records(doc_id)
    statuses = {p.store: p.status for p in record.purges}
    assert statuses["postgres"] is PurgeStatus.SHREDDED
    assert statuses["object_store"] is PurgeStatus.SHREDDED
    assert stores.keywords.ids_for_doc(doc_id) == []
    # OpenSearch: the purge retried the merge until the shard's retention lease let the soft deletes go
    # (KGRAG_OPENSEARCH_PURGE_WAIT_S): purged, and the index itself reports no deleted document left.
    keyword = next(p for p in record.purges if p.store == "keyword_index")
    assert keyword.status is PurgeStatus.PURGED, keyword
    assert keyword.detail == "forcemerge only_expunge_deletes: no deleted document left"
    assert stores.keywords.deleted_documents() == 0
    assert stores.keywords.ids_for_doc(doc_id + "-live")  # the live document is untouched


def test_a_rejected_sealed_event_is_dead_lettered_as_ciphertext(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    """The runner dead-letters a rejected record's original bytes: for a sealed documents.changed that is
    ciphertext too, and the reason it records quotes no content (documents.changed is the only topic that
    carries document text; the others carry ids, versions, principals and counts)."""
    secret = "zq" + uuid.uuid4().hex + "0"
    doc_id = "dlq-" + uuid.uuid4().hex[:10]
    indexer = stores.indexer(distributed_settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    # A body the indexer refuses (a NUL), sealed by the producer as every kgrag producer seals: sent raw,
    # past the edge's own check, so the rejection happens in the consumer.
    bad = doc(doc_id, f"# Plan {secret}\n\nThe vault code is {secret}.\u0000\n", title=secret)
    event = document_changed_from_source(bad, stores.store.cipher.sealer(doc_id))
    events = producer(distributed_settings, "test")
    events.produce(DOCUMENTS_CHANGED, doc_id, event.model_dump(mode="json"))
    events.flush()
    [dead] = _raw_records(distributed_settings, doc_id, dead_letter_topic("chunk-indexer"))
    assert secret.encode() not in dead
    # Positive control: it is the rejected record, and it opens (the document's key still exists).
    assert (
        secret.encode()
        in source_from_document_changed(DocumentChanged.model_validate(json.loads(dead)), stores.store.cipher).body
    )
    assert stores.store.get_document(doc_id) is None
