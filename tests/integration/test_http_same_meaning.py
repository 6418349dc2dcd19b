"""One meaning per API call (issue 16, item 4): the same HTTP script against the query API on the embedded
runtime and on the distributed one (real Kafka, PostgreSQL, OpenSearch, Redis, S3, workers consuming).

The only difference a caller may see is time: on Kafka an accepted write answers QUEUED and takes effect
a moment later, so the script waits on the document's status endpoint, which both runtimes answer."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_core.events import DOCUMENTS_CHANGED, DOCUMENTS_DELETED
from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.ports import Embedder
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.app import KgragApp
from kgrag_runtime.distributed import DistributedStores, active_document_check, producer
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.integration.conftest import Workers

pytestmark = pytest.mark.integration
VERIFIER = TokenVerifier(key="test-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")


def bearer(sub: str, groups: list[str], scopes: list[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {VERIFIER.issue(sub, groups=groups, scopes=scopes)}"}


INGEST = bearer("connector", [], ["ingest"])
READER = bearer("sam", ["engineering"], ["search"])
ADMIN = bearer("root", [], ["admin"])
MEMO = "The yard gate code rotates every Monday at six."


def _status(client: TestClient, doc_id: str) -> str | None:
    response = client.get(f"/v1/ingest/documents/{doc_id}/status", headers=INGEST)
    return None if response.status_code == 404 else str(response.json()["status"])


def _settle(client: TestClient, doc_id: str, want: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while _status(client, doc_id) != want:
        assert time.monotonic() < deadline, f"{doc_id} never reached {want} (now {_status(client, doc_id)})"
        time.sleep(0.1)


def _hits(client: TestClient, headers: dict[str, str]) -> set[str]:
    response = client.post("/v1/search", json={"query": "yard gate code rotates Monday"}, headers=headers)
    assert response.status_code == 200, response.json()
    return {h["doc_id"] for h in response.json()["hits"]}


def run_script(client: TestClient) -> list[tuple[str, Any]]:
    """The script; returns what a caller observes, to compare across runtimes."""
    seen: list[tuple[str, Any]] = []
    public = {"doc_id": "memo-public", "title": "Gate", "text": MEMO}
    explicit_null = {"doc_id": "memo-null-acl", "title": "Gate", "text": MEMO, "acl": None}
    for body in (public, explicit_null):
        response = client.post("/v1/ingest/documents", json=body, headers=INGEST)
        assert response.status_code == 202 and response.json()["status"] in {"INDEXED", "QUEUED"}
        _settle(client, body["doc_id"], "INDEXED")
    # "acl": null is not "everyone": a value that is present but not an ACL is private (admins only).
    seen.append(("reader sees", sorted(_hits(client, READER) & {"memo-public", "memo-null-acl"})))
    seen.append(("admin sees", sorted(_hits(client, ADMIN) & {"memo-public", "memo-null-acl"})))
    # Deleting or re-permissioning an ID that has no active document: 404 on both runtimes.
    for method, path, body in (
        ("DELETE", "/v1/ingest/documents/never-ingested", None),
        ("POST", "/v1/ingest/acl", {"doc_id": "never-ingested", "acl": {"groups": ["hr"]}}),
    ):
        response = client.request(method, path, json=body, headers=INGEST)
        seen.append((f"{method} unknown", (response.status_code, response.json()["error"]["code"])))
    response = client.delete("/v1/ingest/documents/memo-public", headers=INGEST)
    assert response.status_code == 200 and response.json()["status"] in {"DELETED", "QUEUED"}
    _settle(client, "memo-public", "DELETED")
    again = client.delete("/v1/ingest/documents/memo-public", headers=INGEST)
    seen.append(("DELETE twice", (again.status_code, again.json()["error"]["code"])))
    seen.append(("reader after delete", sorted(_hits(client, READER) & {"memo-public", "memo-null-acl"})))
    return seen


EXPECTED = [
    ("reader sees", ["memo-public"]),
    ("admin sees", ["memo-null-acl", "memo-public"]),
    ("DELETE unknown", (404, "DOCUMENT_NOT_FOUND")),
    ("POST unknown", (404, "DOCUMENT_NOT_FOUND")),
    ("DELETE twice", (404, "DOCUMENT_NOT_FOUND")),
    ("reader after delete", []),
]


@pytest.fixture
def embedded_client(tmp_path: Path, pg_dsn: str, embedder: Embedder) -> Iterator[TestClient]:
    settings = KgragSettings(data_dir=tmp_path / "embedded", pg_dsn=pg_dsn)
    with open_embedded(settings, embedder=embedder) as kg, TestClient(create_app(kg, VERIFIER)) as client:
        yield client


@pytest.fixture
def distributed_client(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers
) -> Iterator[TestClient]:
    indexer = stores.indexer(distributed_settings)
    log = stores.store
    start: Callable[..., object] = workers.start
    start("chunk-indexer", ChunkIndexerHandler(indexer, topics=(DOCUMENTS_CHANGED,)), outcome_log=log)
    start(
        "deletion-worker",
        ChunkIndexerHandler(indexer, name="deletion-worker", topics=(DOCUMENTS_DELETED,)),
        outcome_log=log,
    )
    start("acl-propagator", AclPropagatorHandler(indexer), outcome_log=log)
    kg = KgragApp(
        searcher=stores.searcher(),
        ingestion=KafkaIngest(producer(distributed_settings, "q"), is_active=active_document_check(stores.store)),
        ingest_log=stores.store,
        stats_source=stores.store,
        cache=stores.cache,
        llm=None,
    )
    with TestClient(create_app(kg, VERIFIER)) as client:
        yield client


def test_the_embedded_runtime_answers_the_script(embedded_client: TestClient) -> None:
    assert run_script(embedded_client) == EXPECTED


def test_the_distributed_runtime_answers_the_same_script(distributed_client: TestClient) -> None:
    assert run_script(distributed_client) == EXPECTED
