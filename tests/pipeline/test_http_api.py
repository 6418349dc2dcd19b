"""The HTTP API: identity only from a verified token, scopes, errors, ingestion change events."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.app import KgragApp
from tests.pipeline.corpus import ATLAS, corpus

VERIFIER = TokenVerifier(key="test-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")


def bearer(sub: str, groups: list[str], scopes: list[str], verifier: TokenVerifier = VERIFIER) -> dict[str, str]:
    return {"Authorization": f"Bearer {verifier.issue(sub, groups=groups, scopes=scopes)}"}


@pytest.fixture
def client(kg: KgragApp) -> Iterator[TestClient]:
    kg.ingest(corpus())
    with TestClient(create_app(kg, VERIFIER)) as c:
        yield c


def test_missing_or_bad_credentials_are_401(client: TestClient) -> None:
    assert client.post("/v1/search", json={"query": "atlas"}).status_code == 401
    forged = TokenVerifier(key="another-key-" + "y" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")
    response = client.post("/v1/search", json={"query": "atlas"}, headers=bearer("eve", ["hr"], ["search"], forged))
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
    assert response.headers["www-authenticate"] == "Bearer"


def test_identity_comes_from_the_token_not_the_body(client: TestClient) -> None:
    engineer = bearer("sam", ["engineering"], ["search"])
    hits = client.post("/v1/search", json={"query": "142,000 euros compensation"}, headers=engineer).json()["hits"]
    assert {h["doc_id"] for h in hits} <= {"atlas", "harbor"}
    # Trying to claim groups in the body is rejected outright, not honoured.
    sneaky = client.post("/v1/search", json={"query": "salary", "groups": ["hr"]}, headers=engineer)
    assert sneaky.status_code == 422
    hr = bearer("ann", ["hr"], ["search"])
    hits = client.post("/v1/search", json={"query": "142,000 euros compensation"}, headers=hr).json()["hits"]
    assert hits[0]["doc_id"] == "salary"


def test_scopes_are_enforced(client: TestClient) -> None:
    reader = bearer("sam", [], ["search"])
    response = client.post("/v1/ingest/documents", json={"doc_id": "x", "title": "x", "text": "hi"}, headers=reader)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert client.delete("/v1/ingest/documents/atlas", headers=reader).status_code == 403


def test_ask_returns_cited_answer(client: TestClient) -> None:
    body = client.post(
        "/v1/ask", json={"question": "Who is the on-call owner of Atlas?"}, headers=bearer("sam", [], ["ask"])
    ).json()
    assert body["answered"] is True
    assert body["citations"][0]["doc_id"] == "atlas"


def test_ingest_and_delete_change_events(client: TestClient) -> None:
    connector = bearer("confluence-connector", [], ["ingest"])
    admin = bearer("root", [], ["admin"])
    created = client.post(
        "/v1/ingest/documents",
        headers=connector,
        json={
            "doc_id": "wiki/lisbon",
            "source": "confluence",
            "title": "Lisbon office",
            "text": "# Lisbon office\n\nThe Lisbon office opened in 2025 with 40 desks.",
            "acl": {"groups": ["engineering"]},
        },
    )
    assert created.status_code == 202
    assert created.json()["status"] == "INDEXED"
    hits = client.post("/v1/search", json={"query": "Lisbon office desks"}, headers=admin).json()["hits"]
    assert hits[0]["doc_id"] == "wiki/lisbon"
    bad = client.post(
        "/v1/ingest/documents",
        headers=connector,
        json={"doc_id": "bin", "title": "Binary", "body_b64": base64.b64encode(b"\xff\xfe").decode()},
    )
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "INVALID_UTF8"
    unchanged = client.post(
        "/v1/ingest/documents",
        headers=connector,
        json={
            "doc_id": "atlas",
            "source": "test",
            "uri": "test://atlas",
            "title": "Atlas routing engine",
            "text": ATLAS,
        },
    )
    assert unchanged.json()["status"] == "UNCHANGED"
    deleted = client.delete("/v1/ingest/documents/wiki/lisbon", headers=connector)
    assert deleted.status_code == 200
    assert client.delete("/v1/ingest/documents/wiki/lisbon", headers=connector).status_code == 404
    hits = client.post("/v1/search", json={"query": "Lisbon office desks"}, headers=admin).json()["hits"]
    assert all(h["doc_id"] != "wiki/lisbon" for h in hits)


def test_openapi_and_health(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/v1/search", "/v1/ask", "/v1/ingest/documents", "/v1/ingest/acl", "/healthz", "/readyz"} <= set(
        spec["paths"]
    )
    assert client.get("/healthz").json()["status"] == "ok"
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"ok": True}  # no counts without a token
    assert "kgrag_http_requests" in client.get("/metrics").text


def test_limits_and_unexpected_input_get_stable_codes(client: TestClient) -> None:
    reader = bearer("sam", [], ["search"])
    over = client.post("/v1/search", json={"query": "atlas", "top_k": 1000}, headers=reader)
    assert over.status_code == 422 and over.json()["error"]["code"] == "LIMIT_EXCEEDED"
    long = client.post("/v1/search", json={"query": "atlas " * 2000}, headers=reader)
    assert long.json()["error"]["code"] == "LIMIT_EXCEEDED"
    empty = client.post("/v1/search", json={"query": "  "}, headers=reader)
    assert empty.json()["error"]["code"] == "INVALID_QUERY"


def test_naive_dates_and_explicit_null_acl(client: TestClient) -> None:
    connector = bearer("c", [], ["ingest"])
    doc = {
        "doc_id": "memo",
        "title": "Memo",
        "text": "# Memo\n\nPallets are due on Friday.",
        "modified_at": "2025-06-01",
    }
    assert client.post("/v1/ingest/documents", headers=connector, json=doc).json()["status"] == "INDEXED"
    assert client.post("/v1/ingest/documents", headers=connector, json=doc).json()["status"] == "UNCHANGED"
    private = {**doc, "doc_id": "memo-null", "acl": None}
    client.post("/v1/ingest/documents", headers=connector, json=private)
    hits = client.post(
        "/v1/search", json={"query": "pallets due Friday"}, headers=bearer("sam", ["engineering"], ["search"])
    ).json()["hits"]
    assert {h["doc_id"] for h in hits} >= {"memo"} and "memo-null" not in {h["doc_id"] for h in hits}


def test_a_documents_outcome_is_queryable_by_id_for_ingest_callers_only(client: TestClient) -> None:
    ingest = bearer("connector", [], ["ingest"])
    bad = {"doc_id": "latin1-page", "title": "Bad bytes", "body_b64": base64.b64encode(b"caf\xe9").decode()}
    assert client.post("/v1/ingest/documents", json=bad, headers=ingest).status_code == 422
    rejected = client.get("/v1/ingest/documents/latin1-page/status", headers=ingest)
    assert rejected.status_code == 200, rejected.json()
    assert rejected.json()["status"] == "REJECTED"
    assert rejected.json()["outcomes"][0]["error_code"] == "INVALID_UTF8"
    # Positive control: an indexed document reads INDEXED, and then DELETED after its deletion.
    assert client.get("/v1/ingest/documents/atlas/status", headers=ingest).json()["status"] == "INDEXED"
    assert client.delete("/v1/ingest/documents/atlas", headers=ingest).status_code == 200
    after = client.get("/v1/ingest/documents/atlas/status", headers=ingest).json()
    assert [o["status"] for o in after["outcomes"][:2]] == ["DELETED", "INDEXED"]
    never = client.get("/v1/ingest/documents/never-seen/status", headers=ingest)
    assert never.status_code == 404 and never.json()["error"]["code"] == "DOCUMENT_NOT_FOUND"
    # A reader learns nothing about which documents exist.
    reader = bearer("sam", ["engineering"], ["search"])
    assert client.get("/v1/ingest/documents/salary/status", headers=reader).status_code == 403
