"""The knowledge projection handler against real PostgreSQL and Neo4j: events in, a Neo4j graph that reads
exactly like PostgreSQL out, whatever the order, repetition or lateness of the events.

PostgreSQL is written directly (as the extractor, deletion worker and resolver do); only the handler writes
Neo4j. Parity is checked through the GraphReader port, for an engineering, an HR and an admin reader.
"""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime

import pytest

from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk
from kgrag_core.errors import ErrorCode
from kgrag_core.events import GRAPH_CHANGED
from kgrag_core.extraction.model import ChunkExtraction, EntityMention, ExtractionKey, Tier
from kgrag_core.graph.model import MergeRecord
from kgrag_core.graph.ports import GraphReader
from kgrag_core.handlers.knowledge_projection import KnowledgeProjectionHandler
from kgrag_core.ingest import DeletionRecord
from kgrag_testing.contracts.document_store import make_document
from kgrag_testing.contracts.entity_ids import CONTRACT_ENTITY_KEY
from kgrag_testing.contracts.graph_store import (
    ADMIN,
    ATLAS,
    DANA,
    ENG_READER,
    FEB,
    HR,
    HR_READER,
    MERCURY_SITE,
    MERCURY_SYSTEM,
    P_RAMAN,
    PRIYA,
    ROUTING,
    build_world,
    merge,
)
from tests.integration.conftest import endpoint
from tests.neo4j_lock import neo4j_held

pytestmark = pytest.mark.integration

DOCS = ("doc-routing", "doc-atlas", "doc-hr", "doc-mercury")
ENTITIES = (PRIYA, P_RAMAN, DANA, ROUTING, ATLAS, MERCURY_SITE, MERCURY_SYSTEM)
NAMES = ("Priya Raman", "P. Raman", "Dana Lee", "Routing", "Atlas", "Mercury")


class PostgresOnly:
    """The contract's world builder writing PostgreSQL only: the handler is what projects it."""

    def __init__(self, pg: PostgresGraphStore, documents: PostgresStore) -> None:
        self.pg = pg
        self.documents = documents

    @property
    def reader(self) -> GraphReader:
        return self.pg

    def add_document(self, doc_id: str, sections: Sequence[str], *, acl: AclClass, at: datetime | None) -> list[Chunk]:
        doc, chunks = make_document(doc_id, sections, acl=acl, modified_at=at)
        self.documents.commit_document(doc, acl, chunks)
        return chunks

    def extract(self, results: Sequence[ChunkExtraction]) -> None:
        self.pg.save(results)

    def delete_document(self, doc_id: str) -> None:
        self.documents.mark_deleted(doc_id, DeletionRecord(doc_id, (), (), ("postgres",), FEB))

    def merge(self, record: MergeRecord) -> None:
        self.pg.apply_merge(record)

    def revert(self, merge_id: str) -> MergeRecord:
        return self.pg.revert_merge(merge_id)

    def label_hubs(self, min_degree: int) -> int:
        return self.pg.label_hubs(min_degree)


@pytest.fixture(scope="module")
def neo4j_uri() -> Iterator[str]:
    """The server, with the lock the Neo4j contract tests hold (the lexical graph's tests wipe the database)."""
    with neo4j_held(endpoint("neo4j")) as uri:
        yield uri


@pytest.fixture
def neo(neo4j_uri: str) -> Iterator[Neo4jKnowledgeGraph]:
    with Neo4jKnowledgeGraph.connect(neo4j_uri, namespace=f"test-{uuid.uuid4().hex[:12]}") as graph:
        try:
            yield graph
        finally:
            graph.drop_namespace()


@pytest.fixture
def world(pg_dsn: str) -> Iterator[PostgresOnly]:
    with PostgresGraphStore.connect(pg_dsn) as pg, PostgresStore.connect(pg_dsn) as documents:
        pg.use_entity_id_key(CONTRACT_ENTITY_KEY)
        yield PostgresOnly(pg, documents)


