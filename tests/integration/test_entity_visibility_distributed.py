"""The entity API's adversarial probes (docs/security.md, classes 1-3) on the distributed runtime: the four HTTP
tests of tests/pipeline/test_entity_visibility_http.py against the query API wired on the distributed stores,
with the records indexed, extracted and resolved by Kafka consumer groups (chunk-indexer, extractor,
entity-resolver) on the real servers. Outsider token against an HR reader's, each with its positive control.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.connectors import iter_path
from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED
from kgrag_core.extraction.records import RerunScope
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_query_api.api import create_app
from kgrag_runtime.distributed import DistributedStores, query_app
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.graph import build_resolution, build_resolver_handler
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for, wait_until_quiet
from tests.pipeline.test_entity_visibility_http import (
    HUB_RECORDS,
    RECORDS,
    VERIFIER,
    test_a_hub_by_restricted_edges_is_no_hub_to_an_outsider,
    test_an_entity_only_restricted_evidence_names_is_a_404_like_an_unknown_id,
    test_graph_search_seeds_and_paths_hold_only_visible_entities,
    test_records_sharing_an_email_show_the_outsider_only_the_public_record,
)

pytestmark = pytest.mark.integration
# The embedded module's tests, collected here so they run on this module's `client` and `hub_client`.
__all__ = [
    "test_a_hub_by_restricted_edges_is_no_hub_to_an_outsider",
    "test_an_entity_only_restricted_evidence_names_is_a_404_like_an_unknown_id",
    "test_graph_search_seeds_and_paths_hold_only_visible_entities",
    "test_records_sharing_an_email_show_the_outsider_only_the_public_record",
]


@contextmanager
def serving(
    settings: KgragSettings, stores: DistributedStores, workers: Workers, tmp_path: Path, records: list[dict[str, Any]]
) -> Iterator[TestClient]:
    settings = settings.model_copy(update={"resolution_hub_min_degree": 3})
    indexer = stores.indexer(settings)
    extractor = build_extractor(settings, store=stores.extraction, llm=None)
    resolution = build_resolution(settings, store=stores.store, embedder=stores.embedder)
    runners = [
        workers.start("chunk-indexer", ChunkIndexerHandler(indexer, topics=(DOCUMENTS_CHANGED,))),
        workers.start("extractor", ExtractorHandler(stores.store, extractor, topics=(CHUNKS_CHANGED,))),
        workers.start("entity-resolver", build_resolver_handler(settings, resolution)),
    ]
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    kg = query_app(settings, stores, llm=None)
    kg.ingest(list(iter_path(path)))
    ids = tuple(str(r["id"]) for r in records)

    def extracted() -> bool:
        chunks = stores.extraction.chunks_in_scope(RerunScope(doc_ids=ids))
        states = stores.extraction.states([c.chunk_id for c in chunks])
        return {c.doc_id for c in chunks} == set(ids) and all(c.chunk_id in states for c in chunks)

    wait_for(extracted, what="every record extracted on Kafka")
    wait_until_quiet(runners)  # the entity-resolver's passes (and hub labels) done
    with TestClient(create_app(kg, VERIFIER)) as client:
        yield client


@pytest.fixture
def client(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers, tmp_path: Path
) -> Iterator[TestClient]:
    with serving(distributed_settings, stores, workers, tmp_path, RECORDS) as c:
        yield c


@pytest.fixture
def hub_client(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers, tmp_path: Path
) -> Iterator[TestClient]:
    with serving(distributed_settings, stores, workers, tmp_path, HUB_RECORDS) as c:
        yield c
