"""PostgresGraphStore against the GraphReader and ResolutionStore contracts, plus what only the SQL store promises."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from datetime import datetime

import psycopg
import pytest

from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk, DocumentStatus
from kgrag_core.extraction.model import ChunkExtraction, EntityMention, ExtractionKey, RelationItem, Tier
from kgrag_core.graph.model import MergeRecord
from kgrag_core.graph.ports import ContextVectorSource, GraphReader, ResolutionStore
from kgrag_core.ingest import DeletionRecord
from kgrag_core.ports import ExtractionStore
from kgrag_testing.contracts.document_store import ENG, make_document
from kgrag_testing.contracts.entity_ids import CONTRACT_ENTITY_KEY
from kgrag_testing.contracts.graph_store import (
    ADMIN,
    DANA,
    ENG_READER,
    FEB,
    HR,
    JAN,
    P_RAMAN,
    PRIYA,
    GraphReaderContract,
    LightGraphReadsContract,
    ResolutionStoreContract,
    build_world,
    merge,
)


class PostgresWorld:
    """Documents through a plain PostgresStore on its own connection (as the chunk indexer writes them);
    extraction, resolution and reads through the graph store."""

    def __init__(self, graph: PostgresGraphStore, documents: PostgresStore) -> None:
        self.graph = graph
        self.documents = documents

    @property
    def reader(self) -> GraphReader:
        return self.graph

    @property
    def resolution(self) -> ResolutionStore:
        return self.graph

    def add_document(self, doc_id: str, sections: Sequence[str], *, acl: AclClass, at: datetime | None) -> list[Chunk]:
        doc, chunks = make_document(doc_id, sections, acl=acl, modified_at=at)
        self.documents.commit_document(doc, acl, chunks)
        return chunks

    def extract(self, results: Sequence[ChunkExtraction]) -> None:
        self.graph.save(results)

    def delete_document(self, doc_id: str) -> None:
        self.documents.mark_deleted(doc_id, DeletionRecord(doc_id, (), (), ("postgres",), FEB))

    def merge(self, record: MergeRecord) -> None:
        self.graph.apply_merge(record)

    def revert(self, merge_id: str) -> MergeRecord:
        return self.graph.revert_merge(merge_id)

    def label_hubs(self, min_degree: int) -> int:
        return self.graph.label_hubs(min_degree)


@pytest.fixture
def world(pg_dsn: str) -> Iterator[PostgresWorld]:
    with PostgresGraphStore.connect(pg_dsn) as graph, PostgresStore.connect(pg_dsn) as documents:
        graph.use_entity_id_key(CONTRACT_ENTITY_KEY)
        yield PostgresWorld(graph, documents)


class TestPostgresGraphReader(GraphReaderContract):
    pass


class TestPostgresResolutionStore(ResolutionStoreContract):
    pass


class TestPostgresLightGraphReads(LightGraphReadsContract):
    pass


def test_one_object_serves_every_postgres_port(pg_dsn: str) -> None:
    with PostgresGraphStore.connect(pg_dsn) as store:
        store.use_entity_id_key(CONTRACT_ENTITY_KEY)
        for port in (GraphReader, ResolutionStore, ContextVectorSource, ExtractionStore):
            assert isinstance(store, port), port.__name__
        build_world(PostgresWorld(store, store))
        assert store.entity(PRIYA, ENG_READER) is not None


def test_mapping_rows_follow_the_merge_log(world: PostgresWorld, pg_dsn: str) -> None:
    build_world(world)
    world.merge(merge("m1", PRIYA, P_RAMAN, DANA))
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT entity_id, canonical_id, merge_id FROM er_canonical ORDER BY entity_id").fetchall()
        assert rows == sorted([(P_RAMAN, PRIYA, "m1"), (DANA, PRIYA, "m1")])
    world.delete_document("doc-hr")  # Dana Lee loses all evidence: the entity and its mapping row go
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT entity_id FROM er_canonical").fetchall()
        assert rows == [(P_RAMAN,)]
    world.revert("m1")
    with psycopg.connect(pg_dsn) as conn:
        count = conn.execute("SELECT count(*) FROM er_canonical").fetchone()
        assert count == (0,)


def test_a_recreated_member_rejoins_its_cluster_as_soon_as_its_entity_is_written_again(world: PostgresWorld) -> None:
    """The log keeps the links of a member whose entity went; writing the entity again re-applies them."""
    build_world(world)
    world.merge(merge("m1", PRIYA, DANA))
    world.delete_document("doc-hr")
    assert world.graph.canonical_of([DANA]) == {DANA: DANA}  # no entity row, no mapping row
    [chunk] = world.add_document("doc-hr-2", ["Dana Lee joined."], acl=HR, at=FEB)
    key = ExtractionKey(chunk.content_hash, "graph-test", "1")
    dana = EntityMention("Dana Lee", "Person", chunk.text, 0.9)
    world.extract([ChunkExtraction(chunk.chunk_id, key, Tier.LLM, (dana,), (), ())])
    assert world.graph.canonical_of([DANA]) == {DANA: PRIYA}  # back in its cluster: the merge is still in force
    world.merge(merge("m2", PRIYA, P_RAMAN))
    assert world.graph.canonical_of([DANA, P_RAMAN]) == {DANA: PRIYA, P_RAMAN: PRIYA}
    summary = world.graph.entity(DANA, ADMIN)
    assert summary is not None
    assert summary.members == tuple(sorted([PRIYA, P_RAMAN, DANA]))
    world.graph.revert_merge("m1")
    world.extract([ChunkExtraction(chunk.chunk_id, key, Tier.LLM, (dana,), (), ())])
    assert world.graph.canonical_of([DANA]) == {DANA: DANA}  # a split stays split when the entity is rewritten


def test_the_schema_keeps_review_pairs_ordered(world: PostgresWorld, pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn, pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("INSERT INTO er_review_queue (a, b, score, rule) VALUES ('ent_b', 'ent_a', 0.5, 'x')")


def test_merge_rejects_a_bad_record(world: PostgresWorld) -> None:
    with pytest.raises(ValueError, match="no members"):
        world.merge(MergeRecord("m0", PRIYA, (), (), "auto"))
    with pytest.raises(ValueError, match="decided_by"):
        world.merge(MergeRecord("m0", PRIYA, (P_RAMAN,), (), "robot"))
    assert world.graph.merge_log() == []


def test_the_merge_log_names_who_merged_and_who_split(world: PostgresWorld) -> None:
    world.merge(merge("m-auto", PRIYA, DANA))  # resolution's own: nobody
    world.merge(dataclasses.replace(merge("m-hand", PRIYA, P_RAMAN, decided_by="override"), decider="ana"))
    assert world.graph.revert_merge("m-hand", by="ben").reverted_by == "ben"
    assert world.graph.revert_merge("m-hand", by="cy").reverted_by == "ben"  # the first split is the one logged
    log = {m.merge_id: (m.decider, m.reverted, m.reverted_by) for m in world.graph.merge_log()}
    assert log == {"m-auto": (None, False, None), "m-hand": ("ana", True, "ben")}


def test_facts_of_a_document_that_is_not_active_are_invisible(world: PostgresWorld) -> None:
    text = "Priya Raman leads the Routing team."
    doc, [chunk] = make_document("doc-gone", [text], acl=ENG, status=DocumentStatus.DELETED)
    world.documents.commit_document(doc, ENG, [chunk])
    key = ExtractionKey(chunk.content_hash, "graph-test", "1")
    items = (EntityMention("Priya Raman", "Person", text, 0.9), EntityMention("Routing", "Team", text, 0.9))
    leads = RelationItem("Priya Raman", "Person", "LEADS", "Routing", "Team", text, 0.8)
    world.extract([ChunkExtraction(chunk.chunk_id, key, Tier.LLM, items, (leads,), ())])
    assert world.graph.fact_counts()["relations"] == 1  # stored, but no reader may see it
    assert world.graph.entity(PRIYA, ADMIN) is None
    assert world.graph.neighbours(PRIYA, ADMIN) == []
    assert world.graph.entities_named(["Priya Raman"], ADMIN) == {"priya raman": []}
    assert world.graph.label_hubs(1) == 0


def test_hub_check_counts_distinct_edges_when_relation_rows_repeat_a_key(world: PostgresWorld) -> None:
    """`hubs_among` reads at most threshold-many relation rows; two members' relations that are one canonical
    edge fill that quota with one edge, and the check must then count exactly, not call it a hub or not."""
    build_world(world)
    [chunk] = world.add_document("doc-lead-2", ["P. Raman leads Routing."], acl=ENG, at=FEB)
    key = ExtractionKey(chunk.content_hash, "graph-test", "1")
    mentions = (EntityMention("P. Raman", "Person", chunk.text, 0.9), EntityMention("Routing", "Team", chunk.text, 0.9))
    leads = RelationItem("P. Raman", "Person", "LEADS", "Routing", "Team", chunk.text, 0.8)
    world.extract([ChunkExtraction(chunk.chunk_id, key, Tier.LLM, mentions, (leads,), ())])
    world.merge(merge("m1", PRIYA, P_RAMAN))  # LEADS Routing from both members: one edge of the cluster
    assert world.label_hubs(3) == 1  # LEADS, REPORTS_TO, OWNS
    assert world.graph.hubs_among([PRIYA], ADMIN) == {PRIYA}
    assert world.graph.hubs_among([PRIYA], ENG_READER) == set()  # LEADS (two rows) and OWNS: two edges
    summary = world.graph.entity(P_RAMAN, ENG_READER)
    assert summary is not None and (summary.degree, summary.is_hub) == (2, False)


def test_context_vectors_are_the_cached_vectors_of_the_chunks_naming_the_entity(world: PostgresWorld) -> None:
    """`context_chunk_vectors` reads what the indexer cached: distinct chunks, most confident mention first,
    only chunks whose key the cache holds for that model, every active document whatever its ACL (as
    `profiles` reads them), and nothing of a deleted document."""
    eng_texts = ["Priya Raman leads Routing.", "Priya Raman visited Leipzig.", "Priya Raman owns Atlas."]
    eng, eng_chunks = make_document("doc-ctx", eng_texts, acl=ENG, modified_at=JAN)
    hr, hr_chunks = make_document("doc-ctx-hr", ["Priya Raman reports to Dana Lee."], acl=HR, modified_at=FEB)
    leads, visited, owns = eng_chunks
    [reports] = hr_chunks
    keys = {leads.chunk_id: "k-leads", visited.chunk_id: "k-visited", owns.chunk_id: "k-owns"}
    world.documents.commit_document(eng, ENG, eng_chunks, embedding_keys=keys)
    world.documents.commit_document(hr, HR, hr_chunks, embedding_keys={reports.chunk_id: "k-reports"})
    # "k-owns" has no cached vector (say it was purged): that chunk cannot count.
    vectors = {"k-leads": (1.0, 0.0, 0.0), "k-visited": (0.0, 1.0, 0.0), "k-reports": (0.0, 0.0, 1.0)}
    world.documents.put_vectors("model-a", vectors)
    world.documents.put_vectors("model-b", {"k-leads": (0.5, 0.5, 0.5)})

    def said(chunk: Chunk, *mentions: tuple[str, float]) -> ChunkExtraction:
        items = tuple(EntityMention(name, "Person", chunk.text, conf) for name, conf in mentions)
        return ChunkExtraction(chunk.chunk_id, ExtractionKey(chunk.content_hash, "ctx", "1"), Tier.LLM, items, (), ())

    world.extract(
        [
            said(leads, ("Priya Raman", 0.6)),
            said(visited, ("Priya Raman", 0.9)),
            said(owns, ("Priya Raman", 0.95), ("P. Raman", 0.9)),
            said(reports, ("Priya Raman", 0.7), ("Dana Lee", 0.8)),
        ]
    )
    ids = [PRIYA, P_RAMAN, DANA]
    assert world.graph.context_chunk_vectors(ids, "model-a", 2) == {
        PRIYA: [vectors["k-visited"], vectors["k-reports"]],
        DANA: [vectors["k-reports"]],
    }
    three = world.graph.context_chunk_vectors(ids, "model-a", 3)
    assert three[PRIYA] == [vectors["k-visited"], vectors["k-reports"], vectors["k-leads"]]
    assert world.graph.context_chunk_vectors(ids, "model-b", 3) == {PRIYA: [(0.5, 0.5, 0.5)]}
    assert world.graph.context_chunk_vectors(ids, "model-a", 0) == {}
    world.delete_document("doc-ctx-hr")
    assert world.graph.context_chunk_vectors(ids, "model-a", 3) == {PRIYA: [vectors["k-visited"], vectors["k-leads"]]}
    # Vectors are kept between passes (read once), but only the latest pass's: none of the deleted document.
    assert set(world.graph._context_vectors) == {("model-a", "k-visited"), ("model-a", "k-leads")}


def test_kept_profiles_are_reused_only_while_their_rows_are_unchanged(world: PostgresWorld) -> None:
    """Resolution passes reuse opened profiles (profile_memo.py): an unchanged entity is not opened again, a
    changed one is, and nothing opened from a deleted document stays in memory."""
    w = build_world(world)
    memo = world.graph.profile_memo
    first = world.graph.profiles()
    opened = memo.misses
    assert world.graph.profiles() == first
    assert memo.misses == opened and memo.hits >= len(first)  # every profile kept, none opened again
    [chunk] = world.add_document("doc-more", ["Priya Raman visited Leipzig."], acl=ENG, at=FEB)
    key = ExtractionKey(chunk.content_hash, "graph-test", "1")
    world.extract(
        [
            ChunkExtraction(
                chunk.chunk_id, key, Tier.LLM, (EntityMention("Priya Raman", "Person", chunk.text, 0.9),), (), ()
            )
        ]
    )
    again = {p.entity_id: p for p in world.graph.profiles()}
    assert again[PRIYA].mentions == next(p for p in first if p.entity_id == PRIYA).mentions + 1  # re-opened
    assert memo.misses == opened + 1  # and only Priya Raman
    # The HR document goes: its entities' profiles lose its texts, and the memo drops what it opened from it.
    hr_quote = w.hr_reports.text
    assert hr_quote in again[PRIYA].context or hr_quote in again[DANA].context  # the positive control
    per_doc = world.graph.document_profiles([PRIYA])
    assert "doc-hr" in {d.doc_id for d in per_doc}  # the positive control of the per-document profiles
    kept = world.graph.document_profile_memo
    reopened = kept.misses
    assert world.graph.document_profiles([PRIYA]) == per_doc and kept.misses == reopened
    world.delete_document("doc-hr")
    world.graph.incremental_scope(["doc-hr"], 50)
    assert len(kept) == len(per_doc) - 1  # what was opened from doc-hr is gone
    assert "doc-hr" not in {d.doc_id for d in world.graph.document_profiles([PRIYA])}
    assert all("doc-hr" not in memo.documents_of(entity) for entity in again)
    after = {p.entity_id: p for p in world.graph.profiles()}
    assert DANA not in after and hr_quote not in after[PRIYA].context
