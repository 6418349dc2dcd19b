"""Contract suites for the knowledge graph ports: `GraphReader` (every runtime) and `ResolutionStore` (PostgreSQL).

Subclass `GraphReaderContract` (and, for the authoritative store, `ResolutionStoreContract`) in a `Test*` class
and provide a `world` fixture that yields an EMPTY `GraphWorld`: the adapter test's builder of a small fixture
world. The suite builds that world itself (`build_world`): documents under two ACL classes, extraction results
saved for their chunks, merges, hub labels. For PostgreSQL the builder commits documents with PostgresStore and
saves extractions with `save()`; a Neo4j builder writes the same to PostgreSQL and projects it before returning.
Every builder call returns only when its effect is visible to `world.reader`.

Entity IDs are the deterministic keys of `kgrag_core.extraction.identity`, keyed with the suite's public key
(`kgrag_testing.contracts.entity_ids`: the world's store adopts it before anything is stored), so the suite
names entities itself.
Readers: `ENG_READER` holds only the engineering class, `HR_READER` only the HR class, `ADMIN` (None) all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Protocol

import pytest

from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.extraction.identity import relation_id
from kgrag_core.extraction.model import (
    ChunkExtraction,
    ClaimItem,
    EntityMention,
    ExtractionKey,
    Modality,
    Polarity,
    RelationItem,
    Tier,
)
from kgrag_core.extraction.records import ClaimStatus
from kgrag_core.graph.among import edges_among_by_single_reads
from kgrag_core.graph.light import LightGraphReads
from kgrag_core.graph.model import DecisionKind, Edge, MergeRecord, PairDecision
from kgrag_core.graph.ports import GraphReader, ResolutionScope, ResolutionStore
from kgrag_testing.contracts.document_store import ENG
from kgrag_testing.contracts.entity_ids import contract_entity_id

HR = AclClass.of(["group:hr"])
ENG_READER: tuple[str, ...] = (ENG.acl_class_id,)
HR_READER: tuple[str, ...] = (HR.acl_class_id,)
ADMIN = None

JAN = datetime(2024, 1, 15, 9, 0, tzinfo=UTC)
FEB = datetime(2024, 2, 15, 9, 0, tzinfo=UTC)

PRIYA = contract_entity_id("Person", "Priya Raman")
P_RAMAN = contract_entity_id("Person", "P. Raman")
DANA = contract_entity_id("Person", "Dana Lee")
ROUTING = contract_entity_id("Team", "Routing")
ATLAS = contract_entity_id("System", "Atlas")
MERCURY_SITE = contract_entity_id("Site", "Mercury")
MERCURY_SYSTEM = contract_entity_id("System", "Mercury")


class GraphWorld(Protocol):
    """How the suite builds its world. Each call's effect is visible to `reader` when it returns."""

    @property
    def reader(self) -> GraphReader: ...

    def add_document(self, doc_id: str, sections: Sequence[str], *, acl: AclClass, at: datetime | None) -> list[Chunk]:
        """Commit an ACTIVE document, one chunk per section (`make_document`); return its chunks."""
        ...

    def extract(self, results: Sequence[ChunkExtraction]) -> None:
        """Store extraction results for chunks of committed documents (ExtractionStore.save)."""
        ...

    def delete_document(self, doc_id: str) -> None: ...

    def merge(self, record: MergeRecord) -> None: ...

    def revert(self, merge_id: str) -> MergeRecord: ...

    def label_hubs(self, min_degree: int) -> int: ...


class ResolutionWorld(GraphWorld, Protocol):
    """A world whose resolution state is stored by the adapter under test."""

    @property
    def resolution(self) -> ResolutionStore: ...


# --- the fixture world -----------------------------------------------------------------------------------


def _result(chunk: Chunk, entities: Sequence[EntityMention], relations: Sequence[RelationItem] = (),
            claims: Sequence[ClaimItem] = ()) -> ChunkExtraction:  # fmt: skip
    key = ExtractionKey(chunk.content_hash, "graph-contract", "1")
    return ChunkExtraction(chunk.chunk_id, key, Tier.LLM, tuple(entities), tuple(relations), tuple(claims))


def _mention(name: str, type_: str, quote: str) -> EntityMention:
    return EntityMention(name, type_, quote, 0.9)


def _rel(subject: str, s_type: str, relation: str, obj: str, o_type: str, quote: str, conf: float) -> RelationItem:
    return RelationItem(subject, s_type, relation, obj, o_type, quote, conf)


def _office(person: str, value: str, quote: str) -> ClaimItem:
    return ClaimItem(person, "Person", "office", value, quote, 0.9)


@dataclasses.dataclass(frozen=True)
class World:
    """The chunks of the fixture world, by what they say."""

    routing_leads: Chunk  # ENG, JAN: Priya Raman LEADS Routing (0.8); office Leipzig
    routing_runs: Chunk  # ENG, JAN: Routing RUNS Atlas (0.7)
    atlas_owns: Chunk  # ENG, FEB: P. Raman OWNS Atlas (0.9); office Berlin
    atlas_leads: Chunk  # ENG, FEB: Priya Raman LEADS Routing (0.6)
    hr_reports: Chunk  # HR, FEB: Priya Raman REPORTS_TO Dana Lee (0.9)
    hr_leads: Chunk  # HR, FEB: Priya Raman LEADS Routing (0.85)
    mercury: Chunk  # ENG, JAN: Mercury the Site and Mercury the System


def build_world(world: GraphWorld) -> World:
    """Four documents: two engineering ones, one HR one (restricted), one with two namesakes."""
    s_leads = "Priya Raman leads the Routing team from the Leipzig office."
    s_runs = "Routing runs the Atlas platform."
    routing_leads, routing_runs = world.add_document("doc-routing", [s_leads, s_runs], acl=ENG, at=JAN)
    a_owns = "P. Raman owns Atlas and works from the Berlin office."
    a_leads = "Priya Raman leads Routing."
    atlas_owns, atlas_leads = world.add_document("doc-atlas", [a_owns, a_leads], acl=ENG, at=FEB)
    h_reports = "Priya Raman reports to Dana Lee."
    h_leads = "Priya Raman leads the Routing team."
    hr_reports, hr_leads = world.add_document("doc-hr", [h_reports, h_leads], acl=HR, at=FEB)
    m_text = "Mercury is the site in Leipzig. The Mercury system tracks pallets."
    [mercury] = world.add_document("doc-mercury", [m_text], acl=ENG, at=JAN)
    world.extract(
        [
            _result(
                routing_leads,
                [_mention("Priya Raman", "Person", s_leads), _mention("Routing", "Team", s_leads)],
                [_rel("Priya Raman", "Person", "LEADS", "Routing", "Team", s_leads, 0.8)],
                [_office("Priya Raman", "Leipzig", s_leads)],
            ),
            _result(
                routing_runs,
                [_mention("Routing", "Team", s_runs), _mention("Atlas", "System", s_runs)],
                [_rel("Routing", "Team", "RUNS", "Atlas", "System", s_runs, 0.7)],
            ),
            _result(
                atlas_owns,
                [_mention("P. Raman", "Person", a_owns), _mention("Atlas", "System", a_owns)],
                [_rel("P. Raman", "Person", "OWNS", "Atlas", "System", a_owns, 0.9)],
                [_office("P. Raman", "Berlin", a_owns)],
            ),
            _result(
                atlas_leads,
                [_mention("Priya Raman", "Person", a_leads)],
                [_rel("Priya Raman", "Person", "LEADS", "Routing", "Team", a_leads, 0.6)],
            ),
            _result(
                hr_reports,
                [_mention("Priya Raman", "Person", h_reports), _mention("Dana Lee", "Person", h_reports)],
                [_rel("Priya Raman", "Person", "REPORTS_TO", "Dana Lee", "Person", h_reports, 0.9)],
            ),
            _result(
                hr_leads,
                [_mention("Priya Raman", "Person", h_leads)],
                [_rel("Priya Raman", "Person", "LEADS", "Routing", "Team", h_leads, 0.85)],
            ),
            _result(mercury, [_mention("Mercury", "Site", m_text), _mention("Mercury", "System", m_text)]),
        ]
    )
    return World(routing_leads, routing_runs, atlas_owns, atlas_leads, hr_reports, hr_leads, mercury)


