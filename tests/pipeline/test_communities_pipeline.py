"""Communities end to end on the embedded runtime: Northwind documents and records through extraction,
resolution and the community-builder that follows it; the caller's view over HTTP (members only visible
evidence names, with positive controls), and a deletion that marks its communities stale in its own
transaction, lists them in its record, and is reclustered away."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_query_api.api import create_app
from kgrag_runtime.app import KgragApp
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.test_entities_http import ADMIN, ENGINEER, INGEST, LEADER, VERIFIER, ok, the_id
from tests.pipeline.test_entity_resolution_pipeline import HUB_MIN_DEGREE, RESTRICTED_RECORD, ingest_northwind

# A second leadership-only record whose team, lead and system nothing else names: a community only
# restricted evidence supports.
KESTREL = {
    "id": "record-team-kestrel-labs",
    "title": "Team: Kestrel Labs",
    "source": "records",
    "published_at": "2024-11-01",
    "record": {"type": "team", "fields": {"name": "Kestrel Labs", "lead": "Zed Quillfeather", "owns": ["Nimbus"]}},
    "acl": {"groups": ["leadership"], "users": []},
}


@pytest.fixture
def northwind(tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder) -> Iterator[tuple[KgragApp, TestClient]]:
    settings = KgragSettings(
        data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000, resolution_hub_min_degree=HUB_MIN_DEGREE
    )
    with open_embedded(settings, embedder=embedder) as kg, TestClient(create_app(kg, VERIFIER)) as c:
        ingest_northwind(kg, tmp_path)
        extra = tmp_path / "kestrel.jsonl"
        extra.write_text(json.dumps(KESTREL) + "\n", encoding="utf-8")
        assert all(o.error_code is None for o in kg.ingest(list(iter_path(extra))))
        yield kg, c


def listed(c: TestClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ok(c.get("/v1/communities", params={"limit": 200}, headers=headers))["communities"]
    return found


def member_ids(community: dict[str, Any]) -> set[str]:
    return {m["entity_id"] for m in community["members"]}


@pytest.mark.pipeline
def test_communities_follow_the_callers_evidence_and_deletion(northwind: tuple[KgragApp, TestClient]) -> None:
    kg, c = northwind
    osprey = the_id(c, "Osprey Integration", "Team", LEADER)
    kestrel = the_id(c, "Kestrel Labs", "Team", LEADER)
    every = listed(c, ADMIN)
    assert every and {0} <= {x["level"] for x in every}
    assert all(x["size"] == len(x["members"]) >= 1 and "content_hash" in x for x in every)
    # Built after ingest, by the handler that follows resolution: none is stale.
    assert not any(x["stale"] for x in every)
    # The embedded builder's own metrics, on the app's /metrics (as the community-builder service has them).
    metrics = c.get("/metrics").text
    assert "kgrag_community_build_seconds_count" in metrics and "kgrag_communities_stale 0.0" in metrics
    assert f"kgrag_communities {float(len(every))}" in metrics
    [with_osprey] = [x for x in every if x["level"] == 0 and osprey in member_ids(x)]
    [with_kestrel] = [x for x in every if x["level"] == 0 and kestrel in member_ids(x)]
    assert with_osprey["community_id"] != with_kestrel["community_id"]

    # The engineer sees the Osprey community without the team only leadership's record names...
    as_engineer = {x["community_id"]: x for x in listed(c, ENGINEER)}
    assert all("content_hash" not in x and "weight" not in x for x in as_engineer.values())
    assert not any({osprey, kestrel} & member_ids(x) for x in as_engineer.values())
    assert not any(
        m["name"] in ("Osprey Integration", "Kestrel Labs") for x in as_engineer.values() for m in x["members"]
    )
    seen = ok(c.get(f"/v1/communities/{with_osprey['community_id']}", headers=ENGINEER))
    assert seen["size"] == len(seen["members"]) >= 1 and member_ids(seen) <= member_ids(with_osprey) - {osprey}
    # ...and not the community only restricted evidence supports: 404, as for an unknown id.
    assert with_kestrel["community_id"] not in as_engineer
    hidden = c.get(f"/v1/communities/{with_kestrel['community_id']}", headers=ENGINEER)
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "COMMUNITY_NOT_FOUND"
    assert c.get("/v1/communities/com_unknown", headers=ENGINEER).json()["error"]["code"] == "COMMUNITY_NOT_FOUND"
    # Positive control: leadership reads both teams in their communities.
    as_leader = ok(c.get(f"/v1/communities/{with_kestrel['community_id']}", headers=LEADER))
    assert kestrel in member_ids(as_leader) and as_leader["size"] == with_kestrel["size"]
    assert osprey in member_ids(ok(c.get(f"/v1/communities/{with_osprey['community_id']}", headers=LEADER)))

    # A dry run counts and writes nothing; it needs the admin scope.
    plan = ok(c.post("/v1/admin/communities/rebuild", json={"dry_run": True}, headers=ADMIN))
    assert plan["dry_run"] is True and plan["full"] is True and plan["communities"] == len(every)
    assert plan["entities"] >= sum(x["size"] for x in every if x["level"] == 0)
    assert c.post("/v1/admin/communities/rebuild", json={"dry_run": True}, headers=ENGINEER).status_code == 403

    # Deleting Kestrel's record: its community is stale in the deletion's transaction and in its record,
    # then reclustered away by the builder (no live evidence names its members any more).
    deleted = c.delete(f"/v1/ingest/documents/{KESTREL['id']}", headers=INGEST)
    assert deleted.status_code == 200, deleted.text
    assert kg.graph is not None
    [record] = kg.graph.store.deletion_records(str(KESTREL["id"]))
    assert with_kestrel["community_id"] in record.communities
    assert with_osprey["community_id"] not in record.communities  # untouched by this deletion
    gone = c.get(f"/v1/communities/{with_kestrel['community_id']}", headers=ADMIN)
    assert gone.status_code == 404
    after = {x["community_id"]: x for x in listed(c, ADMIN)}
    assert with_osprey["community_id"] in after and not any(kestrel in member_ids(x) for x in after.values())
    assert str(RESTRICTED_RECORD["id"]) != KESTREL["id"]
