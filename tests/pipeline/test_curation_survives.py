"""Curation decisions (hand merges, splits, review verdicts) survive what rewrites the facts they are about: an
ACL round trip, re-ingesting a changed document, a re-extraction. Facts are replaced on each of those (their
entities are deleted and written again), and the canonical mapping is re-derived from the merge log, so a
reader never sees a curator's merge undone. Embedded runtime, real PostgreSQL; records give tier-1 facts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgrag_adapters.connectors import iter_path
from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.acl import PUBLIC, AclClass, Caller
from kgrag_core.extraction.records import RerunScope
from kgrag_core.graph.model import DecisionKind, PairDecision
from kgrag_runtime.app import KgragApp
from kgrag_runtime.graph_admin import GraphAdmin
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded

ADMIN = Caller(admin=True)
READER = Caller(user="sam.ortiz", groups=("engineering",))


def _record(doc_id: str, name: str, purpose: str) -> dict[str, Any]:
    return {
        "id": doc_id,
        "title": f"System: {name}",
        "source": "records",
        "published_at": "2025-06-03",
        "record": {"type": "system", "fields": {"name": name, "purpose": purpose}},
    }


ATLAS = _record("record-system-atlas", "Atlas", "Route planning engine")
PLANNER = _record("record-system-route-planner", "Route Planner", "Route planning engine (old name of Atlas)")


def _ingest(kg: KgragApp, folder: Path, *records: dict[str, Any]) -> None:
    path = folder / "records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    outcomes = kg.ingest(list(iter_path(path)))
    assert all(o.error_code is None for o in outcomes), [o.as_dict() for o in outcomes]


@pytest.fixture
def kg(tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder) -> Iterator[KgragApp]:
    settings = KgragSettings(data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000)
    with open_embedded(settings, embedder=embedder) as app:
        _ingest(app, tmp_path, ATLAS, PLANNER)
        yield app


def _graph(kg: KgragApp) -> GraphAdmin:
    return kg.require_graph()


def _system(graph: GraphAdmin, name: str, caller: Caller = ADMIN) -> dict[str, Any]:
    found = [c for c in graph.resolve(name, caller)["candidates"] if c["type"] == "System"]
    assert len(found) == 1, (name, found)
    return found[0]


def _merged(kg: KgragApp) -> tuple[str, str, str]:
    graph = _graph(kg)
    atlas, planner = _system(graph, "Atlas")["entity_id"], _system(graph, "Route Planner")["entity_id"]
    assert atlas != planner
    merge = graph.merge([atlas, planner], canonical_id=atlas, reason="test: one system, renamed")
    return atlas, planner, str(merge["merge_id"])


def _assert_one_entity(kg: KgragApp, atlas: str, planner: str) -> None:
    """Both names and both ids answer with one cluster holding both (its label is the resolver's choice: the
    most-mentioned member, the same in an incremental and a full pass)."""
    graph = _graph(kg)
    for caller in (ADMIN, READER):
        seen = {_system(graph, name, caller)["entity_id"] for name in ("Atlas", "Route Planner")}
        seen |= {graph.entity(i, caller)["entity_id"] for i in (atlas, planner)}
        assert len(seen) == 1, (caller, seen)
        assert {atlas, planner} <= set(graph.entity(atlas, caller)["members"])


def _assert_two_entities(kg: KgragApp, atlas: str, planner: str) -> None:
    graph = _graph(kg)
    for caller in (ADMIN, READER):
        assert _system(graph, "Atlas", caller)["entity_id"] == atlas
        assert _system(graph, "Route Planner", caller)["entity_id"] == planner


def _acl_round_trip(kg: KgragApp, doc_id: str) -> None:
    restricted = kg.change_acl(doc_id, AclClass.of(["group:leadership"]))
    assert restricted.error_code is None, restricted.as_dict()
    public = kg.change_acl(doc_id, AclClass.of([PUBLIC]))
    assert public.error_code is None, public.as_dict()


@pytest.mark.parametrize("doc_id", [PLANNER["id"], ATLAS["id"]])
def test_a_hand_merge_survives_an_acl_round_trip_of_either_document(kg: KgragApp, doc_id: str) -> None:
    atlas, planner, merge_id = _merged(kg)
    _assert_one_entity(kg, atlas, planner)
    _acl_round_trip(kg, doc_id)
    _assert_one_entity(kg, atlas, planner)
    [logged] = [m for m in _graph(kg).merges() if m["merge_id"] == merge_id]
    assert logged["reverted"] is False


def test_while_restricted_the_outsider_sees_only_the_public_member_and_the_reader_the_cluster(kg: KgragApp) -> None:
    atlas, _, _ = _merged(kg)
    kg.change_acl(PLANNER["id"], AclClass.of(["group:leadership"]))
    graph = _graph(kg)
    leader = Caller(user="grace.oneill", groups=("leadership",))
    cluster = _system(graph, "Route Planner", leader)  # positive control: still merged for who may read it
    assert cluster == _system(graph, "Atlas", leader) and atlas in cluster["members"]
    assert graph.resolve("Route Planner", READER)["candidates"] == []  # its only evidence is restricted now
    assert _system(graph, "Atlas", READER)["name"] == "Atlas"


def test_a_hand_merge_survives_reingesting_a_changed_document(kg: KgragApp, tmp_path: Path) -> None:
    atlas, planner, _ = _merged(kg)
    changed = {**PLANNER, "record": {"type": "system", "fields": {"name": "Route Planner", "purpose": "Retired"}}}
    _ingest(kg, tmp_path, changed)
    _assert_one_entity(kg, atlas, planner)


def test_a_hand_merge_survives_a_re_extraction(kg: KgragApp) -> None:
    atlas, planner, _ = _merged(kg)
    run = kg.require_extraction().rerun(RerunScope(), "curation-test-2", dry_run=False)
    assert run["status"] == "completed", run
    _assert_one_entity(kg, atlas, planner)


def test_a_split_survives_an_acl_round_trip_and_a_re_extraction(kg: KgragApp) -> None:
    atlas, planner, merge_id = _merged(kg)
    _graph(kg).split(merge_id)
    _assert_two_entities(kg, atlas, planner)
    _acl_round_trip(kg, PLANNER["id"])
    _assert_two_entities(kg, atlas, planner)
    kg.require_extraction().rerun(RerunScope(), "curation-test-3", dry_run=False)
    _assert_two_entities(kg, atlas, planner)


def _queued(graph: GraphAdmin) -> tuple[str, str]:
    """Atlas and Route Planner as a pair a person must decide (names this different never score that high)."""
    ids = sorted((_system(graph, "Atlas")["entity_id"], _system(graph, "Route Planner")["entity_id"]))
    graph.store.queue_for_review([PairDecision(ids[0], ids[1], DecisionKind.REVIEW, 0.7, (), "test: review")])
    assert [(p["a"], p["b"]) for p in graph.review_queue()] == [(ids[0], ids[1])]
    return ids[0], ids[1]


def test_a_review_verdict_same_survives_acl_round_trips_of_both_documents(kg: KgragApp) -> None:
    graph = _graph(kg)
    a, b = _queued(graph)
    decided = graph.decide(a, b, same=True)
    canonical = decided["merge"]["canonical_id"]
    _acl_round_trip(kg, PLANNER["id"])
    _acl_round_trip(kg, ATLAS["id"])
    assert canonical in (a, b)
    _assert_one_entity(kg, a, b)
    assert graph.review_queue() == []


def test_a_review_verdict_different_survives_an_acl_round_trip_and_a_resolution_pass(kg: KgragApp) -> None:
    graph = _graph(kg)
    a, b = _queued(graph)
    graph.decide(a, b, same=False)
    _acl_round_trip(kg, PLANNER["id"])
    graph.run_resolution()
    assert graph.review_queue() == []  # decided once: not asked again
    _assert_two_entities(kg, *sorted((a, b), key=lambda i: i != _system(graph, "Atlas")["entity_id"]))