def merge(merge_id: str, canonical: str, *members: str, decided_by: str = "auto") -> MergeRecord:
    basis = tuple(
        PairDecision(canonical, m, DecisionKind.MERGE, 0.93, (("name", 0.8), ("context", 0.71)), "auto-threshold")
        for m in members
    )
    return MergeRecord(merge_id, canonical, tuple(members), basis, decided_by)


def relations(edges: Sequence[Edge]) -> list[tuple[str, str, str]]:
    return [(e.subject.entity_id, e.relation, e.object.entity_id) for e in edges]


def other_end(edge: Edge, entity: str) -> str:
    return edge.object.entity_id if edge.subject.entity_id == entity else edge.subject.entity_id


def two_hops(reader: GraphReader, start: str, acl: Sequence[str] | None) -> dict[str, int]:
    """Entity ID -> the fewest hops from `start` (at most two), by calling `neighbours` once per entity."""
    origin = reader.entity(start, acl)
    if origin is None:
        return {}
    depth = {origin.entity.entity_id: 0}
    frontier = [origin.entity.entity_id]
    for hop in (1, 2):
        reached: list[str] = []
        for entity in frontier:
            for edge in reader.neighbours(entity, acl):
                nxt = other_end(edge, entity)
                if nxt not in depth:
                    depth[nxt] = hop
                    reached.append(nxt)
        frontier = reached
    return depth


def snapshot(reader: GraphReader, acl: Sequence[str] | None) -> dict[str, object]:
    """Everything a reader returns about the people of the world, to compare before and after."""
    people = (PRIYA, P_RAMAN, DANA, ATLAS, ROUTING)
    return {
        "entities": {e: reader.entity(e, acl) for e in people},
        "neighbours": {e: reader.neighbours(e, acl) for e in people},
        "named": reader.entities_named(["Priya Raman", "P. Raman", "Atlas"], acl),
        "claims": reader.claims_of([PRIYA, P_RAMAN], acl),
    }


# --- GraphReader ------------------------------------------------------------------------------------------


