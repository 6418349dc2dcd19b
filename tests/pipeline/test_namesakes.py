"""Namesakes: two things called by one name ("Mercury" the warehouse system, "Mercury" the payroll export) are
one extracted entity until their documents are told apart. Resolution splits them when their documents
disagree; a curator can split them by hand; either split outlives what rewrites the facts (an ACL round
trip, re-ingesting a changed document, a re-extraction) and resolution never merges it back on its own.
Embedded runtime, real PostgreSQL and embedding model; records give tier-1 facts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kgrag_adapters.embeddings.onnx_minilm import OnnxMiniLmEmbedder
from kgrag_core.acl import PUBLIC, AclClass, Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.records import RerunScope
from kgrag_runtime.app import KgragApp
from kgrag_runtime.graph_admin import GraphAdmin
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.wiring import open_embedded
from tests.pipeline.test_curation_survives import _ingest

ADMIN = Caller(admin=True)
READER = Caller(user="sam.ortiz", groups=("engineering",))
SENSORS = "Collects temperature readings from the cold store sensors"


def _system(doc_id: str, purpose: str, owner: str) -> dict[str, Any]:
    return {
        "id": doc_id,
        "title": "System: Mercury",
        "source": "records",
        "published_at": "2025-06-03",
        "record": {"type": "system", "fields": {"name": "Mercury", "purpose": purpose, "owner": owner}},
    }


COLD_STORE = _system("record-mercury-cold-store", SENSORS, "Cold Chain")
COLD_STORE_2 = _system("record-mercury-cold-store-2", SENSORS, "Cold Chain")
PAYROLL = _system("record-mercury-payroll", "Exports the monthly payroll file to the bank", "Finance")


@pytest.fixture
def kg(tmp_path: Path, pg_dsn: str, embedder: OnnxMiniLmEmbedder) -> Iterator[KgragApp]:
    settings = KgragSettings(data_dir=tmp_path / "index", pg_dsn=pg_dsn, max_document_bytes=20_000)
    with open_embedded(settings, embedder=embedder) as app:
        yield app


def _graph(kg: KgragApp) -> GraphAdmin:
    return kg.require_graph()


def _mercuries(kg: KgragApp, caller: Caller = ADMIN) -> list[dict[str, Any]]:
    return [c for c in _graph(kg).resolve("Mercury", caller)["candidates"] if c["type"] == "System"]


def test_mentions_of_one_thing_in_two_documents_are_one_entity(kg: KgragApp, tmp_path: Path) -> None:
    _ingest(kg, tmp_path, COLD_STORE, COLD_STORE_2)
    [mercury] = _mercuries(kg)  # positive control for the split tests below: no disagreement, no split
    assert _graph(kg).store.kept_apart() == []
    assert mercury["name"] == "Mercury"


def test_a_curators_split_separates_one_name_into_two_entities_that_survive_rewrites(
    kg: KgragApp, tmp_path: Path
) -> None:
    _ingest(kg, tmp_path, COLD_STORE, COLD_STORE_2)
    [mercury] = _mercuries(kg)
    split = _graph(kg).split_mentions(mercury["entity_id"], [COLD_STORE_2["id"]], reason="test: two Mercuries")
    assert split["from_id"] == mercury["entity_id"] != split["entity_id"]

    def two() -> None:
        for caller in (ADMIN, READER):
            found = {c["entity_id"] for c in _mercuries(kg, caller)}
            assert found == {split["from_id"], split["entity_id"]}, (caller, found)

    two()
    _graph(kg).run_resolution()  # a pass never merges a split back: same name, same purpose, still two
    two()
    restricted = kg.change_acl(COLD_STORE_2["id"], AclClass.of(["group:leadership"]))
    assert restricted.error_code is None
    assert {c["entity_id"] for c in _mercuries(kg, READER)} == {split["from_id"]}
    assert kg.change_acl(COLD_STORE_2["id"], AclClass.of([PUBLIC])).error_code is None
    two()
    changed = {**COLD_STORE_2, "record": {"type": "system", "fields": {"name": "Mercury", "purpose": "Retired"}}}
    _ingest(kg, tmp_path, changed)
    two()
    run = kg.require_extraction().rerun(RerunScope(), "namesake-test-2", dry_run=False)
    assert run["status"] == "completed", run
    two()
    # Undone by an ordinary, logged merge.
    _graph(kg).merge([split["from_id"], split["entity_id"]], reason="test: one Mercury after all")
    assert len(_mercuries(kg)) == 1


def test_a_split_names_documents_that_name_the_entity_and_leaves_one(kg: KgragApp, tmp_path: Path) -> None:
    _ingest(kg, tmp_path, COLD_STORE, COLD_STORE_2)
    [mercury] = _mercuries(kg)
    graph = _graph(kg)
    with pytest.raises(KgragError) as unknown:
        graph.split_mentions(mercury["entity_id"], ["no-such-doc"], reason="x")
    assert unknown.value.code is ErrorCode.INVALID_QUERY
    with pytest.raises(KgragError) as everything:
        graph.split_mentions(mercury["entity_id"], [COLD_STORE["id"], COLD_STORE_2["id"]], reason="x")
    assert everything.value.code is ErrorCode.INVALID_QUERY
    with pytest.raises(KgragError) as nobody:
        graph.split_mentions("ent_00000000000000000000", [COLD_STORE["id"]], reason="x")
    assert nobody.value.code is ErrorCode.ENTITY_NOT_FOUND
    assert len(_mercuries(kg)) == 1  # nothing changed


def _person(doc_id: str, user_id: str, role: str) -> dict[str, Any]:
    fields = {"name": "Alex Morgan", "user_id": user_id, "email": "alex.morgan@northwind.example", "role": role}
    return {"id": doc_id, "title": "Person: Alex Morgan", "source": "records", "published_at": "2025-06-03",
            "record": {"type": "person", "fields": fields}}  # fmt: skip


def _morgans(kg: KgragApp, caller: Caller = ADMIN) -> set[str]:
    return {c["entity_id"] for c in _graph(kg).resolve("Alex Morgan", caller)["candidates"] if c["type"] == "Person"}


def test_resolution_keeps_namesakes_sharing_an_address_apart_and_merges_one_person(
    kg: KgragApp, tmp_path: Path
) -> None:
    """Two people called Alex Morgan whose records reuse one e-mail address (so extraction keys both by it)
    but carry different user ids: resolution splits them. Positive control: a second record of the same
    person (same user id) stays one entity."""
    _ingest(kg, tmp_path, _person("hr-alex-1", "alex.morgan", "Driver"), _person("hr-alex-1b", "alex.morgan", "Driver"))
    assert len(_morgans(kg)) == 1 and _graph(kg).store.kept_apart() == []
    _ingest(kg, tmp_path, _person("hr-alex-2", "alex.morgan2", "Accountant"))
    found = _morgans(kg)
    assert len(found) == 2, found
    [(a, b)] = _graph(kg).store.kept_apart()
    assert {a, b} == found
    for caller in (ADMIN, READER):
        users = sorted(
            sorted(value for kind, value in c["strong_ids"] if kind == "user_id")
            for c in _graph(kg).resolve("Alex Morgan", caller)["candidates"]
        )
        assert users == [["alex.morgan"], ["alex.morgan2"]], users  # each keeps its own user id
    # It stays apart through a re-extraction and a further full pass.
    run = kg.require_extraction().rerun(RerunScope(), "namesake-test-3", dry_run=False)
    assert run["status"] == "completed", run
    _graph(kg).run_resolution()
    assert _morgans(kg) == found
