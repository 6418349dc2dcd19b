"""Deleting a representative's document on the distributed runtime keeps its duplicates' facts.

The same scenario as tests/pipeline/test_dedup_deletion.py, with the chunk-indexer, the deletion worker and
the extractor run as Kafka consumer groups against the real servers: three notes share one paragraph, the
one holding the representative chunk is deleted through the ingest gateway, and the copies' entities stay
(with their own evidence, for the reader allowed to see them) while the extractor re-anchors the copies.
No model is configured: tiers 0-2 only.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import psycopg
import pytest
from psycopg import sql

from kgrag_core.acl import Caller, readable_classes
from kgrag_core.documents import DocumentStatus
from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED, DOCUMENTS_DELETED
from kgrag_core.extraction.identity import normalise_name
from kgrag_core.extraction.model import SkipReason
from kgrag_core.extraction.records import ChunkExtractionState, RerunScope
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_runtime.distributed import DistributedStores, producer
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.test_dedup_deletion import NAMES, NEAR_COPY, OUTSIDER, PARAGRAPH, READER, note

pytestmark = pytest.mark.integration


def _states(stores: DistributedStores, doc_ids: Sequence[str]) -> dict[str, ChunkExtractionState]:
    chunks = stores.extraction.chunks_in_scope(RerunScope(doc_ids=tuple(doc_ids)))
    states = stores.extraction.states([c.chunk_id for c in chunks])
    return {c.doc_id: states[c.chunk_id] for c in chunks if c.chunk_id in states}


def _extracted(stores: DistributedStores, doc_id: str) -> bool:
    return doc_id in _states(stores, [doc_id])


def _visible(stores: DistributedStores, caller: Caller) -> set[str]:
    classes = readable_classes(stores.store.acl_classes(), caller)
    found = stores.store.entities_named(list(NAMES), classes)
    return {n for n in NAMES if found.get(normalise_name(n))}


def test_deleting_the_representative_on_kafka_keeps_the_copies_facts(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers, pg_dsn: str
) -> None:
    settings = distributed_settings
    indexer = stores.indexer(settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    workers.start("deletion-worker", ChunkIndexerHandler(indexer, name="deletion-worker", topics=(DOCUMENTS_DELETED,)))
    extractor = build_extractor(settings, store=stores.extraction, llm=None)
    workers.start("extractor", ExtractorHandler(stores.store, extractor, name="extractor", topics=(CHUNKS_CHANGED,)))
    gateway = KafkaIngest(producer(settings, "test"))

    docs = ["notes-a", "notes-b", "notes-c"]
    for doc_id, body in zip(docs, [PARAGRAPH, PARAGRAPH, NEAR_COPY], strict=True):
        gateway.ingest([note(doc_id, body)])
        # One at a time, each extracted before the next is sent: the first is the representative.
        wait_for(functools.partial(_extracted, stores, doc_id), what=f"{doc_id} extracted")
    before = _states(stores, docs)
    rep = before["notes-a"].chunk_id
    assert {before[d].representative_chunk_id for d in ("notes-b", "notes-c")} == {rep}
    assert before["notes-c"].skip_reason == SkipReason.NEAR_DUPLICATE.value
    assert _visible(stores, READER) == set(NAMES)  # positive control
    assert _visible(stores, OUTSIDER) == set()

    gateway.delete("notes-a")
    wait_for(
        lambda: (d := stores.store.get_document("notes-a")) is not None and d.status is DocumentStatus.DELETED,
        what="notes-a deleted",
    )
    # The same transaction that removed the representative left the copies' facts: they are there at once.
    assert _visible(stores, READER) == set(NAMES)
    # Then the extractor, on the deletion's chunks.changed event, re-anchors the copies.
    wait_for(
        lambda: _states(stores, ["notes-c"])["notes-c"].representative_chunk_id == before["notes-b"].chunk_id,
        what="the near copy re-anchored to the surviving exact copy",
    )
    after = _states(stores, ["notes-b", "notes-c"])
    assert after["notes-b"].representative_chunk_id is None and after["notes-b"].skip_reason is None
    assert _visible(stores, READER) == set(NAMES)
    assert _visible(stores, OUTSIDER) == set()
    # Nothing names the deleted chunk any more: not the dedup index, not a copy, not a fact.
    with psycopg.connect(pg_dsn) as conn:
        for table, column in [
            ("chunk_extractions", "chunk_id"),
            ("chunk_extractions", "representative_chunk_id"),
            ("chunk_minhash", "chunk_id"),
            ("chunk_lsh_bands", "chunk_id"),
            ("kg_mentions", "chunk_id"),
        ]:
            query = sql.SQL("SELECT count(*) FROM {} WHERE {} = %s").format(
                sql.Identifier(table), sql.Identifier(column)
            )
            row = conn.execute(query, (rep,)).fetchone()
            assert row is not None and row[0] == 0, (table, column)

    # Positive control of the deletion itself: with every copy gone, so are the facts.
    gateway.delete("notes-b")
    gateway.delete("notes-c")
    wait_for(lambda: _visible(stores, Caller(admin=True)) == set(), what="facts gone with the last copy")