class GraphReaderContract:
    def test_implements_the_port(self, world: GraphWorld) -> None:
        assert isinstance(world.reader, GraphReader)

    def test_empty_world_reads_nothing(self, world: GraphWorld) -> None:
        r = world.reader
        assert r.entities_named(["Priya Raman", " priya RAMAN."], ADMIN) == {"priya raman": []}
        assert r.entities_named([], ADMIN) == {}
        assert r.entity(PRIYA, ADMIN) is None
        assert r.neighbours(PRIYA, ADMIN) == []
        assert r.claims_of([PRIYA], ADMIN) == []
        assert r.claims_of([], ADMIN) == []

    def test_entity_summary(self, world: GraphWorld) -> None:
        build_world(world)
        summary = world.reader.entity(PRIYA, ADMIN)
        assert summary is not None
        assert (summary.entity.entity_id, summary.entity.name, summary.entity.type) == (PRIYA, "Priya Raman", "Person")
        assert summary.aliases == ("Priya Raman",)
        assert summary.members == (PRIYA,)
        assert summary.degree == 2  # LEADS Routing, REPORTS_TO Dana Lee
        assert not summary.is_hub

    def test_restricted_evidence_is_invisible_and_not_counted(self, world: GraphWorld) -> None:
        w = build_world(world)
        r = world.reader
        eng = r.neighbours(PRIYA, ENG_READER)
        assert relations(eng) == [(PRIYA, "LEADS", ROUTING)]
        assert eng[0].evidence_chunk_ids == tuple(sorted([w.routing_leads.chunk_id, w.atlas_leads.chunk_id]))
        admin = r.neighbours(PRIYA, ADMIN)
        assert relations(admin) == [(PRIYA, "LEADS", ROUTING), (PRIYA, "REPORTS_TO", DANA)]
        assert admin[0].evidence_count == 3
        hr = r.neighbours(PRIYA, HR_READER)
        assert {e.relation: e.evidence_chunk_ids for e in hr} == {
            "LEADS": (w.hr_leads.chunk_id,),
            "REPORTS_TO": (w.hr_reports.chunk_id,),
        }
        eng_priya = r.entity(PRIYA, ENG_READER)
        assert eng_priya is not None
        assert eng_priya.degree == 1
        # Dana Lee is named only in the HR document.
        assert r.entity(DANA, ENG_READER) is None
        assert r.neighbours(DANA, ENG_READER) == []
        assert r.entities_named(["Dana Lee"], ENG_READER) == {"dana lee": []}
        assert [s.entity.entity_id for s in r.entities_named(["Dana Lee"], HR_READER)["dana lee"]] == [DANA]
        # A reader with no class sees nothing at all.
        assert r.entity(PRIYA, ()) is None
        assert r.neighbours(PRIYA, ()) == []

    def test_edge_fields(self, world: GraphWorld) -> None:
        build_world(world)
        r = world.reader
        [eng] = r.neighbours(PRIYA, ENG_READER)
        assert eng.relation_id == relation_id(PRIYA, "LEADS", ROUTING, None, Polarity.POSITIVE, Modality.FACT)
        assert (eng.subject.name, eng.subject.type, eng.object.name, eng.object.type) == (
            "Priya Raman", "Person", "Routing", "Team",
        )  # fmt: skip
        assert (eng.polarity, eng.modality, eng.valid_from, eng.valid_to) == (
            Polarity.POSITIVE, Modality.FACT, None, None,
        )  # fmt: skip
        assert eng.confidence == pytest.approx(0.8)  # the HR evidence's 0.85 is not the reader's to see
        assert eng.latest_written == FEB.date()
        assert eng.first_written == JAN.date()  # the January and February engineering documents both say so
        leads = next(e for e in r.neighbours(PRIYA, ADMIN) if e.relation == "LEADS")
        assert leads.confidence == pytest.approx(0.85)
        [runs] = r.neighbours(ATLAS, ENG_READER, relations=["RUNS"])
        assert runs.latest_written == JAN.date() and runs.first_written == JAN.date()

    def test_neighbours_order_filter_and_limit(self, world: GraphWorld) -> None:
        build_world(world)
        r = world.reader
        # LEADS has two visible evidence chunks, RUNS one.
        assert relations(r.neighbours(ROUTING, ENG_READER)) == [(PRIYA, "LEADS", ROUTING), (ROUTING, "RUNS", ATLAS)]
        assert relations(r.neighbours(ROUTING, ENG_READER, relations=["RUNS"])) == [(ROUTING, "RUNS", ATLAS)]
        assert relations(r.neighbours(ROUTING, ENG_READER, limit=1)) == [(PRIYA, "LEADS", ROUTING)]
        assert r.neighbours(ROUTING, ENG_READER, relations=["NO_SUCH"]) == []
        # Atlas: OWNS (0.9) and RUNS (0.7) have one chunk each; confidence decides.
        assert relations(r.neighbours(ATLAS, ENG_READER)) == [(P_RAMAN, "OWNS", ATLAS), (ROUTING, "RUNS", ATLAS)]

    def test_deleting_a_document_removes_its_facts_from_every_read(self, world: GraphWorld) -> None:
        build_world(world)
        world.delete_document("doc-hr")
        r = world.reader
        assert relations(r.neighbours(PRIYA, ADMIN)) == [(PRIYA, "LEADS", ROUTING)]
        assert r.neighbours(PRIYA, ADMIN)[0].evidence_count == 2
        assert r.entity(DANA, ADMIN) is None
        assert r.entities_named(["Dana Lee"], ADMIN) == {"dana lee": []}
        summary = r.entity(PRIYA, ADMIN)
        assert summary is not None
        assert summary.degree == 1
        world.delete_document("doc-atlas")
        assert r.entity(P_RAMAN, ADMIN) is None
        assert relations(r.neighbours(ATLAS, ADMIN)) == [(ROUTING, "RUNS", ATLAS)]
        assert [c.value for c in r.claims_of([PRIYA, P_RAMAN], ADMIN)] == ["Leipzig"]

    def test_names_stay_ambiguous(self, world: GraphWorld) -> None:
        build_world(world)
        named = world.reader.entities_named(["Mercury", "MERCURY.", "Priya Raman", "Nobody"], ENG_READER)
        assert set(named) == {"mercury", "priya raman", "nobody"}
        assert {(s.entity.entity_id, s.entity.type) for s in named["mercury"]} == {
            (MERCURY_SITE, "Site"),
            (MERCURY_SYSTEM, "System"),
        }
        assert [s.entity.entity_id for s in named["priya raman"]] == [PRIYA]
        assert named["nobody"] == []

    def test_merge_shows_the_union_with_canonical_endpoints(self, world: GraphWorld) -> None:
        build_world(world)
        world.merge(merge("m1", PRIYA, P_RAMAN))
        r = world.reader
        summary = r.entity(P_RAMAN, ENG_READER)
        assert summary is not None
        assert (summary.entity.entity_id, summary.entity.name) == (PRIYA, "Priya Raman")
        assert summary.members == tuple(sorted([PRIYA, P_RAMAN]))
        assert set(summary.aliases) == {"Priya Raman", "P. Raman"}
        assert summary.degree == 2
        assert r.entity(PRIYA, ENG_READER) == summary
        assert set(relations(r.neighbours(P_RAMAN, ENG_READER))) == {
            (PRIYA, "LEADS", ROUTING),
            (PRIYA, "OWNS", ATLAS),
        }
        [owns] = r.neighbours(ATLAS, ENG_READER, relations=["OWNS"])
        assert (owns.subject.entity_id, owns.subject.name) == (PRIYA, "Priya Raman")
        assert [s.entity.entity_id for s in r.entities_named(["P. Raman"], ENG_READER)["p. raman"]] == [PRIYA]
        # Two hops from Routing now reach Atlas through the merged person as well as directly.
        assert two_hops(r, ROUTING, ENG_READER) == {ROUTING: 0, PRIYA: 1, ATLAS: 1}

    def test_revert_restores_exactly(self, world: GraphWorld) -> None:
        build_world(world)
        r = world.reader
        before = {acl: snapshot(r, acl) for acl in (ENG_READER, ADMIN)}
        world.merge(merge("m1", PRIYA, P_RAMAN))
        assert snapshot(r, ENG_READER) != before[ENG_READER]
        reverted = world.revert("m1")
        assert reverted.reverted
        assert reverted.members == (P_RAMAN,)
        assert {acl: snapshot(r, acl) for acl in (ENG_READER, ADMIN)} == before

    def test_claims_follow_the_cluster(self, world: GraphWorld) -> None:
        build_world(world)
        r = world.reader
        apart = r.claims_of([PRIYA, P_RAMAN], ENG_READER)
        assert {(c.entity_id, c.value, c.status) for c in apart} == {
            (PRIYA, "Leipzig", ClaimStatus.CURRENT),
            (P_RAMAN, "Berlin", ClaimStatus.CURRENT),
        }
        world.merge(merge("m1", PRIYA, P_RAMAN))
        together = r.claims_of([P_RAMAN], ENG_READER)
        assert [(c.entity_id, c.entity_name, c.value, c.status) for c in together] == [
            (PRIYA, "Priya Raman", "Leipzig", ClaimStatus.SUPERSEDED),  # written in January
            (PRIYA, "Priya Raman", "Berlin", ClaimStatus.CURRENT),  # written in February
        ]
        assert together[0].superseded_by == together[1].claim_id
        assert r.claims_of([PRIYA, P_RAMAN], ENG_READER) == together  # one cluster, listed once

    def test_cluster_outlives_its_label_entity(self, world: GraphWorld) -> None:
        """The canonical ID labels a cluster; when its own entity loses all evidence, the cluster still reads."""
        build_world(world)
        world.merge(merge("m1", P_RAMAN, PRIYA))
        world.delete_document("doc-atlas")  # P. Raman's only document
        r = world.reader
        summary = r.entity(PRIYA, ENG_READER)
        assert summary is not None
        # The label's own id and name are gone with its evidence: the cluster goes by its visible member.
        assert (summary.entity.entity_id, summary.entity.name) == (PRIYA, "Priya Raman")
        assert summary.members == (PRIYA,)
        assert summary.aliases == ("Priya Raman",)
        [leads] = r.neighbours(PRIYA, ENG_READER)
        assert leads.subject == summary.entity
        assert r.entity(summary.entity.entity_id, ENG_READER) == summary
        # The label id itself has no evidence left: it answers as an unknown id, to an admin too.
        assert r.entity(P_RAMAN, ADMIN) is None and r.neighbours(P_RAMAN, ADMIN) == []

    def test_a_cluster_shows_only_what_the_reader_may_see(self, world: GraphWorld) -> None:
        """Labelled by an entity named only in the HR document, the cluster must not leak that id or name."""
        build_world(world)
        world.merge(merge("m1", DANA, PRIYA))
        r = world.reader
        eng = r.entity(PRIYA, ENG_READER)
        assert eng is not None
        assert (eng.entity.entity_id, eng.entity.name) == (PRIYA, "Priya Raman")  # never the label DANA
        assert (eng.aliases, eng.members, eng.degree) == (("Priya Raman",), (PRIYA,), 1)
        assert r.entities_named(["Dana Lee"], ENG_READER) == {"dana lee": []}
        [named] = r.entities_named(["Priya Raman"], ENG_READER)["priya raman"]
        assert named.entity.entity_id == PRIYA
        [leads] = r.neighbours(PRIYA, ENG_READER)
        assert (leads.subject.entity_id, leads.subject.name) == (PRIYA, "Priya Raman")
        # The edge's id is keyed by the ids shown: one keyed by DANA would tell (the formula is public) that
        # the cluster has a member this reader cannot see.
        fact = (None, Polarity.POSITIVE, Modality.FACT)
        assert leads.relation_id == relation_id(PRIYA, "LEADS", ROUTING, *fact)
        assert {c.entity_id for c in r.claims_of([PRIYA], ENG_READER)} == {PRIYA}
        # Asking for the label by id answers exactly as an unknown id does.
        assert r.entity(DANA, ENG_READER) is None and r.entity("ent_unknown", ENG_READER) is None
        assert r.neighbours(DANA, ENG_READER) == [] == r.neighbours("ent_unknown", ENG_READER)
        assert r.claims_of([DANA], ENG_READER) == [] == r.claims_of(["ent_unknown"], ENG_READER)
        # Positive controls: readers of the HR document and admins see the label, its name and its edges.
        admin = r.entity(PRIYA, ADMIN)
        assert admin is not None
        assert (admin.entity.entity_id, admin.entity.name) == (DANA, "Dana Lee")
        assert admin.members == tuple(sorted([PRIYA, DANA]))
        admin_leads = next(e for e in r.neighbours(PRIYA, ADMIN) if e.relation == "LEADS")
        assert admin_leads.relation_id == relation_id(DANA, "LEADS", ROUTING, *fact)
        hr = r.entity(DANA, HR_READER)
        assert hr is not None
        assert (hr.entity.entity_id, hr.entity.name, hr.degree) == (DANA, "Dana Lee", 2)  # LEADS, REPORTS_TO (a loop)
        assert {e.subject.entity_id for e in r.neighbours(DANA, HR_READER)} == {DANA}

    def test_hubs_are_labelled_and_flagged(self, world: GraphWorld) -> None:
        build_world(world)
        r = world.reader
        # Distinct edges over all live evidence: Priya 2, Routing 2, Atlas 2, P. Raman 1, Dana Lee 1.
        assert world.label_hubs(2) == 3
        hubs = {e for e in (PRIYA, ROUTING, ATLAS, P_RAMAN, DANA) if (s := r.entity(e, ADMIN)) and s.is_hub}
        assert hubs == {PRIYA, ROUTING, ATLAS}
        # A hub to a reader only by the edges that reader sees: engineering sees one of Priya's two edges.
        eng_priya = r.entity(PRIYA, ENG_READER)
        assert eng_priya is not None
        assert (eng_priya.is_hub, eng_priya.degree) == (False, 1)
        hr_priya = r.entity(PRIYA, HR_READER)
        assert hr_priya is not None
        assert (hr_priya.is_hub, hr_priya.degree) == (True, 2)  # positive control: HR sees both
        assert r.hubs_among([PRIYA], ENG_READER) == set() and r.hubs_among([PRIYA], HR_READER) == {PRIYA}
        assert world.label_hubs(3) == 0  # replaces the set
        routing = r.entity(ROUTING, ADMIN)
        assert routing is not None
        assert not routing.is_hub
        world.merge(merge("m1", PRIYA, P_RAMAN))
        assert world.label_hubs(3) == 1  # LEADS, REPORTS_TO, OWNS: the cluster's edges count together
        merged = r.entity(P_RAMAN, ADMIN)
        assert merged is not None
        assert (merged.entity.entity_id, merged.is_hub, merged.degree) == (PRIYA, True, 3)
        # The check traversal uses agrees, and a member id answers for its cluster.
        assert r.hubs_among([PRIYA, P_RAMAN, ROUTING, ATLAS, "ent_missing"], ADMIN) == {PRIYA, P_RAMAN}
        assert r.hubs_among([PRIYA, P_RAMAN], ENG_READER) == set()  # LEADS and OWNS: 2 of the 3 edges
        assert r.hubs_among([], ADMIN) == set()

    def test_restricted_edges_never_make_a_hub(self, world: GraphWorld) -> None:
        """One public edge and three restricted ones: a hub to HR readers and admins, not to engineering."""
        text = "Hubert runs Routing."
        [public] = world.add_document("doc-hub-public", [text], acl=ENG, at=JAN)
        secrets = [f"Hubert advises Board{i}." for i in range(3)]
        restricted = world.add_document("doc-hub-secret", secrets, acl=HR, at=FEB)
        hubert, routing = _mention("Hubert", "Person", text), _mention("Routing", "Team", text)
        results = [_result(public, [hubert, routing], [_rel("Hubert", "Person", "RUNS", "Routing", "Team", text, 0.9)])]
        for i, chunk in enumerate(restricted):
            board = f"Board{i}"
            results.append(
                _result(
                    chunk,
                    [_mention("Hubert", "Person", chunk.text), _mention(board, "Team", chunk.text)],
                    [_rel("Hubert", "Person", "ADVISES", board, "Team", chunk.text, 0.9)],
                )
            )
        world.extract(results)
        assert world.label_hubs(3) == 1
        r, hub = world.reader, contract_entity_id("Person", "Hubert")
        eng = r.entity(hub, ENG_READER)
        assert eng is not None and (eng.degree, eng.is_hub) == (1, False)
        assert r.hubs_among([hub], ENG_READER) == set()
        hr = r.entity(hub, HR_READER)
        assert hr is not None and (hr.degree, hr.is_hub) == (3, True)
        admin = r.entity(hub, ADMIN)
        assert admin is not None and (admin.degree, admin.is_hub) == (4, True)
        assert r.hubs_among([hub], HR_READER) == {hub} == r.hubs_among([hub], ADMIN)
        # The same answer through the name index a search links questions with.
        [linked] = r.entities_named(["Hubert"], ENG_READER)["hubert"]
        assert (linked.entity.entity_id, linked.is_hub) == (hub, False)

    def test_records_sharing_an_email_show_each_reader_only_its_own_evidence(self, world: GraphWorld) -> None:
        """A restricted record and a public one share an e-mail, so one entity row; it stores the restricted
        record's name (written first) and the union of both records' identifiers. Readers of the public record
        must get neither the restricted name nor the restricted user id, nor find the entity by that name."""
        secret_text = "Jordan Blake, jb@example.com, user u-secret-77."
        [secret] = world.add_document("doc-person-secret", [secret_text], acl=HR, at=JAN)
        public_text = "J. Blake (jb@example.com) works from the Leipzig office."
        [public] = world.add_document("doc-person-public", [public_text], acl=ENG, at=FEB)
        email, user = ("email", "jb@example.com"), ("user_id", "u-secret-77")
        world.extract([_result(secret, [EntityMention("Jordan Blake", "Person", secret_text, 0.9, (email, user))])])
        world.extract(
            [
                _result(
                    public,
                    [EntityMention("J. Blake", "Person", public_text, 0.9, (email,))],
                    claims=[_office("J. Blake", "Leipzig", public_text)],
                )
            ]
        )
        r, person = world.reader, contract_entity_id("Person", "x", (email,))
        [eng] = r.entities_named(["J. Blake"], ENG_READER)["j. blake"]
        assert (eng.entity.entity_id, eng.entity.name, eng.entity.type) == (person, "J. Blake", "Person")
        assert (eng.aliases, eng.strong_ids) == (("J. Blake",), (email,))
        assert r.entity(person, ENG_READER) == eng
        assert r.entities_named(["Jordan Blake"], ENG_READER) == {"jordan blake": []}  # no probing by the name
        [office] = r.claims_of([person], ENG_READER)
        assert (office.entity_name, office.value) == ("J. Blake", "Leipzig")  # filed under the public name
        # Positive controls: HR reads the restricted record, an admin both.
        [hr] = r.entities_named(["Jordan Blake"], HR_READER)["jordan blake"]
        assert (hr.entity.entity_id, hr.entity.name, hr.strong_ids) == (person, "Jordan Blake", (email, user))
        admin = r.entity(person, ADMIN)
        assert admin is not None
        assert (admin.entity.name, set(admin.aliases), admin.strong_ids) == (
            "Jordan Blake", {"Jordan Blake", "J. Blake"}, (email, user),
        )  # fmt: skip

    def test_two_hops_by_calling_neighbours_twice(self, world: GraphWorld) -> None:
        build_world(world)
        r = world.reader
        assert two_hops(r, P_RAMAN, ENG_READER) == {P_RAMAN: 0, ATLAS: 1, ROUTING: 2}
        assert two_hops(r, DANA, ADMIN) == {DANA: 0, PRIYA: 1, ROUTING: 2}
        assert two_hops(r, DANA, ENG_READER) == {}  # the first hop is restricted: nothing to start from
        assert two_hops(r, DANA, HR_READER) == {DANA: 0, PRIYA: 1, ROUTING: 2}

    def test_batched_reads_are_the_single_reads_per_id(self, world: GraphWorld) -> None:
        """`entities_by_id` / `neighbours_by_id` (community views read many members at once) answer each id
        exactly as `entity` / `neighbours` do, for every reader, merged clusters and limits included."""
        w = build_world(world)
        r = world.reader
        ids = [PRIYA, P_RAMAN, DANA, ATLAS, ROUTING, MERCURY_SITE, "ent_unknown", PRIYA]

        def same(acl: Sequence[str] | None, limit: int) -> None:
            singles = {i: s for i in ids if (s := r.entity(i, acl)) is not None}
            assert r.entities_by_id(ids, acl) == singles
            expected = {i: r.neighbours(i, acl, limit=limit) for i in dict.fromkeys(ids)}
            assert r.neighbours_by_id(ids, acl, limit=limit) == expected
            runs = {i: r.neighbours(i, acl, relations=["RUNS"]) for i in dict.fromkeys(ids)}
            assert r.neighbours_by_id(ids, acl, relations=["RUNS"]) == runs

        for acl in (ENG_READER, HR_READER, ADMIN, ()):
            for limit in (1, 50):
                same(acl, limit)
        assert r.entities_by_id([], ADMIN) == {} and r.neighbours_by_id([], ADMIN) == {}
        # The outsider (engineering) never gets the HR-only member or the HR-only edge ...
        eng = r.entities_by_id([PRIYA, DANA], ENG_READER)
        assert set(eng) == {PRIYA}
        eng_edges = r.neighbours_by_id([PRIYA, DANA], ENG_READER)
        assert eng_edges[DANA] == [] and relations(eng_edges[PRIYA]) == [(PRIYA, "LEADS", ROUTING)]
        assert w.hr_reports.chunk_id not in {c for e in eng_edges[PRIYA] for c in e.evidence_chunk_ids}
        # ... while the HR reader (positive control) gets both, with the restricted evidence.
        assert set(r.entities_by_id([PRIYA, DANA], HR_READER)) == {PRIYA, DANA}
        hr_edges = r.neighbours_by_id([PRIYA, DANA], HR_READER)
        assert (PRIYA, "REPORTS_TO", DANA) in relations(hr_edges[DANA])
        assert {e.relation: e.evidence_chunk_ids for e in hr_edges[PRIYA]}["REPORTS_TO"] == (w.hr_reports.chunk_id,)
        # A merge labelled by the HR-only entity: batched reads hide the label exactly as single reads do.
        world.merge(merge("m1", DANA, PRIYA))
        for acl in (ENG_READER, HR_READER, ADMIN):
            same(acl, 50)
        merged = r.entities_by_id([PRIYA, DANA], ENG_READER)
        assert set(merged) == {PRIYA} and merged[PRIYA].entity.entity_id == PRIYA
        admin = r.entities_by_id([PRIYA, DANA], ADMIN)
        assert admin[PRIYA].entity.entity_id == DANA == admin[DANA].entity.entity_id  # control: one cluster

    def test_edges_among_are_the_single_reads_kept_inside(self, world: GraphWorld) -> None:
        """`edges_among` (a community view's edges: both ends in the set) is each id's `neighbours` kept to
        the set, for every reader, set, limit, relation filter and an HR-only merge label."""
        build_world(world)
        r = world.reader
        sets = [
            [PRIYA, DANA, ROUTING, ATLAS, P_RAMAN, "ent_unknown", PRIYA],
            [PRIYA, ROUTING],
            [PRIYA, DANA],
            [ATLAS, MERCURY_SITE],
        ]

        def same(acl: Sequence[str] | None) -> None:
            for ids in sets:
                for limit in (1, 50):
                    assert r.edges_among(ids, acl, limit=limit) == edges_among_by_single_reads(r, ids, acl, limit=limit)
                runs = edges_among_by_single_reads(r, ids, acl, relations=["RUNS"])
                assert r.edges_among(ids, acl, relations=["RUNS"]) == runs

        for acl in (ENG_READER, HR_READER, ADMIN, ()):
            same(acl)
        assert r.edges_among([], ADMIN) == {}
        # Only edges inside the set: Priya's edge to Routing is not among {Priya, Dana} ...
        assert relations(r.edges_among([PRIYA, DANA], ADMIN)[PRIYA]) == [(PRIYA, "REPORTS_TO", DANA)]
        # ... and the outsider (engineering) does not get the HR-only edge, while the HR reader does.
        assert r.edges_among([PRIYA, DANA], ENG_READER) == {PRIYA: [], DANA: []}
        assert relations(r.edges_among([PRIYA, DANA], HR_READER)[DANA]) == [(PRIYA, "REPORTS_TO", DANA)]
        assert (PRIYA, "LEADS", ROUTING) in relations(r.edges_among([PRIYA, ROUTING], ENG_READER)[ROUTING])
        world.merge(merge("m1", DANA, PRIYA))
        for acl in (ENG_READER, HR_READER, ADMIN):
            same(acl)

    def test_edges_among_name_each_end_only_from_evidence_the_reader_may_read(self, world: GraphWorld) -> None:
        """A hub whose entity row holds its restricted name (an HR record, written first) and whose only
        public mention names it otherwise: the outsider's edges inside a set name it by the public mention
        only; the HR reader (positive control) gets the restricted name on the HR edge."""
        secret_text = "Jordan Blake mentors Dana Lee. Jordan Blake, jb@example.com."
        [secret] = world.add_document("doc-hub-secret", [secret_text], acl=HR, at=JAN)
        public_text = "J. Blake (jb@example.com) runs Atlas, Routing and Mercury."
        [public] = world.add_document("doc-hub-public", [public_text], acl=ENG, at=FEB)
        email = ("email", "jb@example.com")
        world.extract(
            [
                _result(
                    secret,
                    [
                        EntityMention("Jordan Blake", "Person", secret_text, 0.9, (email,)),
                        _mention("Dana Lee", "Person", secret_text),
                    ],
                    [_rel("Jordan Blake", "Person", "MENTORS", "Dana Lee", "Person", secret_text, 0.9)],
                )
            ]
        )
        ends = [("Atlas", "System"), ("Routing", "Team"), ("Mercury", "System")]
        world.extract(
            [
                _result(
                    public,
                    [
                        EntityMention("J. Blake", "Person", public_text, 0.9, (email,)),
                        *(_mention(n, t, public_text) for n, t in ends),
                    ],
                    [_rel("J. Blake", "Person", "RUNS", n, t, public_text, 0.8) for n, t in ends],
                )
            ]
        )
        assert world.label_hubs(3) == 1
        r, hub = world.reader, contract_entity_id("Person", "x", (email,))
        members = [hub, ATLAS, DANA]
        eng = r.edges_among(members, ENG_READER)
        assert relations(eng[hub]) == [(hub, "RUNS", ATLAS)] and eng[DANA] == []
        assert {e.subject.name for e in eng[hub]} == {"J. Blake"}
        assert "Jordan Blake" not in repr(eng) and secret.chunk_id not in repr(eng)
        # Positive control: the HR reader's edge inside the set carries the restricted name.
        hr = r.edges_among(members, HR_READER)
        assert relations(hr[hub]) == [(hub, "MENTORS", DANA)]
        assert hr[hub][0].subject.name == "Jordan Blake"


