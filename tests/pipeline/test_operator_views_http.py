"""Operator views over HTTP (docs/security.md, section 11). `kgrag documents`, `status` and `entities merges/review`
show everything to whoever runs the CLI on the index's machine; over HTTP the same data is admin-only, and what is
open without a token (/healthz, /readyz, /metrics) names no document. Every path of the OpenAPI spec is classified
here, so a new route cannot appear without a decision about who may call it. Real embedded PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_core.acl import AclClass, Caller
from kgrag_core.documents import SourceDocument
from kgrag_core.extraction.records import RerunScope
from kgrag_core.extraction.records_text import RECORD_MEDIA_TYPE, render_record
from kgrag_core.graph.model import DecisionKind, PairDecision
from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from tests.pipeline.test_entities_http import ADMIN, INGEST, LEADER, VERIFIER, bearer

SECRET_TITLE = "Osprey acquisition shortlist"
READER_TOKENS = {
    "reader": bearer("sam.ortiz", ["engineering"], ["search", "ask"]),
    "reader in the document's group": LEADER,
    "ingest": INGEST,
}
# Every path and method the API serves, by who may call it. Reader routes filter by the token's groups
# (tested in test_entities_http, test_http_api); admin routes refuse any token without the admin scope.
OPEN = {("get", "/healthz"), ("get", "/readyz"), ("get", "/metrics")}
READER = {
    ("post", "/v1/search"),
    ("post", "/v1/ask"),
    ("get", "/v1/claims"),
    ("get", "/v1/entities/{entity_id}"),
    ("get", "/v1/entities/{entity_id}/neighbors"),
    ("post", "/v1/entities/resolve"),
    ("get", "/v1/traces/{trace_id}"),  # the caller's own traces only: tested in test_traces_http
    ("post", "/v1/feedback"),
    ("get", "/v1/documents/{doc_id}"),  # the web app's source view: readers of the document only
    ("get", "/v1/communities"),  # the caller's view of each: tested in test_communities_pipeline
    ("get", "/v1/communities/{community_id}"),
}
INGESTION = {
    ("post", "/v1/ingest/documents"),
    ("delete", "/v1/ingest/documents/{doc_id}"),
    ("get", "/v1/ingest/documents/{doc_id}/status"),  # ingest scope: tested in test_http_api
    ("post", "/v1/ingest/acl"),
}
ADMIN_ONLY = {
    ("get", "/v1/admin/ontology"),
    ("put", "/v1/admin/ontology"),
    ("post", "/v1/admin/extraction/rerun"),
    ("get", "/v1/admin/extraction/runs/{run_id}"),
    ("post", "/v1/admin/extraction/runs/{run_id}/resume"),
    ("post", "/v1/admin/entities/merge"),
    ("post", "/v1/admin/entities/split"),
    ("post", "/v1/admin/entities/split-mentions"),
    ("get", "/v1/admin/entities/merges"),
    ("get", "/v1/admin/entities/review-queue"),
    ("post", "/v1/admin/entities/review"),
    ("post", "/v1/admin/entities/resolution"),
    ("get", "/v1/admin/entities/resolution/{run_id}"),
    ("get", "/v1/admin/curation"),
    ("post", "/v1/admin/curation/feedback/{feedback_id}/resolve"),
    ("get", "/v1/admin/eval"),
    ("post", "/v1/admin/eval/run"),
    ("get", "/v1/admin/eval/{run_id}"),
    ("post", "/v1/admin/eval/{run_id}/baseline"),
    ("get", "/v1/admin/ingest/errors"),
    ("get", "/v1/admin/deletions"),
    ("get", "/v1/admin/dead-letters"),
    ("post", "/v1/admin/communities/rebuild"),
    ("get", "/v1/admin/communities/rebuild/{run_id}"),
}


# A valid body for each admin route that takes one, so the refusal is about the token, not the body.
BODIES: dict[tuple[str, str], Any] = {
    ("put", "/v1/admin/ontology"): {"version": "x"},
    ("post", "/v1/admin/extraction/rerun"): {"extractor_version": "2", "dry_run": True},
    ("post", "/v1/admin/entities/merge"): {"entity_ids": ["{entity}", "ent_b"], "reason": "probe"},
    ("post", "/v1/admin/entities/split"): {"merge_id": "{merge_id}"},
    ("post", "/v1/admin/entities/split-mentions"): {
        "entity_id": "{entity}",
        "doc_ids": ["record-osprey-a"],
        "reason": "probe",
    },
    ("post", "/v1/admin/entities/review"): {"a": "{entity}", "b": "ent_b", "same": True},
    ("post", "/v1/admin/curation/feedback/{feedback_id}/resolve"): {"resolution": "probe"},
    ("post", "/v1/admin/eval/run"): {"suite": "northwind-smoke"},
    ("post", "/v1/admin/communities/rebuild"): {"dry_run": True},
}


def _restricted_record(doc_id: str, name: str) -> SourceDocument:
    body = render_record("company", {"name": name, "business": "Acquisition target"}).encode()
    acl = AclClass.of(["group:leadership"])
    uri = f"records://{doc_id}"
    return SourceDocument(doc_id, "records", uri, SECRET_TITLE, body, acl, media_type=RECORD_MEDIA_TYPE)


@pytest.fixture
def operated(kg: KgragApp) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """A restricted corpus with something in every operator view: a merge, a queued pair, an extraction run."""
    names = {"record-osprey-a": "Larkspur Holdings", "record-osprey-b": "Quillmark"}
    kg.ingest([_restricted_record(doc_id, name) for doc_id, name in names.items()])
    graph = kg.require_graph()
    ids = sorted(c["entity_id"] for n in names.values() for c in graph.resolve(n, Caller(admin=True))["candidates"])
    assert len(ids) == 2
    merge = graph.merge(ids, reason="one company")
    graph.split(str(merge["merge_id"]))
    graph.store.queue_for_review([PairDecision(ids[0], ids[1], DecisionKind.REVIEW, 0.7, (), "test: review")])
    run = kg.require_extraction().rerun(RerunScope(doc_ids=("record-osprey-a",)), "operator-view", dry_run=False)
    with TestClient(create_app(kg, VERIFIER)) as client:
        yield client, {"entity": ids[0], "merge_id": str(merge["merge_id"]), "run_id": str(run["run_id"])}


def test_every_route_is_classified(operated: tuple[TestClient, dict[str, str]]) -> None:
    client, _ = operated
    spec = client.get("/openapi.json").json()
    served = {(method, path) for path, ops in spec["paths"].items() for method in ops}
    assert served == OPEN | READER | INGESTION | ADMIN_ONLY
    assert all(path.startswith("/v1/admin/") for _, path in ADMIN_ONLY)


def test_operator_views_refuse_every_token_without_the_admin_scope(operated: tuple[TestClient, dict[str, str]]) -> None:
    client, known = operated
    for method, template in sorted(ADMIN_ONLY):
        path = template.replace("{run_id}", known["run_id"])
        raw = json.dumps(BODIES.get((method, template)))
        body = json.loads(raw.replace("{entity}", known["entity"]).replace("{merge_id}", known["merge_id"]))
        for who, headers in READER_TOKENS.items():
            refused = client.request(method.upper(), path, json=body, headers=headers)
            assert refused.status_code == 403, (who, method, path, refused.text)
            assert refused.json()["error"]["code"] == "FORBIDDEN"
            assert SECRET_TITLE not in refused.text and known["run_id"] not in refused.text, (who, path)
    assert len(client.get("/v1/admin/entities/merges", headers=ADMIN).json()["merges"]) == 1  # nothing merged


def test_the_admin_token_gets_the_operator_views(operated: tuple[TestClient, dict[str, str]]) -> None:
    """Positive control: the data the refused tokens were denied is there, and restricted."""
    client, known = operated
    merges = client.get("/v1/admin/entities/merges", headers=ADMIN)
    assert merges.status_code == 200
    [merge] = merges.json()["merges"]
    assert merge["merge_id"] == known["merge_id"] and merge["reverted"] is True
    queue = client.get("/v1/admin/entities/review-queue", headers=ADMIN)
    assert queue.status_code == 200 and known["entity"] in {p["a"] for p in queue.json()["pairs"]}
    run = client.get(f"/v1/admin/extraction/runs/{known['run_id']}", headers=ADMIN)
    assert run.status_code == 200 and run.json()["run_id"] == known["run_id"]
    assert client.get("/v1/admin/ontology", headers=ADMIN).status_code == 200
    curation = client.get("/v1/admin/curation", headers=ADMIN)
    assert curation.status_code == 200 and known["entity"] in {p["a"] for p in curation.json()["merge_candidates"]}


def test_what_needs_no_token_names_no_document(operated: tuple[TestClient, dict[str, str]]) -> None:
    client, known = operated
    client.post("/v1/search", json={"query": "Quillmark"}, headers=ADMIN)  # so /metrics has a route to count
    for path in ("/healthz", "/readyz", "/metrics"):
        response = client.get(path)
        assert response.status_code == 200, path
        for secret in (SECRET_TITLE, "Quillmark", "record-osprey", known["entity"], known["merge_id"]):
            assert secret not in response.text, (path, secret)
    assert json.loads(client.get("/readyz").text) == {"ok": True}
    hits: Any = client.post("/v1/search", json={"query": "Quillmark"}, headers=ADMIN).json()["hits"]
    assert hits and all(h["title"] == SECRET_TITLE for h in hits)  # positive control: the title exists
