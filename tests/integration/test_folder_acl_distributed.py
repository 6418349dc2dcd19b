"""Folder ACL files on the distributed runtime (docs/security.md, section 10): the two end-to-end tests of
tests/pipeline/test_folder_acl_pipeline.py, with the documents going onto Kafka (sealed, as the query API
sends them) and indexed by a chunk-indexer consumer group into PostgreSQL, OpenSearch and Qdrant, then
searched through the distributed stores. Each ingest returns the outcome the chunk-indexer logged."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from kgrag_core.connectors import ConnectorItem
from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ingest import IngestOutcome
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, query_app
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.test_folder_acl_pipeline import (
    test_changing_an_acl_file_changes_the_acl_at_the_next_ingest,
    test_restricted_eml_txt_and_csv_are_found_only_by_their_readers,
)

pytestmark = pytest.mark.integration
# The embedded module's tests, collected here so they run on this module's `kg` fixture.
__all__ = [
    "test_changing_an_acl_file_changes_the_acl_at_the_next_ingest",
    "test_restricted_eml_txt_and_csv_are_found_only_by_their_readers",
]


@dataclass
class Settled:
    """The distributed app, whose `ingest` waits for the chunk-indexer's outcome of every document."""

    app: KgragApp
    stores: DistributedStores

    def ingest(self, items: Iterable[ConnectorItem]) -> list[IngestOutcome]:
        items = list(items)
        ids = [getattr(i, "doc_id", "") for i in items]
        before = {d: len(self.stores.store.outcomes_for(d)) for d in ids}
        queued = self.app.ingest(items)
        assert all(o.error_code is None for o in queued), [o.as_dict() for o in queued]
        wait_for(
            lambda: all(len(self.stores.store.outcomes_for(d)) > before[d] for d in ids),
            what="the chunk-indexer's outcome of every document",
        )
        return [self.stores.store.outcomes_for(d)[0] for d in ids]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)


@pytest.fixture
def kg(distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers) -> Settled:
    indexer = stores.indexer(distributed_settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, topics=(DOCUMENTS_CHANGED,)), outcome_log=stores.store)
    return Settled(query_app(distributed_settings, stores, llm=None), stores)