class LightGraphReadsContract:
    """`LightGraphReads` (`kgrag_core.graph.light`, the GLOBAL route's reads): for an adapter that has its own,
    exactly the ids and entities of the full reads, for every reader, merge and deletion; never a name only
    restricted evidence gives."""

    NAMES = ("Priya Raman", "P. Raman", "Dana Lee", "Atlas", "Routing", "Mercury", "Nobody Here", "priya raman")
    IDS = (PRIYA, P_RAMAN, DANA, ATLAS, ROUTING, MERCURY_SITE, MERCURY_SYSTEM, "ent_unknown", PRIYA)

    def _same(self, reader: GraphReader, acl: Sequence[str] | None) -> None:
        light = _light(reader)
        full = reader.entities_named(list(self.NAMES), acl)
        ids = {n: sorted({s.entity.entity_id for s in found}) for n, found in full.items()}
        assert light.entity_ids_named(list(self.NAMES), acl) == ids
        refs = {i: s.entity for i, s in reader.entities_by_id(list(self.IDS), acl).items()}
        assert light.entity_refs_by_id(list(self.IDS), acl) == refs
        for limit in (1, 50):
            among = reader.edges_among(list(self.IDS), acl, limit=limit)
            assert light.edges_among_named(refs, acl, limit=limit) == {i: among[i] for i in refs}
        assert light.claims_of_named(refs, acl) == reader.claims_of(list(self.IDS), acl)

    def test_light_reads_are_the_full_reads(self, world: GraphWorld) -> None:
        build_world(world)
        r = _light(world.reader)
        for acl in (ENG_READER, HR_READER, ADMIN, ()):
            self._same(world.reader, acl)
        assert r.entity_ids_named([], ADMIN) == {} and r.entity_refs_by_id([], ADMIN) == {}
        # Not vacuous: the namesakes stay two, the HR-only entity is the HR reader's alone.
        assert r.entity_ids_named(["Mercury"], ADMIN) == {"mercury": sorted([MERCURY_SITE, MERCURY_SYSTEM])}
        assert r.entity_ids_named(["Dana Lee"], ENG_READER) == {"dana lee": []}
        assert r.entity_ids_named(["Dana Lee"], HR_READER) == {"dana lee": [DANA]}
        # A merge labelled by the HR-only entity: the outsider gets the cluster under a member it may see.
        world.merge(merge("m1", DANA, PRIYA))
        for acl in (ENG_READER, HR_READER, ADMIN):
            self._same(world.reader, acl)
        assert r.entity_ids_named(["Priya Raman"], ENG_READER) == {"priya raman": [PRIYA]}
        assert r.entity_ids_named(["Priya Raman"], ADMIN) == {"priya raman": [DANA]}

    def test_light_reads_name_an_entity_only_from_evidence_the_reader_may_read(self, world: GraphWorld) -> None:
        """An entity whose restricted record (written first) names it "Jordan Blake" and whose only public
        mention names it "J. Blake": the outsider gets "J. Blake" and cannot find it by the restricted name;
        the HR reader (positive control) gets "Jordan Blake"; once the HR document is deleted, not even the
        HR reader does."""
        secret_text = "Jordan Blake, jb@example.com, user u-secret-77."
        [secret] = world.add_document("doc-light-secret", [secret_text], acl=HR, at=JAN)
        public_text = "J. Blake (jb@example.com) works from the Leipzig office."
        [public] = world.add_document("doc-light-public", [public_text], acl=ENG, at=FEB)
        email = ("email", "jb@example.com")
        world.extract([_result(secret, [EntityMention("Jordan Blake", "Person", secret_text, 0.9, (email,))])])
        world.extract(
            [
                _result(
                    public,
                    [EntityMention("J. Blake", "Person", public_text, 0.9, (email,))],
                    claims=[_office("J. Blake", "Leipzig", public_text)],
                )
            ]
        )
        r, person = _light(world.reader), contract_entity_id("Person", "x", (email,))
        names = ["Jordan Blake", "J. Blake"]
        eng = r.entity_refs_by_id([person], ENG_READER)
        assert eng[person].name == "J. Blake" and "Jordan Blake" not in repr(eng)
        assert r.entity_ids_named(names, ENG_READER) == {"jordan blake": [], "j. blake": [person]}
        [office] = r.claims_of_named(eng, ENG_READER)
        assert (office.entity_name, office.value) == ("J. Blake", "Leipzig") and "Jordan Blake" not in repr(office)
        hr = r.entity_refs_by_id([person], HR_READER)  # positive control
        assert hr[person].name == "Jordan Blake"
        assert r.entity_ids_named(names, HR_READER) == {"jordan blake": [person], "j. blake": []}
        for acl in (ENG_READER, HR_READER, ADMIN):
            full = world.reader.entities_by_id([person], acl)
            assert r.entity_refs_by_id([person], acl) == {i: s.entity for i, s in full.items()}
        world.delete_document("doc-light-secret")
        assert r.entity_refs_by_id([person], HR_READER) == {}
        assert r.entity_ids_named(names, HR_READER) == {"jordan blake": [], "j. blake": []}
        assert "Jordan Blake" not in repr(r.entity_refs_by_id([person], ADMIN))
        assert r.entity_refs_by_id([person], ENG_READER)[person].name == "J. Blake"


