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
from tests.pipeline.cli_runner import cli_env, json_cli

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


def test_kgrag_status_doc_reads_what_the_status_route_reads(
    distributed_client: TestClient, distributed_settings: KgragSettings, tmp_path: Path
) -> None:
    """`kgrag status --doc ID` on KGRAG_RUNTIME=distributed answers from the deployment's ingest log, exactly
    what the query API's status route answers (issue 16, item 3), and never touches a local index folder."""
    first = {"doc_id": "memo-status", "title": "Gate", "text": MEMO}
    assert distributed_client.post("/v1/ingest/documents", json=first, headers=INGEST).status_code == 202
    _settle(distributed_client, "memo-status", "INDEXED")
    changed = {**first, "text": MEMO + " Visitors sign in at the lodge."}
    assert distributed_client.post("/v1/ingest/documents", json=changed, headers=INGEST).status_code == 202
    _settle(distributed_client, "memo-status", "UPDATED")

    local = tmp_path / "no-local-index"
    env = cli_env(
        KGRAG_RUNTIME="distributed",
        KGRAG_PG_DSN=(distributed_settings.pg_dsn.get_secret_value() if distributed_settings.pg_dsn else ""),
        KGRAG_KEK_DIR=str(distributed_settings.kek_dir),
        KGRAG_DATA_DIR=str(local),
    )
    run = json_cli(env)
    cli = run("status", "--doc", "memo-status")
    route = distributed_client.get("/v1/ingest/documents/memo-status/status", headers=INGEST).json()
    assert cli == route
    assert [o["status"] for o in cli["outcomes"]] == ["UPDATED", "INDEXED"] and all(o["at"] for o in cli["outcomes"])
    assert run("status", "--doc", "memo-status", "--limit", "1")["outcomes"] == route["outcomes"][:1]
    # The error a caller gets is the route's too, with the CLI's exit status.
    missing = run("status", "--doc", "never-ingested", expect=2)
    assert missing["error"]["code"] == "DOCUMENT_NOT_FOUND"
    assert distributed_client.get("/v1/ingest/documents/never-ingested/status", headers=INGEST).status_code == 404
    assert not local.exists()
    # Without the database setting there is nothing to read: a clear configuration error, not a new index.
    no_dsn = json_cli({k: v for k, v in env.items() if k != "KGRAG_PG_DSN"})
    assert no_dsn("status", "--doc", "memo-status", expect=2)["error"]["code"] == "CONFIGURATION_INVALID"