@pytest.fixture
def handler(pg_dsn: str, neo: Neo4jKnowledgeGraph) -> Iterator[KnowledgeProjectionHandler]:
    with PostgresKnowledgeSource.connect(pg_dsn) as source:
        yield KnowledgeProjectionHandler(source, neo)


def doc_events(*doc_ids: str) -> list[tuple[str, dict[str, object]]]:
    return [(d, {"doc_id": d, "items": 1}) for d in doc_ids]


def merge_event(record: MergeRecord) -> list[tuple[str, dict[str, object]]]:
    return [(record.merge_id, {"entity_ids": [record.canonical_id, *record.members]})]


def reads(reader: GraphReader) -> dict[str, object]:
    """Everything the reader answers about the world, for every kind of caller."""
    out: dict[str, object] = {}
    for name, acl in (("eng", ENG_READER), ("hr", HR_READER), ("admin", ADMIN)):
        out[name] = {
            "entities": {e: reader.entity(e, acl) for e in ENTITIES},
            "neighbours": {e: reader.neighbours(e, acl) for e in ENTITIES},
            "limited": {e: reader.neighbours(e, acl, limit=1) for e in ENTITIES},
            "named": reader.entities_named(NAMES, acl),
            "claims": reader.claims_of(ENTITIES, acl),
        }
    return out


def assert_in_parity(world: PostgresOnly, neo: Neo4jKnowledgeGraph) -> None:
    assert reads(neo) == reads(world.pg)


