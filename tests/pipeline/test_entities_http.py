"""The entity API over HTTP: reads that follow the token's groups, and reversible resolution administration.

Real embedded PostgreSQL; Northwind documents and records resolved by the pass that follows extraction.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.test_entity_resolution_pipeline import HUB_MIN_DEGREE, ingest_northwind

VERIFIER = TokenVerifier(key="test-key-" + "x" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")


def bearer(sub: str, groups: list[str], scopes: list[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {VERIFIER.issue(sub, groups=groups, scopes=scopes)}"}


ADMIN = bearer("root", [], ["admin"])
ENGINEER = bearer("sam.ortiz", ["engineering"], ["search"])
LEADER = bearer("grace.oneill", ["leadership"], ["search"])
INGEST = bearer("connector", [], ["ingest"])


@pytest.fixture
def settings(tmp_path: Path, pg_dsn: str) -> KgragSettings:
    return KgragSettings(
        data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000, resolution_hub_min_degree=HUB_MIN_DEGREE
    )


@pytest.fixture
def client(kg: KgragApp) -> Iterator[TestClient]:
    with TestClient(create_app(kg, VERIFIER)) as c:
        yield c


@pytest.fixture
def northwind(settings: KgragSettings, embedder: OnnxMiniLmEmbedder, tmp_path: Path) -> Iterator[TestClient]:
    with open_embedded(settings, embedder=embedder) as kg, TestClient(create_app(kg, VERIFIER)) as c:
        ingest_northwind(kg, tmp_path)
        yield c


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def the_id(c: TestClient, name: str, entity_type: str, headers: dict[str, str] = ADMIN) -> str:
    found = ok(c.post("/v1/entities/resolve", json={"name": name, "type": entity_type}, headers=headers))
    assert found["name"] == name and len(found["candidates"]) == 1, found
    assert found["candidates"][0]["type"] == entity_type
    entity_id: str = found["candidates"][0]["entity_id"]
    return entity_id


def edge_keys(entity: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(r["subject"]["name"], r["relation"], r["object"]["name"]) for r in entity["relations"]}


def edge_ids(entity: dict[str, Any], old: str = "", new: str = "") -> set[tuple[str, str, str]]:
    def end(ref: dict[str, str]) -> str:
        return new if ref["entity_id"] == old else ref["entity_id"]

    return {(end(r["subject"]), r["relation"], end(r["object"])) for r in entity["relations"]}


def test_entity_reads_show_what_the_tokens_groups_may_read(northwind: TestClient) -> None:
    c = northwind
    atlas_id = the_id(c, "Atlas", "System", ENGINEER)
    atlas = ok(c.get(f"/v1/entities/{atlas_id}", headers=ENGINEER))
    assert atlas["entity_id"] == atlas_id and atlas["name"] == "Atlas" and atlas["type"] == "System"
    assert "Atlas" in atlas["aliases"]
    owns = [r for r in atlas["relations"] if (r["subject"]["name"], r["relation"]) == ("Routing", "OWNS")]
    assert len(owns) == 1 and owns[0]["evidence_count"] == len(owns[0]["evidence_chunk_ids"]) == 2
    assert {("status", "production"), ("language", "Python")} <= {
        (a["attribute"], a["value"]) for a in atlas["attributes"]
    }
    assert all(a["quote"] and a["doc_id"] and "valid_from" in a for a in atlas["attributes"])
    assert isinstance(atlas["conflicts"], list)
    # Namesakes stay apart: "Atlas" may also be a mention of another type; the type narrows it.
    every_atlas = ok(c.post("/v1/entities/resolve", json={"name": "atlas"}, headers=ENGINEER))
    assert atlas_id in [x["entity_id"] for x in every_atlas["candidates"]]
    assert every_atlas["ambiguous"] is (len(every_atlas["candidates"]) > 1)

    # The Osprey Integration team exists only in a leadership-only record.
    team_id = the_id(c, "Osprey Integration", "Team", LEADER)
    assert ok(c.get(f"/v1/entities/{team_id}", headers=LEADER))["name"] == "Osprey Integration"
    hidden = c.get(f"/v1/entities/{team_id}", headers=ENGINEER)
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "ENTITY_NOT_FOUND"
    assert c.get(f"/v1/entities/{team_id}/neighbors", headers=ENGINEER).status_code == 404
    assert ok(c.post("/v1/entities/resolve", json={"name": "Osprey Integration"}, headers=ENGINEER))["candidates"] == []
    assert ok(c.post("/v1/entities/resolve", json={"name": "Baltic Haulage"}, headers=ENGINEER))["candidates"] == []
    assert ok(c.post("/v1/entities/resolve", json={"name": "Baltic Haulage"}, headers=LEADER))["candidates"]
    as_leader = ok(c.get(f"/v1/entities/{atlas_id}", headers=LEADER))
    assert edge_keys(as_leader) - edge_keys(atlas) == {("Osprey Integration", "OWNS", "Atlas")}
    assert as_leader["degree"] == atlas["degree"] + 1

    # Neighbours: a relation filter, two hops that stop at hubs and say so.
    only_owns = ok(c.get(f"/v1/entities/{atlas_id}/neighbors", params={"relation": "OWNS"}, headers=LEADER))
    assert only_owns["entity"]["entity_id"] == atlas_id
    assert {e["subject"]["name"] for e in only_owns["edges"]} == {"Routing", "Osprey Integration"}
    assert all(e["relation"] == "OWNS" and e["depth"] == 1 for e in only_owns["edges"])
    two = ok(c.get(f"/v1/entities/{atlas_id}/neighbors", params={"depth": 2, "limit": 200}, headers=ENGINEER))
    assert any(t.startswith("hub not passed: ") for t in two["truncated"])
    assert {e["depth"] for e in two["edges"]} == {1, 2}
    capped = ok(c.get(f"/v1/entities/{atlas_id}/neighbors", params={"depth": 2, "limit": 2}, headers=ENGINEER))
    assert len(capped["edges"]) == 2 and "limit" in capped["truncated"]

    # Deleting the restricted record takes its edge away from every reader.
    deleted = c.delete("/v1/ingest/documents/record-team-osprey-integration", headers=INGEST)
    assert deleted.status_code == 200, deleted.text
    assert edge_keys(ok(c.get(f"/v1/entities/{atlas_id}", headers=LEADER))) == edge_keys(atlas)
    assert c.get(f"/v1/entities/{team_id}", headers=LEADER).status_code == 404


def test_merge_split_review_and_a_resolution_pass_over_http(northwind: TestClient) -> None:
    c = northwind
    atlas_id, harbor_id = the_id(c, "Atlas", "System"), the_id(c, "Harbor", "System")
    before = [ok(c.get(f"/v1/entities/{i}", headers=ENGINEER)) for i in (atlas_id, harbor_id)]
    before_around = ok(c.get(f"/v1/entities/{atlas_id}/neighbors", params={"depth": 2}, headers=ENGINEER))

    merged = ok(
        c.post(
            "/v1/admin/entities/merge",
            json={"entity_ids": [harbor_id, atlas_id], "canonical_id": atlas_id, "reason": "test"},
            headers=ADMIN,
        )
    )
    assert merged["canonical_id"] == atlas_id and merged["members"] == [harbor_id] and not merged["reverted"]
    assert merged["basis"][0]["rule"] == "hand merge: test"
    joined = ok(c.get(f"/v1/entities/{harbor_id}", headers=ENGINEER))
    assert joined["entity_id"] == atlas_id and {"Atlas", "Harbor"} <= set(joined["aliases"])
    # The merged entity has both entities' edges, Harbor's now ending at Atlas.
    assert edge_ids(before[0], harbor_id, atlas_id) | edge_ids(before[1], harbor_id, atlas_id) == edge_ids(joined)
    log = ok(c.get("/v1/admin/entities/merges", headers=ADMIN))["merges"]
    assert log[0]["merge_id"] == merged["merge_id"] and log[0]["decided_by"] == "override"

    split = ok(c.post("/v1/admin/entities/split", json={"merge_id": merged["merge_id"]}, headers=ADMIN))
    assert split["reverted"] is True
    assert [ok(c.get(f"/v1/entities/{i}", headers=ENGINEER)) for i in (atlas_id, harbor_id)] == before
    around = ok(c.get(f"/v1/entities/{atlas_id}/neighbors", params={"depth": 2}, headers=ENGINEER))
    assert around == before_around
    assert ok(c.get("/v1/admin/entities/merges", params={"limit": 1}, headers=ADMIN))["merges"][0]["reverted"] is True

    # The review queue: "different" takes a pair off it; "same" merges it, reversibly.
    queue = ok(c.get("/v1/admin/entities/review-queue", headers=ADMIN))["pairs"]
    assert len(queue) >= 2, "premise: resolution left pairs between its thresholds"
    assert all(p["kind"] == "review" for p in queue)
    assert [p["score"] for p in queue] == sorted((p["score"] for p in queue), reverse=True)
    first, second = queue[0], queue[1]
    kept_apart = ok(
        c.post("/v1/admin/entities/review", json={"a": first["a"], "b": first["b"], "same": False}, headers=ADMIN)
    )
    assert kept_apart == {"a": first["a"], "b": first["b"], "same": False, "merge": None}
    pending = {(p["a"], p["b"]) for p in ok(c.get("/v1/admin/entities/review-queue", headers=ADMIN))["pairs"]}
    assert (first["a"], first["b"]) not in pending and (second["a"], second["b"]) in pending
    same = ok(
        c.post("/v1/admin/entities/review", json={"a": second["a"], "b": second["b"], "same": True}, headers=ADMIN)
    )
    assert same["merge"] is not None
    one = ok(c.get(f"/v1/entities/{second['a']}", headers=ADMIN))
    assert one == ok(c.get(f"/v1/entities/{second['b']}", headers=ADMIN))
    assert {second["a"], second["b"]} <= set(one["members"])
    ok(c.post("/v1/admin/entities/split", json={"merge_id": same["merge"]["merge_id"]}, headers=ADMIN))
    apart = ok(c.get(f"/v1/entities/{second['a']}", headers=ADMIN))
    assert second["b"] not in apart["members"]

    # A pass now: it reports what it did, and the log grows by exactly the merges it reports.
    logged = len(ok(c.get("/v1/admin/entities/merges", params={"limit": 1000}, headers=ADMIN))["merges"])
    started = c.post("/v1/admin/entities/resolution", headers=ADMIN)
    assert started.status_code == 202, started.text
    run_id = started.json()["run_id"]
    assert started.headers["location"] == f"/v1/admin/entities/resolution/{run_id}"
    deadline = time.monotonic() + 60
    while (status := ok(c.get(f"/v1/admin/entities/resolution/{run_id}", headers=ADMIN)))["status"] == "running":
        assert time.monotonic() < deadline, "the resolution run did not finish within 60 s"
        time.sleep(0.05)
    assert status["status"] == "succeeded", status
    report = status["result"]
    assert set(report) >= {"profiles", "compared_pairs", "merges", "review", "refused", "hubs"}
    assert report["profiles"] > 0 and report["hubs"] >= 1
    after = ok(c.get("/v1/admin/entities/merges", params={"limit": 1000}, headers=ADMIN))["merges"]
    assert len(after) == logged + report["merges"]


def test_tokens_scopes_unknown_ids_and_bad_input(client: TestClient) -> None:
    reads = [
        ("GET", "/v1/entities/ent_x", None),
        ("GET", "/v1/entities/ent_x/neighbors", None),
        ("POST", "/v1/entities/resolve", {"name": "Atlas"}),
    ]
    admin = [
        ("POST", "/v1/admin/entities/merge", {"entity_ids": ["ent_a", "ent_b"], "reason": "r"}),
        ("POST", "/v1/admin/entities/split", {"merge_id": "mrg_x"}),
        ("POST", "/v1/admin/entities/split-mentions", {"entity_id": "ent_x", "doc_ids": ["d"], "reason": "r"}),
        ("GET", "/v1/admin/entities/merges", None),
        ("GET", "/v1/admin/entities/review-queue", None),
        ("POST", "/v1/admin/entities/review", {"a": "ent_a", "b": "ent_b", "same": True}),
        ("POST", "/v1/admin/entities/resolution", None),
    ]
    ask_only = bearer("x", ["engineering"], ["ask"])
    for method, path, body in reads + admin:
        anonymous = client.request(method, path, json=body)
        assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "UNAUTHENTICATED", path
        refused = client.request(method, path, json=body, headers=ask_only)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN", path
    for method, path, body in admin:
        assert client.request(method, path, json=body, headers=ENGINEER).status_code == 403, path

    for method, path, body in [
        ("GET", "/v1/entities/ent_nope", None),
        ("GET", "/v1/entities/ent_nope/neighbors", None),
        ("POST", "/v1/admin/entities/split", {"merge_id": "mrg_nope"}),
        ("POST", "/v1/admin/entities/split-mentions", {"entity_id": "ent_nope", "doc_ids": ["d"], "reason": "r"}),
        ("POST", "/v1/admin/entities/review", {"a": "ent_a", "b": "ent_b", "same": False}),
        ("POST", "/v1/admin/entities/merge", {"entity_ids": ["ent_a", "ent_b"], "reason": "typo"}),
    ]:
        missing = client.request(method, path, json=body, headers=ADMIN)
        assert missing.status_code == 404, (path, missing.text)
        assert missing.json()["error"]["code"] == "ENTITY_NOT_FOUND" and missing.json()["error"]["hint"]
    assert ok(client.get("/v1/admin/entities/merges", headers=ADMIN)) == {"merges": []}  # the typo logged nothing
    assert ok(client.post("/v1/entities/resolve", json={"name": "Atlas"}, headers=ENGINEER)) == {
        "name": "Atlas",
        "candidates": [],
        "ambiguous": False,
    }

    for params in ({"depth": 9}, {"depth": 0}, {"limit": 0}, {"limit": 5000}):
        # The depth and size bounds are checked before the entity is looked up.
        bounded = client.get("/v1/entities/ent_nope/neighbors", params=params, headers=ADMIN)
        assert bounded.status_code == 422 and bounded.json()["error"]["code"] == "LIMIT_EXCEEDED", params
    for path, body in [
        ("/v1/entities/resolve", {"name": ""}),
        ("/v1/entities/resolve", {"name": "Atlas", "tenant": "x"}),
        ("/v1/admin/entities/merge", {"entity_ids": ["ent_a"], "reason": "r"}),
        ("/v1/admin/entities/merge", {"entity_ids": ["ent_a", "ent_b"]}),
        ("/v1/admin/entities/review", {"a": "ent_a", "b": "ent_b"}),
        ("/v1/admin/entities/split", {}),
        ("/v1/admin/entities/split-mentions", {"entity_id": "ent_a", "doc_ids": [], "reason": "r"}),
        ("/v1/admin/entities/split-mentions", {"entity_id": "ent_a", "doc_ids": ["d", "d"], "reason": "r"}),
        ("/v1/admin/entities/split-mentions", {"entity_id": "ent_a", "doc_ids": ["d"]}),
    ]:
        invalid = client.post(path, json=body, headers=ADMIN)
        assert invalid.status_code == 422 and invalid.json()["error"]["code"] == "MALFORMED_EVENT", (path, body)
    assert client.get("/v1/entities/ent_x/neighbors", params={"depth": "two"}, headers=ADMIN).status_code == 422


def test_openapi_lists_the_entity_paths(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert "get" in paths["/v1/entities/{entity_id}"]
    neighbors = paths["/v1/entities/{entity_id}/neighbors"]["get"]
    assert {"relation", "depth", "limit"} <= {p["name"] for p in neighbors["parameters"]}
    assert "post" in paths["/v1/entities/resolve"]
    for path in ("merge", "split", "split-mentions", "review", "resolution"):
        assert "post" in paths[f"/v1/admin/entities/{path}"], path
    for path in ("merges", "review-queue"):
        assert "get" in paths[f"/v1/admin/entities/{path}"], path
    schemas = spec["components"]["schemas"]
    assert {"entity_ids", "canonical_id", "reason"} <= set(schemas["EntityMergeRequest"]["properties"])
    assert set(schemas["EntityMergeRequest"]["required"]) == {"entity_ids", "reason"}
    assert {"name", "type"} <= set(schemas["EntityResolveRequest"]["properties"])
    assert set(schemas["EntityReviewRequest"]["required"]) == {"a", "b", "same"}
