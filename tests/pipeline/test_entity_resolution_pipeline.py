"""Entity resolution and the entity reads end to end: Northwind documents and records through extraction and the
resolution pass that follows it (graph.changed), on real embedded PostgreSQL. No model is configured or called:
records give tier-1 facts, documents give mentions.

The helpers here (documents picked, the restricted record, callers) are shared with the HTTP and CLI tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_runtime.app import KgragApp
from kgrag_runtime.graph_admin import GraphAdmin
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

CORPUS = Path("corpora/northwind")
# Wiki pages and e-mails that name people the records also describe; the Osprey e-mail is leadership-only.
DOCUMENTS = ("wiki-team-ownership", "wiki-people-directory", "email-osprey-board-prep", "email-welcome-kenji-watanabe")
OSPREY_DOC = "email-osprey-board-prep"
# A record only leadership may read: a team, and an OWNS edge to Atlas nobody else can see.
RESTRICTED_RECORD = {
    "id": "record-team-osprey-integration",
    "title": "Team: Osprey Integration",
    "source": "records",
    "published_at": "2024-10-01",
    "record": {"type": "team", "fields": {"name": "Osprey Integration", "lead": "Maria Chen", "owns": ["Atlas"]}},
    "acl": {"groups": ["leadership"], "users": []},
}
HUB_MIN_DEGREE = 6  # low, so the busiest teams and people of this small graph are hubs

ADMIN = Caller(admin=True)
ENGINEER = Caller(user="sam.ortiz", groups=("engineering",))
LEADERSHIP = Caller(user="grace.oneill", groups=("leadership",))


def northwind_files(folder: Path) -> list[Path]:
    """JSONL files to ingest, in order: the picked documents, every record, the restricted record."""
    docs = folder / "documents.jsonl"
    lines = [
        ln
        for ln in (CORPUS / "documents.jsonl").read_text(encoding="utf-8").splitlines()
        if json.loads(ln)["id"] in DOCUMENTS
    ]
    assert len(lines) == len(DOCUMENTS)
    docs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    restricted = folder / "restricted.jsonl"
    restricted.write_text(json.dumps(RESTRICTED_RECORD) + "\n", encoding="utf-8")
    return [docs, CORPUS / "records.jsonl", restricted]


def ingest_northwind(kg: KgragApp, folder: Path) -> None:
    for path in northwind_files(folder):
        outcomes = kg.ingest(list(iter_path(path)))
        assert all(o.error_code is None for o in outcomes), [o.as_dict() for o in outcomes if o.error_code]


def graph_of(kg: KgragApp) -> GraphAdmin:
    assert kg.graph is not None, "extraction (and with it the graph) is on by default"
    return kg.graph


def the_entity(graph: GraphAdmin, name: str, entity_type: str, caller: Caller = ADMIN) -> dict[str, Any]:
    found = [c for c in graph.resolve(name, caller)["candidates"] if c["type"] == entity_type]
    assert len(found) == 1, (name, entity_type, found)
    return found[0]


def chunk_docs(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        return {str(c): str(d) for c, d in conn.execute("SELECT chunk_id, doc_id FROM chunks")}


def edge_key(edge: dict[str, Any]) -> tuple[str, str, str]:
    return edge["subject"]["name"], edge["relation"], edge["object"]["name"]


@pytest.fixture
def settings(tmp_path: Path, pg_dsn: str) -> KgragSettings:
    return KgragSettings(
        data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000, resolution_hub_min_degree=HUB_MIN_DEGREE
    )


@pytest.fixture
def northwind(settings: KgragSettings, embedder: OnnxMiniLmEmbedder, tmp_path: Path) -> Iterator[KgragApp]:
    with open_embedded(settings, embedder=embedder) as kg:
        ingest_northwind(kg, tmp_path)
        yield kg


def test_resolution_after_extraction_merges_a_person_from_a_record_with_the_same_person_in_a_wiki_page(
    northwind: KgragApp, pg_dsn: str
) -> None:
    graph = graph_of(northwind)
    docs_of_chunk = chunk_docs(pg_dsn)
    with psycopg.connect(pg_dsn) as conn:
        strong = {
            str(e): [tuple(p) for p in s] for e, s in conn.execute("SELECT entity_id, strong_ids FROM kg_entities")
        }
        mentioned_in: dict[str, set[str]] = {}
        for entity_id, chunk_id in conn.execute("SELECT entity_id, chunk_id FROM kg_mentions"):
            mentioned_in.setdefault(entity_id, set()).add(docs_of_chunk[chunk_id])
    auto = [m for m in graph.merges(1000) if m["decided_by"] == "auto" and not m["reverted"]]
    assert auto, "the resolution pass that follows extraction merged nothing"

    def record_and_text(merge: dict[str, Any]) -> tuple[str, str] | None:
        ids = [merge["canonical_id"], *merge["members"]]
        from_record = [i for i in ids if any(kind == "email" for kind, _ in strong.get(i, []))]
        from_wiki = [
            i for i in ids if not strong.get(i) and any(d.startswith("wiki-") for d in mentioned_in.get(i, ()))
        ]
        return (from_record[0], from_wiki[0]) if from_record and from_wiki else None

    pairs = [p for p in map(record_and_text, auto) if p is not None]
    assert pairs, "no merge joined a record's person (with an e-mail) and a wiki page's mention of them"
    record_id, wiki_id = pairs[0]
    # Either id reads as one entity: the record's identifiers and facts, the wiki page's mentions.
    seen_from_wiki = graph.entity(wiki_id, ADMIN)
    assert seen_from_wiki == graph.entity(record_id, ADMIN)
    assert {record_id, wiki_id} <= set(seen_from_wiki["members"])
    assert any(kind == "email" for kind, _ in seen_from_wiki["strong_ids"])
    assert seen_from_wiki["relations"], "the record's relations follow the merged entity"
    # The person is no longer ambiguous by name.
    resolved = graph.resolve(seen_from_wiki["name"], ADMIN, entity_type="Person")
    assert [c["entity_id"] for c in resolved["candidates"]] == [seen_from_wiki["entity_id"]]
    assert resolved["ambiguous"] is False


def test_atlas_shows_the_owning_team_with_evidence_counts_and_its_claims(northwind: KgragApp, pg_dsn: str) -> None:
    graph = graph_of(northwind)
    atlas = graph.entity(the_entity(graph, "Atlas", "System")["entity_id"], ENGINEER)
    docs_of_chunk = chunk_docs(pg_dsn)
    owns = [r for r in atlas["relations"] if r["relation"] == "OWNS" and r["subject"]["name"] == "Routing"]
    assert len(owns) == 1 and owns[0]["object"]["entity_id"] == atlas["entity_id"]
    # Stated by the team's record (owns: Atlas) and the system's record (owner_team: Routing).
    assert owns[0]["evidence_count"] == len(owns[0]["evidence_chunk_ids"]) == 2
    assert {docs_of_chunk[c] for c in owns[0]["evidence_chunk_ids"]} == {"record-team-routing", "record-system-atlas"}
    assert atlas["degree"] == len({r["relation_id"] for r in atlas["relations"]})
    claims = {(c["attribute"], c["value"]) for c in atlas["attributes"]}
    assert {("status", "production"), ("language", "Python"), ("language", "C++")} <= claims
    for claim in atlas["attributes"]:
        assert claim["doc_id"] == "record-system-atlas" and claim["quote"] and claim["chunk_id"] in docs_of_chunk
        assert "valid_from" in claim and "valid_to" in claim and claim["status"] in {"current", "conflict"}
    assert atlas["conflicts"] == [c for c in atlas["attributes"] if c["status"] == "conflict"]


def test_what_only_a_restricted_document_shows_is_invisible_to_others_and_counts_follow(northwind: KgragApp) -> None:
    graph = graph_of(northwind)
    team = the_entity(graph, "Osprey Integration", "Team", LEADERSHIP)
    with pytest.raises(KgragError) as refused:
        graph.entity(team["entity_id"], ENGINEER)
    assert refused.value.code is ErrorCode.ENTITY_NOT_FOUND
    assert graph.resolve("Osprey Integration", ENGINEER)["candidates"] == []
    # Baltic Haulage is named only in the leadership-only Osprey e-mail.
    assert graph.resolve("Baltic Haulage", ENGINEER)["candidates"] == []
    assert graph.resolve("Baltic Haulage", LEADERSHIP)["candidates"]

    atlas_id = the_entity(graph, "Atlas", "System")["entity_id"]
    as_engineer, as_leader = graph.entity(atlas_id, ENGINEER), graph.entity(atlas_id, LEADERSHIP)
    hidden = {edge_key(r) for r in as_leader["relations"]} - {edge_key(r) for r in as_engineer["relations"]}
    assert hidden == {("Osprey Integration", "OWNS", "Atlas")}
    assert as_leader["degree"] == as_engineer["degree"] + 1
    around = graph.neighbours(atlas_id, ENGINEER, depth=2, limit=200)["edges"]
    assert all("Osprey Integration" not in edge_key(e) for e in around)


def test_neighbours_at_depth_two_never_pass_through_a_hub_and_say_so(northwind: KgragApp) -> None:
    graph = graph_of(northwind)
    atlas = the_entity(graph, "Atlas", "System")
    around = graph.neighbours(atlas["entity_id"], ADMIN, depth=2, limit=200)
    first = [e for e in around["edges"] if e["depth"] == 1]
    reached = {end["entity_id"] for e in first for end in (e["subject"], e["object"])} - {atlas["entity_id"]}
    hubs = {i for i in reached if graph.entity(i, ADMIN)["is_hub"]}
    assert hubs, f"premise: a neighbour of Atlas has at least {HUB_MIN_DEGREE} edges"
    assert {f"hub not passed: {graph.entity(i, ADMIN)['name']}" for i in hubs} <= set(around["truncated"])
    relation_ids = [e["relation_id"] for e in around["edges"]]
    assert len(relation_ids) == len(set(relation_ids)), "an edge is listed once, at the depth it was first reached"
    # Every second-hop edge leaves a first-hop entity that is not a hub.
    through = reached - hubs
    for edge in (e for e in around["edges"] if e["depth"] == 2):
        assert {edge["subject"]["entity_id"], edge["object"]["entity_id"]} & through, edge

    # Without hubs, the same walk goes through them and finds more.
    assert graph.store.label_hubs(10_000) == 0
    unbounded = graph.neighbours(atlas["entity_id"], ADMIN, depth=2, limit=200)
    assert not any(t.startswith("hub:") for t in unbounded["truncated"])
    assert {e["relation_id"] for e in around["edges"]} < {e["relation_id"] for e in unbounded["edges"]}
    # A hub may still be where a walk starts.
    hub = sorted(hubs)[0]
    assert graph.store.label_hubs(HUB_MIN_DEGREE) >= 1 and graph.entity(hub, ADMIN)["is_hub"]
    assert graph.neighbours(hub, ADMIN, depth=1)["edges"]


def test_a_hand_merge_then_its_split_restores_aliases_and_neighbours_exactly(northwind: KgragApp) -> None:
    graph = graph_of(northwind)
    atlas = the_entity(graph, "Atlas", "System")["entity_id"]
    harbor = the_entity(graph, "Harbor", "System")["entity_id"]

    def snapshot() -> list[Any]:
        return [
            (graph.entity(i, who), graph.neighbours(i, who, depth=2, limit=200))
            for i in (atlas, harbor)
            for who in (ADMIN, ENGINEER)
        ]

    before = snapshot()
    merged = graph.merge([atlas, harbor], canonical_id=atlas, reason="test: one system")
    assert merged["canonical_id"] == atlas and merged["members"] == [harbor] and merged["decided_by"] == "override"
    joined = graph.entity(harbor, ADMIN)
    assert joined["entity_id"] == atlas and {atlas, harbor} <= set(joined["members"])
    assert {"Atlas", "Harbor"} <= set(joined["aliases"])
    separate = {r["relation_id"] for r in before[0][0]["relations"]} | {
        r["relation_id"] for r in before[2][0]["relations"]
    }
    assert len(joined["relations"]) > max(len(before[0][0]["relations"]), len(before[2][0]["relations"]))
    assert len(joined["relations"]) <= len(separate)
    assert graph.merges(1)[0]["merge_id"] == merged["merge_id"]

    split = graph.split(merged["merge_id"])
    assert split["reverted"] is True and split["merge_id"] == merged["merge_id"]
    assert snapshot() == before
    assert graph.split(merged["merge_id"])["reverted"] is True and snapshot() == before  # twice: no change
    with pytest.raises(KgragError) as unknown:
        graph.split("mrg_nope")
    assert unknown.value.code is ErrorCode.ENTITY_NOT_FOUND


def test_deleting_a_document_removes_its_evidence_and_facts_left_without_any(northwind: KgragApp, pg_dsn: str) -> None:
    graph = graph_of(northwind)
    atlas_id = the_entity(graph, "Atlas", "System")["entity_id"]
    docs_of_chunk = chunk_docs(pg_dsn)
    before = graph.entity(atlas_id, ADMIN)
    gone_chunks = {c for c, d in docs_of_chunk.items() if d == "record-system-atlas"}
    only_there = {r["relation_id"] for r in before["relations"] if set(r["evidence_chunk_ids"]) <= gone_chunks}
    partly = {r["relation_id"]: r for r in before["relations"] if r["relation_id"] not in only_there}
    assert only_there and any(set(r["evidence_chunk_ids"]) & gone_chunks for r in partly.values()), "premise"
    assert any(c["doc_id"] == "record-system-atlas" for c in before["attributes"])

    assert northwind.delete("record-system-atlas").error_code is None
    after = graph.entity(atlas_id, ADMIN)
    assert {r["relation_id"] for r in after["relations"]} == set(partly)
    for edge in after["relations"]:
        kept = sorted(set(partly[edge["relation_id"]]["evidence_chunk_ids"]) - gone_chunks)
        assert edge["evidence_chunk_ids"] == kept and edge["evidence_count"] == len(kept)
    assert all(c["doc_id"] != "record-system-atlas" for c in after["attributes"])
    assert after["degree"] == before["degree"] - len(only_there)
    # An entity only the deleted e-mail named is gone from every read.
    assert graph.resolve("Baltic Haulage", ADMIN)["candidates"]
    assert northwind.delete(OSPREY_DOC).error_code is None
    assert graph.resolve("Baltic Haulage", ADMIN)["candidates"] == []