def _light(reader: GraphReader) -> LightGraphReads:
    assert isinstance(reader, LightGraphReads), "this adapter has no light reads of its own"
    return reader


# --- ResolutionStore --------------------------------------------------------------------------------------


class ResolutionStoreContract:
    def test_implements_the_port(self, world: ResolutionWorld) -> None:
        assert isinstance(world.resolution, ResolutionStore)

    def test_empty_store(self, world: ResolutionWorld) -> None:
        res = world.resolution
        assert res.profiles() == []
        assert res.profiles([]) == []
        assert res.canonical_of(["ent_x"]) == {"ent_x": "ent_x"}
        assert res.merge_log() == []
        assert res.review_queue() == []
        assert res.label_hubs(1) == 0

    def test_profiles(self, world: ResolutionWorld) -> None:
        w = build_world(world)
        res = world.resolution
        [priya] = res.profiles([PRIYA])
        assert (priya.entity_id, priya.type, priya.name, priya.aliases) == (PRIYA, "Person", "Priya Raman", ())
        assert priya.attributes == (("office", "Leipzig"),)
        assert priya.neighbours == tuple(sorted([ROUTING, DANA]))
        assert priya.mentions == 4
        quotes = {w.routing_leads.text, w.atlas_leads.text, w.hr_reports.text, w.hr_leads.text}
        parts = priya.context.split(" … ")
        assert len(parts) == 3
        assert set(parts) <= quotes
        every = res.profiles()
        assert [p.entity_id for p in every] == sorted(
            [PRIYA, P_RAMAN, DANA, ROUTING, ATLAS, MERCURY_SITE, MERCURY_SYSTEM]
        )
        # Neighbours are canonical: after a merge, Atlas's owner is the cluster.
        world.merge(merge("m1", PRIYA, P_RAMAN))
        [atlas] = res.profiles([ATLAS])
        assert atlas.neighbours == tuple(sorted([PRIYA, ROUTING]))

    def test_profiles_list_other_surface_forms_as_aliases(self, world: ResolutionWorld) -> None:
        [chunk] = world.add_document("doc-ids", ["Priya (priya@example.com) and P. Raman"], acl=ENG, at=JAN)
        ids = (("email", "priya@example.com"),)
        world.extract(
            [
                _result(
                    chunk,
                    [
                        EntityMention("Priya Raman", "Person", chunk.text, 0.9, ids),
                        EntityMention("Priya", "Person", chunk.text, 0.8, ids),
                    ],
                )
            ]
        )
        [profile] = world.resolution.profiles()
        assert profile.strong_ids == ids
        assert {profile.name, *profile.aliases} == {"Priya Raman", "Priya"}
        assert profile.mentions == 2
        summary = world.reader.entity(profile.entity_id, ENG_READER)
        assert summary is not None
        assert summary.strong_ids == ids

    def test_entities_near_documents_is_what_an_incremental_pass_compares(self, world: ResolutionWorld) -> None:
        build_world(world)
        res = world.resolution
        assert res.entities_near_documents([]) == [] and res.entities_near_documents(["doc-none"]) == []
        # Mercury's document names only the two Mercurys; no other name shares a token with them.
        assert res.entities_near_documents(["doc-mercury"]) == sorted([MERCURY_SITE, MERCURY_SYSTEM])
        # The HR document names Priya Raman, Dana Lee and Routing; "P. Raman" shares "raman". Atlas shares
        # nothing with them and stays out.
        assert res.entities_near_documents(["doc-hr"]) == sorted([PRIYA, P_RAMAN, DANA, ROUTING])
        # A cluster comes whole: after Mercury the Site joins Dana Lee's cluster, Dana's document brings it.
        world.merge(merge("m-odd", DANA, MERCURY_SITE))
        assert MERCURY_SITE in res.entities_near_documents(["doc-hr"])
        # A shared strong identifier reaches a name with no token in common.
        [chunk] = world.add_document("doc-mc", ["MC wrote (mc@example.com)."], acl=ENG, at=JAN)
        [other] = world.add_document("doc-maria", ["Maria Chen (mc@example.com)."], acl=ENG, at=JAN)
        # Two entities (their ids come from their first strong identifier: a badge, an email) sharing an email.
        ids = (("badge", "7"), ("email", "MC@example.com"))
        world.extract([_result(chunk, [EntityMention("MC", "Person", chunk.text, 0.9, ids)])])
        world.extract(
            [_result(other, [EntityMention("Maria Chen", "Person", other.text, 0.9, (("email", "mc@example.com"),))])]
        )
        near = res.entities_near_documents(["doc-mc"])
        assert {p.name for p in res.profiles(near)} == {"MC", "Maria Chen"}

    def test_incremental_scope_follows_tokens_within_a_type_and_under_the_cap(self, world: ResolutionWorld) -> None:
        build_world(world)
        res = world.resolution
        assert res.incremental_scope([], 50) == ResolutionScope((), ())
        assert res.incremental_scope(["doc-none"], 50) == ResolutionScope((), ())
        # The HR document names Priya Raman, Dana Lee and Routing; "P. Raman" (a Person too) shares "raman".
        hr = res.incremental_scope(["doc-hr"], 50)
        assert hr.changed == tuple(sorted([PRIYA, DANA, ROUTING]))
        assert hr.entities == tuple(sorted([PRIYA, P_RAMAN, DANA, ROUTING]))
        # Two people hold "raman": over a cap of one it is a block blocking would skip, so it is not followed
        # (and only the documents' own entities are left); at a cap of two it is.
        assert res.incremental_scope(["doc-hr"], 1).entities == hr.changed
        assert res.incremental_scope(["doc-hr"], 2) == hr
        # The two Mercurys share a token but not a type: each is in the scope only as its document's entity.
        mercury = res.incremental_scope(["doc-mercury"], 50)
        assert mercury.entities == mercury.changed == tuple(sorted([MERCURY_SITE, MERCURY_SYSTEM]))
        assert res.incremental_scope(["doc-hr", "doc-mercury"], 50).changed == tuple(
            sorted([PRIYA, DANA, ROUTING, MERCURY_SITE, MERCURY_SYSTEM])
        )
        # A cluster comes whole, as in entities_near_documents.
        world.merge(merge("m-odd", DANA, MERCURY_SITE))
        merged = res.incremental_scope(["doc-hr"], 50)
        assert MERCURY_SITE in merged.entities and MERCURY_SITE not in merged.changed

    def test_merge_and_canonical_of(self, world: ResolutionWorld) -> None:
        build_world(world)
        res = world.resolution
        record = merge("m1", PRIYA, P_RAMAN)
        world.merge(record)
        assert res.canonical_of([PRIYA, P_RAMAN, DANA, "ent_unknown"]) == {
            PRIYA: PRIYA,
            P_RAMAN: PRIYA,
            DANA: DANA,
            "ent_unknown": "ent_unknown",
        }
        assert res.merge_log() == [record]
        world.merge(record)  # the same merge again changes nothing
        assert res.merge_log() == [record]
        with pytest.raises(ValueError, match="m1"):
            world.merge(merge("m1", PRIYA, DANA))

    def test_merging_into_a_member_joins_the_clusters(self, world: ResolutionWorld) -> None:
        build_world(world)
        res = world.resolution
        world.merge(merge("m1", PRIYA, P_RAMAN))
        world.merge(merge("m2", DANA, P_RAMAN))  # the newest merge names the cluster
        assert set(res.canonical_of([PRIYA, P_RAMAN, DANA]).values()) == {DANA}
        summary = world.reader.entity(PRIYA, ADMIN)
        assert summary is not None
        assert summary.members == tuple(sorted([PRIYA, P_RAMAN, DANA]))

    def test_merges_applied_as_one_write_map_as_applied_one_by_one(self, world: ResolutionWorld) -> None:
        build_world(world)
        res = world.resolution
        first, second = merge("m1", PRIYA, P_RAMAN), merge("m2", DANA, P_RAMAN)
        res.apply_merges([first, second, first])  # a repeated merge is a no-op, as with apply_merge
        # As one by one (test_merging_into_a_member_joins_the_clusters): the newest merge names the cluster.
        assert res.canonical_of([PRIYA, P_RAMAN, DANA, ROUTING]) == {
            PRIYA: DANA,
            P_RAMAN: DANA,
            DANA: DANA,
            ROUTING: ROUTING,
        }
        assert res.merge_log() == [second, first]
        res.apply_merges([])
        # A batch with a merge apply_merge would refuse writes nothing, not even its valid merges.
        with pytest.raises(ValueError, match="m1"):
            res.apply_merges([merge("m3", ROUTING, PRIYA), merge("m1", PRIYA, ROUTING)])
        assert res.merge_log() == [second, first]
        assert res.canonical_of([ROUTING]) == {ROUTING: ROUTING}

    def test_revert_of_an_older_merge_keeps_the_later_one(self, world: ResolutionWorld) -> None:
        build_world(world)
        res = world.resolution
        world.merge(merge("m1", PRIYA, P_RAMAN))
        world.merge(merge("m2", P_RAMAN, DANA))
        assert set(res.canonical_of([PRIYA, P_RAMAN, DANA]).values()) == {P_RAMAN}
        world.revert("m1")
        # m2 linked P. Raman and Dana Lee and still does; only m1's link to Priya is gone.
        assert res.canonical_of([PRIYA, P_RAMAN, DANA]) == {PRIYA: PRIYA, P_RAMAN: P_RAMAN, DANA: P_RAMAN}
        assert [(m.merge_id, m.reverted) for m in res.merge_log()] == [("m2", False), ("m1", True)]
        world.revert("m2")
        assert res.canonical_of([PRIYA, P_RAMAN, DANA]) == {PRIYA: PRIYA, P_RAMAN: P_RAMAN, DANA: DANA}

    def test_revert_of_the_newest_merge_restores_the_cluster_before_it(self, world: ResolutionWorld) -> None:
        build_world(world)
        res = world.resolution
        world.merge(merge("m1", PRIYA, P_RAMAN))
        before = res.canonical_of([PRIYA, P_RAMAN, DANA])
        world.merge(merge("m2", DANA, PRIYA))
        assert set(res.canonical_of([PRIYA, P_RAMAN, DANA]).values()) == {DANA}
        world.revert("m2")
        assert res.canonical_of([PRIYA, P_RAMAN, DANA]) == before

    def test_revert_errors_and_repeats(self, world: ResolutionWorld) -> None:
        build_world(world)
        with pytest.raises(KgragError) as err:
            world.revert("no-such-merge")
        assert err.value.code is ErrorCode.ENTITY_NOT_FOUND
        record = merge("m1", PRIYA, P_RAMAN, decided_by="review")
        world.merge(record)
        assert world.revert("m1") == dataclasses.replace(record, reverted=True)
        assert world.revert("m1") == dataclasses.replace(record, reverted=True)
        assert world.resolution.merge_log() == [dataclasses.replace(record, reverted=True)]

    def test_a_deleted_member_leaves_the_cluster_readable(self, world: ResolutionWorld) -> None:
        build_world(world)
        world.merge(merge("m1", PRIYA, DANA))
        world.delete_document("doc-hr")  # Dana Lee's only document
        assert world.resolution.canonical_of([DANA]) == {DANA: DANA}
        summary = world.reader.entity(PRIYA, ADMIN)
        assert summary is not None
        assert summary.members == (PRIYA,)
        assert world.revert("m1").reverted

    def test_review_queue_round_trip(self, world: ResolutionWorld) -> None:
        res = world.resolution
        low = PairDecision("ent_b", "ent_a", DecisionKind.REVIEW, 0.61, (("name", 0.7),), "middle-zone")
        high = PairDecision("ent_c", "ent_d", DecisionKind.REVIEW, 0.74, (("name", 0.9), ("type", 1.0)), "middle-zone")
        res.queue_for_review([low, high])
        assert res.review_queue() == [high, dataclasses.replace(low, a="ent_a", b="ent_b")]
        assert res.review_queue(limit=1) == [high]
        rescored = dataclasses.replace(low, score=0.8)
        res.queue_for_review([rescored])  # still pending: takes the new score
        assert res.review_queue()[0] == dataclasses.replace(rescored, a="ent_a", b="ent_b")
        res.decide_review("ent_b", "ent_a", same=True)
        res.decide_review("ent_c", "ent_d", same=False)
        assert res.review_queue() == []
        res.queue_for_review([low, high])  # a decided pair is not asked again
        assert res.review_queue() == []
        with pytest.raises(KgragError) as err:
            res.decide_review("ent_a", "ent_z", same=True)
        assert err.value.code is ErrorCode.ENTITY_NOT_FOUND
        with pytest.raises(ValueError, match="twice"):
            res.queue_for_review([dataclasses.replace(low, b="ent_b", a="ent_b")])
