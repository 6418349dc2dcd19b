"""The ask/search contract over HTTP on the embedded runtime: filters inside candidate generation, modes,
strategy_used, cited versions, the answer-cache key, and the 422s of a bad filter."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import sql
from psycopg.conninfo import make_conninfo

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.dated_corpus import CAPACITY, CORPUS

pytestmark = pytest.mark.pipeline

VERIFIER = TokenVerifier(key="contract-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")
READER = {"Authorization": f"Bearer {VERIFIER.issue('sam', groups=['engineering'], scopes=['search', 'ask'])}"}
HR = {"Authorization": f"Bearer {VERIFIER.issue('ann', groups=['hr'], scopes=['search', 'ask'])}"}


@pytest.fixture(scope="module")
def client(
    pg_server_dsn: str, embedder: OnnxMiniLmEmbedder, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestClient]:
    # One app for the module; extraction off: these tests are about the chunk routes and the contract.
    name = f"kgrag_contract_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    settings = KgragSettings(
        data_dir=tmp_path_factory.mktemp("contract") / "index",
        pg_dsn=make_conninfo(pg_server_dsn, dbname=name),
        extraction_enabled=False,
    )
    try:
        with open_embedded(settings, embedder=embedder) as kg:
            kg.ingest(CORPUS)
            with TestClient(create_app(kg, VERIFIER)) as c:
                yield c
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _search(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/search", json={"query": CAPACITY, "top_k": 10, **body}, headers=READER)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _docs(result: dict[str, Any]) -> set[str]:
    return {h["doc_id"] for h in result["hits"]}


def test_filters_change_the_candidates_of_every_route(client: TestClient) -> None:
    everything = _search(client)
    assert _docs(everything) == {"wiki-atlas-2023", "ticket-atlas-2024", "wiki-harbor"}  # the positive control
    assert everything["limits"]["route_counts"]["dense"] == 3  # one chunk per readable document

    wiki = _search(client, filters={"sources": ["wiki"]})
    assert _docs(wiki) == {"wiki-atlas-2023", "wiki-harbor"}
    # Inside candidate generation: the routes never saw the tickets chunk (a post-filter would leave 3).
    assert wiki["limits"]["route_counts"]["dense"] == 2
    assert wiki["limits"]["filters"]["sources"] == ["wiki"]

    in_2024 = _search(client, filters={"time_range": {"from": "2024-01-01", "to": "2024-12-31"}})
    assert _docs(in_2024) == {"ticket-atlas-2024", "wiki-harbor"}
    assert in_2024["limits"]["route_counts"] == {"bm25": 2, "dense": 2}

    as_of = _search(client, filters={"as_of": "2023-12-31"})
    assert _docs(as_of) == {"wiki-atlas-2023"}
    assert all(h["version"] == 1 for h in as_of["hits"])


def test_ask_carries_the_contract_and_filters_key_the_cache(client: TestClient) -> None:
    def ask(**body: Any) -> dict[str, Any]:
        response = client.post("/v1/ask", json={"question": CAPACITY, **body}, headers=READER)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    latest = ask(mode="VECTOR", filters={"sources": ["tickets"]})
    assert latest["answered"] and {c["doc_id"] for c in latest["citations"]} == {"ticket-atlas-2024"}
    assert all(c["version"] == 1 for c in latest["citations"])
    assert latest["strategy_used"] == {
        "mode": "VECTOR",
        "route": "hybrid",
        "confidence": None,
        "strategies": ["dense", "bm25"],
        "global_fallback": False,
    }
    assert latest["conflicts"] == [] and latest["filters"]["sources"] == ["tickets"]
    assert "12,000" in latest["answer"]

    # The same question as of 2023: another cache entry, another answer (not the cached one above).
    then = ask(mode="VECTOR", filters={"as_of": "2023-12-31"})
    assert then["cached"] is False
    assert {c["doc_id"] for c in then["citations"]} == {"wiki-atlas-2023"} and "8,000" in then["answer"]
    again = ask(mode="VECTOR", filters={"as_of": "2023-12-31"})
    assert again["cached"] is True and again["answer"] == then["answer"]

    whole = ask(mode="GLOBAL", options={"include_graph_paths": True})
    assert whole["global_fallback"] is True and whole["strategy_used"]["global_fallback"] is True
    # Extraction is off here, so the graph is empty: the walk runs and finds no path.
    assert ask(mode="MULTI_HOP", options={"include_graph_paths": True})["graph_evidence"] == []


def _error(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def test_bad_filters_are_422_with_a_stable_code(client: TestClient) -> None:
    for path, key in (("/v1/search", "query"), ("/v1/ask", "question")):

        def post(body: dict[str, Any], headers: dict[str, str] = READER, path: str = path, key: str = key) -> Any:
            return client.post(path, json={key: CAPACITY, **body}, headers=headers)

        inverted = {"filters": {"time_range": {"from": "2024-12-31", "to": "2024-01-01"}}}
        _error(post(inverted), 422, "INVALID_FILTER")
        _error(post({"filters": {"sources": ["confluence"]}}), 422, "INVALID_FILTER")
        # A source whose documents the caller cannot read is as unknown as one that does not exist...
        _error(post({"filters": {"sources": ["hr"]}}), 422, "INVALID_FILTER")
        # ...and known to a caller who can read them (the positive control).
        assert post({"filters": {"sources": ["hr"]}}, HR).status_code == 200
        _error(post({"filters": {"time_range": {"from": "yesterday"}}}), 422, "MALFORMED_EVENT")
        _error(post({"filters": {"as_of": 20240101}}), 422, "MALFORMED_EVENT")
    _error(
        client.post("/v1/ask", json={"question": CAPACITY, "mode": "FASTEST"}, headers=READER), 422, "MALFORMED_EVENT"
    )
    too_far = {"question": CAPACITY, "options": {"max_hops": 99}}
    _error(client.post("/v1/ask", json=too_far, headers=READER), 422, "LIMIT_EXCEEDED")
