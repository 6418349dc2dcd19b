"""The schemathesis fuzz of tests/pipeline/test_http_fuzz.py against the distributed runtime's two HTTP
services (docs/security.md, section 7): the query API wired as `python -m kgrag_query_api` wires it on
the distributed stores, and the connector gateway (`build_gateway`), on real Kafka, PostgreSQL,
OpenSearch, Redis and S3. Same checks, same caps, admin and reader tokens, zero failures.

The query API fuzzes an index holding the pipeline corpus, indexed by a chunk-indexer consumer group
that is stopped before the fuzz starts (fuzzed documents go onto Kafka and stay there). Its first run found
the extraction routes (`/v1/claims`, the ontology, re-extraction runs) answering 500 "Extraction is
switched off" on the distributed runtime: the query API's wiring had no extraction admin.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI

from kgrag_connector_gateway.app import build_gateway, close_gateway
from kgrag_core.events import DOCUMENTS_CHANGED
from kgrag_core.extraction.records import RerunScope
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_query_api.api import create_app
from kgrag_runtime.distributed import DistributedStores, query_app
from kgrag_runtime.settings import KgragSettings
from tests.integration.conftest import Workers, wait_for
from tests.pipeline.corpus import corpus
from tests.pipeline.test_http_fuzz import TOKENS, VERIFIER, fuzz

pytestmark = pytest.mark.integration


@pytest.fixture
def query_api(distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers) -> FastAPI:
    indexer = stores.indexer(distributed_settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    kg = query_app(distributed_settings, stores, llm=None)
    kg.ingest(corpus())
    wait_for(lambda: stores.store.stats().documents == len(corpus()), what="the corpus indexed on Kafka")
    workers.stop_all()
    # As the embedded fuzz's ingest does, load the extraction model before the fuzz's 5-second limit applies:
    # a re-extraction run extracts in the query API's process, and the first one loads spaCy.
    kg.require_extraction().rerun(RerunScope(doc_ids=(corpus()[0].doc_id,)), "warm-up", dry_run=False)
    return create_app(kg, VERIFIER)


@pytest.fixture
def gateway(distributed_settings: KgragSettings, stores: DistributedStores) -> Iterator[FastAPI]:
    # `stores` first: its PostgreSQL connection migrates the test database the gateway's store opens.
    app = build_gateway(distributed_settings, VERIFIER)
    try:
        yield app
    finally:
        close_gateway(app)


@pytest.mark.parametrize("role", sorted(TOKENS))
def test_every_distributed_query_api_operation_survives_fuzzing(query_api: FastAPI, role: str) -> None:
    failures = fuzz(query_api, role)
    assert failures == [], "\n".join(failures)


@pytest.mark.parametrize("role", sorted(TOKENS))
def test_every_connector_gateway_operation_survives_fuzzing(gateway: FastAPI, role: str) -> None:
    failures = fuzz(gateway, role)
    assert failures == [], "\n".join(failures)
