"""Adversarial probes of the entity API over HTTP (issue 9, classes 1-3): an outsider's token against records
of which one is restricted, every probe with a reader of the restricted record as its positive control.

Real embedded PostgreSQL, records mapped by tier 1 (no model): two person records share an e-mail (a public
one and an HR-only one that also carries a user id), and a team only an HR-only record names.
"""

from __future__ import annotations

import json
import secrets
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_core.extraction.identity import entity_id
from kgrag_query_api.api import create_app
from kgrag_query_api.auth import TokenVerifier
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import adopt_entity_id_key, open_embedded

VERIFIER = TokenVerifier(key="test-key-" + "y" * 32, issuer="kgrag-test", audience="kgrag", algorithm="HS256")


def bearer(sub: str, groups: list[str], scopes: list[str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {VERIFIER.issue(sub, groups=groups, scopes=scopes)}"}


OUTSIDER = bearer("sam.ortiz", ["engineering"], ["search"])
READER = bearer("hana.hr", ["hr"], ["search"])
ADMIN = bearer("root", [], ["admin"])

SECRET_NAME, SECRET_USER, EMAIL = "Jordan Blake", "u-secret-77", "jb@northwind.example"
RECORDS = [
    {
        "id": "record-person-secret",
        "title": "Person (HR)",
        "source": "records",
        "acl": {"groups": ["hr"]},
        "record": {"type": "person", "fields": {"name": SECRET_NAME, "email": EMAIL, "user_id": SECRET_USER}},
    },
    {
        "id": "record-person-public",
        "title": "Person",
        "source": "records",
        "record": {"type": "person", "fields": {"name": "J. Blake", "email": EMAIL, "role": "Planner"}},
    },
    {
        "id": "record-team-secret",
        "title": "Team (HR)",
        "source": "records",
        "acl": {"groups": ["hr"]},
        "record": {"type": "team", "fields": {"name": "Osprey Restructuring", "lead": "Jordan Blake"}},
    },
]


def person(doc_id: str, name: str, team: str, *, groups: list[str] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": doc_id,
        "title": "Person",
        "source": "records",
        "record": {"type": "person", "fields": {"name": name, "email": f"{doc_id}@northwind.example", "team": team}},
    }
    if groups is not None:
        record["acl"] = {"groups": groups}
    return record


# Team Falcon: one public member, three HR-only ones. With a hub threshold of 3 it is a hub by all its edges.
HUB_RECORDS = [
    person("p-public", "Avery Public", "Falcon"),
    *(person(f"p-secret-{i}", f"Secret Member {i}", "Falcon", groups=["hr"]) for i in range(3)),
]


@contextmanager
def serving(
    tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder, records: list[dict[str, Any]]
) -> Iterator[TestClient]:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    settings = KgragSettings(
        data_dir=tmp_path / "index",
        pg_dsn=pg_dsn,
        max_document_bytes=20_000,
        resolution_hub_min_degree=3,
        # Wide graph budgets: these probes are about what a walk shows, and a loaded machine must not cut it
        # short (a degraded search has no traversal to inspect).
        graph_expansion_budget_s=10.0,
        graph_timeout_s=30.0,
    )
    with open_embedded(settings, embedder=embedder) as kg, TestClient(create_app(kg, VERIFIER)) as c:
        outcomes = kg.ingest(list(iter_path(path)))
        assert all(o.error_code is None for o in outcomes), [o.as_dict() for o in outcomes]
        yield c


@pytest.fixture
def client(tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder) -> Iterator[TestClient]:
    with serving(tmp_path, pg_dsn, embedder, RECORDS) as c:
        yield c


def resolve(c: TestClient, name: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    response = c.post("/v1/entities/resolve", json={"name": name}, headers=headers)
    assert response.status_code == 200, response.text
    candidates: list[dict[str, Any]] = response.json()["candidates"]
    return candidates


def test_an_entity_only_restricted_evidence_names_is_a_404_like_an_unknown_id(client: TestClient) -> None:
    c = client
    [team] = [t for t in resolve(c, "Osprey Restructuring", READER) if t["type"] == "Team"]
    team_id = team["entity_id"]
    assert c.get(f"/v1/entities/{team_id}", headers=READER).status_code == 200  # positive control
    assert resolve(c, "Osprey Restructuring", OUTSIDER) == []
    unknown_id = "ent_" + secrets.token_hex(10)  # the same shape as a real id
    for suffix in ("", "/neighbors"):
        hidden = c.get(f"/v1/entities/{team_id}{suffix}", headers=OUTSIDER)
        unknown = c.get(f"/v1/entities/{unknown_id}{suffix}", headers=OUTSIDER)
        assert hidden.status_code == unknown.status_code == 404
        assert hidden.text.replace(team_id, "ID") == unknown.text.replace(unknown_id, "ID")
        assert dict(hidden.headers) == dict(unknown.headers)
    # Timing: both go through the same queries and stop at the same check. Alternate the two requests and
    # compare medians (printed for the report); a gap would have to be far above request noise to count.
    took: dict[str, list[float]] = {"hidden": [], "unknown": []}
    for _ in range(60):
        for label, entity in (("hidden", team_id), ("unknown", unknown_id)):
            started = time.perf_counter()
            assert c.get(f"/v1/entities/{entity}", headers=OUTSIDER).status_code == 404
            took[label].append(time.perf_counter() - started)
    hidden_ms, unknown_ms = (statistics.median(took[k]) * 1000 for k in ("hidden", "unknown"))
    print(f"404 medians: restricted-only entity {hidden_ms:.2f} ms, unknown id {unknown_ms:.2f} ms")
    assert abs(hidden_ms - unknown_ms) < max(hidden_ms, unknown_ms) * 0.5 + 1.0


def test_records_sharing_an_email_show_the_outsider_only_the_public_record(client: TestClient) -> None:
    c = client
    [public] = resolve(c, "J. Blake", OUTSIDER)
    assert (public["name"], public["type"], public["strong_ids"]) == ("J. Blake", "Person", [["email", EMAIL]])
    shown = c.get(f"/v1/entities/{public['entity_id']}", headers=OUTSIDER)
    assert shown.status_code == 200
    for text in (json.dumps(public), shown.text):
        assert SECRET_NAME not in text and SECRET_USER not in text
    assert resolve(c, SECRET_NAME, OUTSIDER) == []  # the restricted name finds nothing
    # Positive control: the HR reader resolves the restricted name to the same person, with its user id.
    [insider] = resolve(c, SECRET_NAME, READER)
    assert insider["entity_id"] == public["entity_id"] and insider["name"] == SECRET_NAME
    assert ["user_id", SECRET_USER] in insider["strong_ids"]
    admin = c.get(f"/v1/entities/{public['entity_id']}", headers=ADMIN)
    assert admin.status_code == 200 and SECRET_USER in admin.text


# Dana Okafor (public record, user id) and Dana Lee (public record, e-mail) are one person only by an HR record
# that carries both the e-mail and the user id: resolution merges them on the shared user id.
MERGE_RECORDS = [
    {"id": "p-okafor", "title": "Person", "source": "records",
     "record": {"type": "person", "fields": {"name": "Dana Okafor", "user_id": "dana.okafor"}}},
    {"id": "p-lee", "title": "Person", "source": "records",
     "record": {"type": "person", "fields": {"name": "Dana Lee", "email": "dana.lee@northwind.example"}}},
    {"id": "p-lee-hr", "title": "Person (HR)", "source": "records", "acl": {"groups": ["hr"]},
     "record": {"type": "person", "fields": {"name": "Dana Lee", "email": "dana.lee@northwind.example",
                                            "user_id": "dana.okafor"}}},
]  # fmt: skip


def test_a_merge_only_restricted_evidence_supports_is_not_shown_to_an_outsider(
    tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder
) -> None:
    with serving(tmp_path, pg_dsn, embedder, MERGE_RECORDS) as c:
        # Positive control: HR readers and admins see one person under both names, both records its members.
        for insider in (READER, ADMIN):
            [lee], [okafor] = resolve(c, "Dana Lee", insider), resolve(c, "Dana Okafor", insider)
            assert lee["entity_id"] == okafor["entity_id"] and len(lee["members"]) == 2, (lee, okafor)
        # The outsider sees both public records, and nothing that ties them: two entities, each its own.
        [lee], [okafor] = resolve(c, "Dana Lee", OUTSIDER), resolve(c, "Dana Okafor", OUTSIDER)
        assert lee["entity_id"] != okafor["entity_id"]
        assert (lee["members"], okafor["members"]) == ([lee["entity_id"]], [okafor["entity_id"]])
        for shown, other in ((lee, "Dana Okafor"), (okafor, "Dana Lee")):
            body = c.get(f"/v1/entities/{shown['entity_id']}", headers=OUTSIDER)
            assert body.status_code == 200 and other not in body.text and other not in json.dumps(shown)
            assert shown["aliases"] == [shown["name"]]
        assert ["user_id", "dana.okafor"] not in lee["strong_ids"]


@pytest.fixture
def hub_client(tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder) -> Iterator[TestClient]:
    with serving(tmp_path, pg_dsn, embedder, HUB_RECORDS) as c:
        yield c


def test_a_hub_by_restricted_edges_is_no_hub_to_an_outsider(hub_client: TestClient) -> None:
    c = hub_client
    [team] = [t for t in resolve(c, "Falcon", OUTSIDER) if t["type"] == "Team"]
    assert (team["degree"], team["is_hub"]) == (1, False)
    [avery] = resolve(c, "Avery Public", OUTSIDER)

    def walk(start: str, headers: dict[str, str]) -> dict[str, Any]:
        response = c.get(f"/v1/entities/{start}/neighbors", params={"depth": 2}, headers=headers)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    outsider = walk(avery["entity_id"], OUTSIDER)
    assert "hub not passed: Falcon" not in outsider["truncated"]
    assert {(e["subject"]["name"], e["object"]["name"]) for e in outsider["edges"]} == {("Avery Public", "Falcon")}
    # Positive controls: to HR readers (public records too) and admins Falcon is a hub of 4, and walks stop there.
    [hr_team] = [t for t in resolve(c, "Falcon", READER) if t["type"] == "Team"]
    assert (hr_team["entity_id"], hr_team["degree"], hr_team["is_hub"]) == (team["entity_id"], 4, True)
    [secret] = resolve(c, "Secret Member 0", READER)
    assert "hub not passed: Falcon" in walk(secret["entity_id"], READER)["truncated"]
    admin = c.get(f"/v1/entities/{team['entity_id']}", headers=ADMIN).json()
    assert (admin["degree"], admin["is_hub"]) == (4, True)
    assert "hub not passed: Falcon" in walk(avery["entity_id"], ADMIN)["truncated"]


def test_graph_search_seeds_and_paths_hold_only_visible_entities(client: TestClient) -> None:
    c = client
    [team] = [t for t in resolve(c, "Osprey Restructuring", READER) if t["type"] == "Team"]
    [blake] = resolve(c, "J. Blake", OUTSIDER)
    question = {"query": "Who leads the Osprey Restructuring team, and what does J. Blake plan?", "graph": True}

    def searched(headers: dict[str, str]) -> dict[str, Any]:
        response = c.post("/v1/search", json=question, headers=headers)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    insider = searched(READER)
    assert insider["traversal"] is not None and team["entity_id"] in insider["traversal"]["seeds"]  # control
    outsider = searched(OUTSIDER)
    assert outsider["traversal"] is not None and outsider["traversal"]["seeds"] == [blake["entity_id"]]
    text = json.dumps({k: v for k, v in outsider.items() if k != "query"})  # the question echoed names them
    assert team["entity_id"] not in text and "Osprey Restructuring" not in text
    assert SECRET_NAME not in text and SECRET_USER not in text


def test_kgrag_entity_id_key_keys_the_installation(pg_dsn: str, tmp_path: Path) -> None:
    """KGRAG_ENTITY_ID_KEY, set before the first entity, becomes the installation's key for every process."""
    key = "operator-managed-entity-key-0123456789"
    with PostgresGraphStore.connect(pg_dsn) as store:
        generated = store.entity_id_for("Team", "Routing")
        adopt_entity_id_key(store, KgragSettings(data_dir=tmp_path, pg_dsn=pg_dsn))  # unset: nothing changes
        assert store.entity_id_for("Team", "Routing") == generated
        adopt_entity_id_key(store, KgragSettings(data_dir=tmp_path, pg_dsn=pg_dsn, entity_id_key=key))
        assert store.entity_id_for("Team", "Routing") == entity_id("Team", "Routing", key=key.encode()) != generated
    with PostgresGraphStore.connect(pg_dsn) as later:  # another process, without the setting
        assert later.entity_id_for("Team", "Routing") == entity_id("Team", "Routing", key=key.encode())
    with pytest.raises(ValidationError):
        KgragSettings(data_dir=tmp_path, entity_id_key="too short")
