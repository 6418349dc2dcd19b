"""A worker opens only the engines its handler touches (issue 16, item 6): the graph-writer and the
extractor never open the vector index, so they need no Qdrant setting, and a missing one for a worker
that does use it is a clear CONFIGURATION_INVALID at first use."""

from __future__ import annotations

import pytest

from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ports import Embedder
from kgrag_runtime.distributed import open_stores
from kgrag_runtime.settings import KgragSettings

pytestmark = pytest.mark.integration


def test_engines_open_on_first_use_only(distributed_settings: KgragSettings, embedder: Embedder) -> None:
    no_vectors = distributed_settings.model_copy(update={"qdrant_url": None, "qdrant_path": None})
    with open_stores(no_vectors, embedder=embedder) as stores:
        assert stores.opened == {"postgres"}
        assert stores.store.stats().documents == 0  # what an extractor or graph-writer needs works
        with pytest.raises(KgragError) as err:
            _ = stores.vectors
        assert err.value.code is ErrorCode.CONFIGURATION_INVALID and "KGRAG_QDRANT_URL" in err.value.message
        assert "opensearch" not in stores.opened and "s3" not in stores.opened


def test_positive_control_a_chunk_indexer_opens_what_it_indexes_into(
    distributed_settings: KgragSettings, embedder: Embedder
) -> None:
    with open_stores(distributed_settings, embedder=embedder) as stores:
        stores.indexer(distributed_settings)
        assert {"postgres", "qdrant", "opensearch", "s3", "redis"} <= stores.opened
        assert stores.vectors.count() == 0
