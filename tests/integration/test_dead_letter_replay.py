"""A rejected record waits in its consumer's DLQ and is re-submitted, unchanged, after the fix (issue 16,
item 3): listing changes nothing, a replay indexes it, and a second replay re-submits nothing."""

from __future__ import annotations

import dataclasses

import pytest

from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ingest import IngestStatus
from kgrag_runtime.admin import dead_letters
from kgrag_runtime.distributed import DistributedStores, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.corpus import corpus

pytestmark = pytest.mark.integration


def test_a_dead_letter_is_replayed_after_the_fix(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> None:
    big, small = corpus()[0], corpus()[1]
    # The "bug": a document limit far too small for real documents.
    strict = distributed_settings.model_copy(update={"max_document_bytes": len(small.body) + 1})
    assert len(big.body) > len(small.body) + 1
    workers.start(
        "chunk-indexer",
        ChunkIndexerHandler(stores.indexer(strict), name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)),
        outcome_log=stores.store,
    )
    KafkaIngest(producer(distributed_settings, "test")).ingest([big, small])
    wait_for(lambda: bool(stores.store.outcomes_for(small.doc_id)), what="the small document's outcome")
    wait_for(lambda: bool(stores.store.outcomes_for(big.doc_id)), what="the big document's outcome")
    assert stores.store.outcomes_for(big.doc_id)[0].status is IngestStatus.REJECTED
    workers.stop_all()

    listed = dead_letters(distributed_settings, "chunk-indexer", replay=False, limit=100)
    assert listed["records"] == 1 and listed["replayed"] == 0
    [item] = listed["items"]  # type: ignore[misc]
    assert item["key"] == big.doc_id and item["error_code"] == "DOCUMENT_TOO_LARGE"
    assert str(item["source"]).startswith(distributed_settings.kafka_topic_prefix + DOCUMENTS_CHANGED + "/")
    assert stores.store.get_document(big.doc_id) is None  # listing re-submitted nothing

    # The fix: the default limit. Then the replay.
    workers.start(
        "chunk-indexer",
        ChunkIndexerHandler(stores.indexer(distributed_settings), name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)),
        outcome_log=stores.store,
    )
    replayed = dead_letters(distributed_settings, "chunk-indexer", replay=True, limit=100)
    assert replayed["replayed"] == 1
    # The outcome is logged right after the handler's PostgreSQL write: wait for the log, not the document.
    wait_for(
        lambda: stores.store.outcomes_for(big.doc_id)[0].status is IngestStatus.INDEXED,
        what="the replayed document indexed",
    )
    assert stores.store.get_document(big.doc_id) is not None
    # Progress was committed: nothing new to re-submit.
    again = dead_letters(distributed_settings, "chunk-indexer", replay=True, limit=100)
    assert again["records"] == 0 and again["replayed"] == 0
    assert dataclasses.asdict(stores.store.stats())["documents"] == 2