def test_graph_changed_events_project_the_world(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    build_world(world)
    assert neo.entity(PRIYA, ADMIN) is None  # nothing projected yet
    result = handler.handle(GRAPH_CHANGED, doc_events(*DOCS))
    assert [o.doc_id for o in result.outcomes] == list(DOCS)
    assert result.dead_letters == []
    assert_in_parity(world, neo)
    assert neo.entity(PRIYA, ADMIN) is not None


def test_replayed_and_shuffled_events_converge(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    build_world(world)
    events = doc_events(*DOCS) * 3
    random.Random(5).shuffle(events)
    for event in events:
        handler.handle(GRAPH_CHANGED, [event])
    assert_in_parity(world, neo)


def test_deletion_events_remove_and_late_events_do_not_resurrect(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    build_world(world)
    handler.handle(GRAPH_CHANGED, doc_events(*DOCS))
    world.delete_document("doc-hr")
    handler.handle(GRAPH_CHANGED, doc_events("doc-hr"))
    assert neo.entity(DANA, ADMIN) is None
    assert_in_parity(world, neo)
    handler.handle(GRAPH_CHANGED, doc_events("doc-hr", "doc-routing", "doc-hr"))  # late replays of older events
    assert neo.entity(DANA, ADMIN) is None
    assert_in_parity(world, neo)
    world.delete_document("doc-atlas")
    world.delete_document("doc-routing")
    handler.handle(GRAPH_CHANGED, doc_events("doc-routing", "doc-atlas"))
    assert neo.neighbours(PRIYA, ADMIN) == []
    assert_in_parity(world, neo)


def test_merges_splits_and_hubs_follow_their_events(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    build_world(world)
    handler.handle(GRAPH_CHANGED, doc_events(*DOCS))
    m1, m2 = merge("m1", PRIYA, P_RAMAN), merge("m2", DANA, P_RAMAN)
    world.merge(m1)
    handler.handle("entities.changed", merge_event(m1))
    assert_in_parity(world, neo)
    world.merge(m2)  # the newest merge names the joined cluster
    handler.handle("entities.changed", merge_event(m2))
    summary = neo.entity(PRIYA, ADMIN)
    assert summary is not None
    assert summary.entity.entity_id == DANA
    assert_in_parity(world, neo)
    world.revert("m2")
    handler.handle("entities.changed", merge_event(m2))
    assert_in_parity(world, neo)
    assert world.label_hubs(2) > 0
    handler.handle("entities.changed", [("hubs", {"hubs": True})])
    assert_in_parity(world, neo)
    world.revert("m1")
    handler.handle("entities.changed", merge_event(m1) * 2)
    world.label_hubs(3)
    handler.handle("entities.changed", [("hubs", {"hubs": True})])
    assert_in_parity(world, neo)


def test_a_merge_survives_its_member_s_facts_being_rewritten_and_the_projection_follows(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    """An ACL change, a re-ingest or a re-extraction rewrites a chunk's facts, deleting an entity whose only
    evidence it was and inserting it again: the merge is re-applied from the log in PostgreSQL, and the Neo4j
    projection, re-reading the mapping on graph.changed, shows the cluster again (docs/security.md, section 8)."""
    build_world(world)
    handler.handle(GRAPH_CHANGED, doc_events(*DOCS))
    record = merge("m1", PRIYA, DANA)
    world.merge(record)
    handler.handle("entities.changed", merge_event(record))
    world.delete_document("doc-hr")  # Dana's only evidence
    handler.handle(GRAPH_CHANGED, doc_events("doc-hr"))
    assert neo.entity(DANA, ADMIN) is None
    [chunk] = world.add_document("doc-hr-2", ["Dana Lee joined."], acl=HR, at=FEB)
    dana = EntityMention("Dana Lee", "Person", chunk.text, 0.9)
    world.extract([ChunkExtraction(chunk.chunk_id, ExtractionKey(chunk.content_hash, "t", "1"), Tier.LLM, (dana,))])
    handler.handle(GRAPH_CHANGED, doc_events("doc-hr-2"))
    summary = neo.entity(DANA, ADMIN)
    assert summary is not None and summary.entity.entity_id == PRIYA and DANA in summary.members
    assert_in_parity(world, neo)


def test_a_merge_event_before_the_documents_converges(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    """The resolver may merge (and announce it) before the projection has seen the documents."""
    build_world(world)
    handler.handle(GRAPH_CHANGED, doc_events("doc-routing"))
    record = merge("m1", PRIYA, P_RAMAN)
    world.merge(record)
    handler.handle("entities.changed", merge_event(record))
    handler.handle(GRAPH_CHANGED, doc_events("doc-atlas", "doc-hr", "doc-mercury"))
    assert_in_parity(world, neo)


def test_malformed_events_go_to_dead_letters(world: PostgresOnly, handler: KnowledgeProjectionHandler) -> None:
    # `world` migrates the database: the handler reads the graph version (migration 0017) for its watermark.
    result = handler.handle(
        GRAPH_CHANGED, [("a", {}), ("b", {"doc_id": ""}), ("c", {"entity_ids": [1, 2]}), ("d", {"hubs": "yes"})]
    )
    assert [d.key for d in result.dead_letters] == ["a", "b", "c", "d"]
    assert {d.error_code for d in result.dead_letters} == {ErrorCode.MALFORMED_EVENT.value}
    assert result.outcomes == []


def test_projectors_of_one_namespace_take_turns(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler, pg_dsn: str
) -> None:
    """Another replica holding the namespace's projection lock holds this one's projection back: a writer
    that read PostgreSQL first can never write Neo4j last."""
    build_world(world)
    finished = threading.Event()

    def project() -> None:
        handler.handle(GRAPH_CHANGED, doc_events(*DOCS))
        finished.set()

    with PostgresKnowledgeSource.connect(pg_dsn) as other:
        with other.exclusive(f"kgrag-knowledge-projection:{neo.namespace}"):
            worker = threading.Thread(target=project)
            worker.start()
            assert not finished.wait(2.0)  # waiting for the other replica
            assert neo.entity(PRIYA, ADMIN) is None
        assert finished.wait(60.0)
        worker.join()
    assert_in_parity(world, neo)
    # Re-entrant within one source: a replica already holding the lock projects without waiting on itself.
    with handler.source.exclusive(f"kgrag-knowledge-projection:{neo.namespace}"):
        assert handler.handle(GRAPH_CHANGED, doc_events("doc-atlas")).dead_letters == []
