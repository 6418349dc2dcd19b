"""Hostile input over HTTP (issue 9, classes 5 and 7): each probe gets a stable 4xx, and a positive control
shows the same endpoint working for well-formed input, so no probe passes by the endpoint being broken.

Real embedded PostgreSQL, Qdrant engine, tantivy and embedding model; the pipeline corpus.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_core.acl import Caller
from kgrag_core.events import ACL_CHANGED, AclChanged
from kgrag_core.handlers.acl_propagator import AclPropagatorHandler
from kgrag_core.ingest import IngestStatus
from kgrag_core.retrieval.hybrid import SearchMode
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.app import KgragApp
from kgrag_runtime.ingest_gateway import EmbeddedIngest
from tests.pipeline.corpus import corpus, doc

VERIFIER = TokenVerifier(key="test-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")


def bearer(sub: str, groups: list[str], scopes: list[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {VERIFIER.issue(sub, groups=groups, scopes=scopes)}"}


ADMIN = bearer("root", [], ["admin"])
INGEST = bearer("connector", [], ["ingest"])
FINANCE = bearer("fay", ["finance"], ["search"])
ZZ = bearer("zed", ["zz"], ["search"])
OUTSIDER = bearer("olga", ["sales"], ["search"])


@pytest.fixture
def client(kg: KgragApp) -> Iterator[TestClient]:
    kg.ingest(corpus())
    with TestClient(create_app(kg, VERIFIER)) as c:
        yield c


def refused(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text


def found(c: TestClient, query: str, headers: dict[str, str]) -> set[str]:
    # BM25 only: a keyword hit means the document holds the words (dense search ranks every document).
    response = c.post("/v1/search", json={"query": query, "mode": "bm25"}, headers=headers)
    assert response.status_code == 200, response.text
    return {h["doc_id"] for h in response.json()["hits"]}


def post_doc(c: TestClient, body: dict[str, Any]) -> Any:
    return c.post("/v1/ingest/documents", json={"title": "Probe", **body}, headers=INGEST)


@pytest.mark.parametrize("doc_id", ["bell\x07id", "tab\tid", " leading", "trailing ", "nul\x00id", "line\u2028sep"])
def test_document_ids_the_docs_refuse_are_refused(client: TestClient, doc_id: str) -> None:
    refused(post_doc(client, {"doc_id": doc_id, "text": "Quokka ledger entry."}), 422, "MALFORMED_EVENT")
    assert found(client, "quokka ledger", ADMIN) == set()  # nothing of it was stored
    # Positive control: the same document with a clean id (slashes allowed) is indexed and found.
    ok = post_doc(client, {"doc_id": "probe/quokka-1", "text": "Quokka ledger entry."})
    assert ok.status_code == 202 and ok.json()["status"] == "INDEXED", ok.text
    assert found(client, "quokka ledger", ADMIN) == {"probe/quokka-1"}


def test_nul_and_lone_surrogates_are_4xx_not_500(client: TestClient) -> None:
    refused(post_doc(client, {"doc_id": "nul-text", "text": "a\x00b"}), 422, "MALFORMED_EVENT")
    b64 = base64.b64encode(b"Wombat\x00 report").decode()
    refused(post_doc(client, {"doc_id": "nul-bytes", "body_b64": b64}), 422, "MALFORMED_EVENT")
    refused(client.post("/v1/entities/resolve", json={"name": "At\x00las"}, headers=ADMIN), 422, "MALFORMED_EVENT")
    refused(client.get("/v1/claims", params={"entity": "At\x00las"}, headers=ADMIN), 422, "MALFORMED_EVENT")
    refused(client.get("/v1/entities/ent_%00x", headers=ADMIN), 422, "MALFORMED_EVENT")
    refused(client.get("/v1/entities/ent_x%00/neighbors", headers=ADMIN), 422, "MALFORMED_EVENT")
    lone = '{"query": "atlas \\ud800"}'  # a JSON escape of an unpaired surrogate
    headers = {**ADMIN, "content-type": "application/json"}
    refused(client.post("/v1/search", content=lone, headers=headers), 422, "MALFORMED_EVENT")
    refused(client.post("/v1/ask", content=lone.replace("query", "question"), headers=headers), 422, "MALFORMED_EVENT")
    refused(client.post("/v1/search", content=b"\xd8\x85not json", headers=headers), 422, "MALFORMED_JSON")
    # Positive controls: the same endpoints answer well-formed requests.
    assert "atlas" in found(client, "atlas routing", ADMIN)
    wombat = post_doc(client, {"doc_id": "wombat", "body_b64": base64.b64encode(b"Wombat report").decode()})
    assert wombat.status_code == 202, wombat.text
    assert client.post("/v1/entities/resolve", json={"name": "Atlas"}, headers=ADMIN).status_code == 200
    assert client.get("/v1/claims", params={"entity": "Atlas"}, headers=ADMIN).status_code == 200
    refused(client.get("/v1/entities/ent_x", headers=ADMIN), 404, "ENTITY_NOT_FOUND")


def test_framework_errors_have_the_error_body_and_allow(client: TestClient) -> None:
    wrong = client.get("/v1/search", headers=ADMIN)
    refused(wrong, 405, "METHOD_NOT_ALLOWED")
    assert wrong.headers["allow"] == "POST"
    refused(client.get("/v1/nothing-here", headers=ADMIN), 404, "NOT_FOUND")
    refused(client.post("/v1/search", json={"query": "atlas", "top_k": 101}, headers=ADMIN), 422, "LIMIT_EXCEEDED")
    assert client.post("/v1/search", json={"query": "atlas", "top_k": 100}, headers=ADMIN).status_code == 200
    # Strict numbers and flags; no undeclared query parameter slips through.
    refused(
        client.post("/v1/ask", json={"question": "atlas?", "evidence_chunks": True}, headers=ADMIN),
        422,
        "MALFORMED_EVENT",
    )
    refused(client.get("/v1/admin/entities/merges", params={"limt": 5}, headers=ADMIN), 422, "MALFORMED_EVENT")
    assert client.get("/v1/admin/entities/merges", params={"limit": 5}, headers=ADMIN).status_code == 200


def test_every_status_an_operation_answers_is_documented(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            documented = set(operation["responses"])
            if path.startswith("/v1/"):
                assert {"401", "403", "422", "503"} <= documented, (method, path)
                assert "$ref" in str(operation["responses"]["422"]), (method, path)  # the error body, not FastAPI's
    assert "404" in spec["paths"]["/v1/entities/{entity_id}"]["get"]["responses"]
    assert "503" in spec["paths"]["/readyz"]["get"]["responses"]


def test_a_smuggled_separator_in_a_group_name_cannot_share_a_class(client: TestClient) -> None:
    smuggled = post_doc(
        client, {"doc_id": "smuggled", "text": "Platypus budget memo.", "acl": {"groups": ["finance\x1fgroup:zz"]}}
    )
    refused(smuggled, 422, "INVALID_PRINCIPAL")
    pair = post_doc(client, {"doc_id": "pair", "text": "Platypus budget memo.", "acl": {"groups": ["finance", "zz"]}})
    assert pair.status_code == 202 and pair.json()["status"] == "INDEXED", pair.text
    alone = post_doc(client, {"doc_id": "alone", "text": "Platypus forecast.", "acl": {"groups": ["finance"]}})
    assert alone.status_code == 202, alone.text
    # Each reader sees their own documents, and only those.
    assert found(client, "platypus budget forecast", FINANCE) == {"pair", "alone"}
    assert found(client, "platypus budget forecast", ZZ) == {"pair"}
    assert found(client, "platypus budget forecast", OUTSIDER) == set()
    assert found(client, "platypus budget forecast", ADMIN) >= {"pair", "alone"}
    assert "smuggled" not in found(client, "platypus budget forecast", ADMIN)  # nothing of it was stored
    # A token naming a smuggled group is no identity at all.
    forged = bearer("mallory", ["finance\x1fgroup:zz"], ["search"])
    refused(client.post("/v1/search", json={"query": "platypus"}, headers=forged), 401, "UNAUTHENTICATED")
    # An ACL change to an impossible name fails closed: the document becomes admin-only.
    change = client.post("/v1/ingest/acl", json={"doc_id": "alone", "acl": {"groups": ["fin\x07"]}}, headers=INGEST)
    refused(change, 422, "INVALID_PRINCIPAL")
    assert found(client, "platypus forecast", FINANCE) == {"pair"}
    assert "alone" in found(client, "platypus forecast", ADMIN)


def test_an_acl_event_with_a_smuggled_name_is_dead_lettered_and_fails_closed(kg: KgragApp) -> None:
    # The handler Kafka's acl-propagator runs (embedded: on the in-process bus), fed an event that did not
    # come through the HTTP edge: one bad event is dead-lettered and its document made admin-only; the
    # next event in the same batch is applied (positive control).
    kg.ingest([doc("memo", "Narwhal memo.", acl={"groups": ["finance"]}), doc("note", "Narwhal note.")])
    ingestion = kg.ingestion
    assert isinstance(ingestion, EmbeddedIngest)
    handler = next(h for h in ingestion.handlers if isinstance(h, AclPropagatorHandler))
    bad = AclChanged(doc_id="memo", acl_principals=["group:finance\x1fgroup:zz"]).model_dump(mode="json")
    good = AclChanged(doc_id="note", acl_principals=["group:zz"]).model_dump(mode="json")
    result = handler.handle(ACL_CHANGED, [("memo", bad), ("note", good)])
    assert [d.error_code for d in result.dead_letters] == ["INVALID_PRINCIPAL"]
    assert [o.status for o in result.outcomes] == [IngestStatus.REJECTED, IngestStatus.ACL_UPDATED]
    finance, zz = Caller(groups=("finance",)), Caller(groups=("zz",))
    hits = {h.doc_id for h in kg.search("narwhal", finance, mode=SearchMode.BM25).hits}
    assert hits == set()  # memo is admin-only now; note moved to zz
    assert {h.doc_id for h in kg.search("narwhal", zz, mode=SearchMode.BM25).hits} == {"note"}
    assert {h.doc_id for h in kg.search("narwhal", Caller(admin=True), mode=SearchMode.BM25).hits} == {"memo", "note"}
