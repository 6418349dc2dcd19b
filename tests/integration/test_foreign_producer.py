"""A foreign producer's events are consumed: a system writing `documents.changed` / `documents.deleted`
straight to Kafka with plain confluent-kafka (the SDK's example producer, nothing of kgrag's runtime),
payloads checked against the published JSON Schemas. The same event produced twice has one effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Producer
from jsonschema import Draft202012Validator

from kgrag_connectors.kafka_producer import document_changed, document_deleted, produce
from kgrag_core.acl import Caller
from kgrag_core.documents import DocumentStatus
from kgrag_core.events import DOCUMENTS_CHANGED, DOCUMENTS_DELETED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_runtime.distributed import DistributedStores
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for, wait_until_quiet

pytestmark = pytest.mark.integration
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "events"


def schema(topic: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMAS / f"{topic}.v1.json").read_text(encoding="utf-8")))


def test_events_of_a_plain_confluent_kafka_producer_are_consumed_once(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    indexer = stores.indexer(distributed_settings)
    runners = [
        workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,))),
        workers.start(
            "deletion-worker", ChunkIndexerHandler(indexer, name="deletion-worker", topics=(DOCUMENTS_DELETED,))
        ),
    ]
    prefix = distributed_settings.kafka_topic_prefix
    foreign = Producer({"bootstrap.servers": distributed_settings.kafka_bootstrap, "enable.idempotence": True})
    event = document_changed(
        "tickets/OPS-41", "OPS-41", b"The Marlin gateway drops sessions after the 3.2 upgrade.", groups=("support",)
    )
    schema(DOCUMENTS_CHANGED).validate(event)  # what the foreign system sends is what the schema publishes
    for _ in range(2):  # a producer retrying after a lost ack: the same event twice
        produce(foreign, prefix, event)

    wait_for(lambda: stores.store.get_document("tickets/OPS-41") is not None, what="the foreign event indexed")
    wait_until_quiet(runners)
    doc = stores.store.get_document("tickets/OPS-41")
    assert doc is not None and doc.version == 1 and doc.source == "kafka"
    chunks = stores.store.chunks_of("tickets/OPS-41")
    assert chunks and stores.vectors.count() == stores.keywords.count() == len(chunks)  # one effect, not two
    searcher = stores.searcher()
    query = "Marlin gateway drops sessions"
    assert searcher.search(query, Caller(groups=("support",))).hits[0].doc_id == "tickets/OPS-41"  # positive control
    assert all(h.doc_id != "tickets/OPS-41" for h in searcher.search(query, Caller(groups=("sales",))).hits)

    deleted = document_deleted("tickets/OPS-41", reason="closed as spam")
    schema(DOCUMENTS_DELETED).validate(deleted)
    produce(foreign, prefix, deleted)
    wait_for(
        lambda: (d := stores.store.get_document("tickets/OPS-41")) is not None and d.status is DocumentStatus.DELETED,
        what="the foreign deletion applied",
    )
    assert stores.vectors.ids_for_doc("tickets/OPS-41") == [] and stores.keywords.ids_for_doc("tickets/OPS-41") == []
