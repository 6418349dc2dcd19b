"""`Neo4jKnowledgeGraph` against the same GraphReader contract as PostgreSQL, on a real Neo4j 5 server.

The world writes to PostgreSQL exactly as the PostgreSQL contract test does, then projects what changed
through `kgrag_core.handlers.knowledge_projection` (as the graph-writer does) before returning, so every
read goes to Neo4j. Needs the dev services' Neo4j ($KGRAG_TEST_NEO4J_URI, else bolt://127.0.0.1:7687);
FAILS, never skips, when it cannot be reached.

Isolation: each test projects into a namespace of its own and drops it afterwards; the module holds the
same file lock as the lexical graph tests (which wipe the whole database), so the two never overlap.
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, LiteralString

import pytest
from neo4j import GraphDatabase, NotificationMinimumSeverity
from neo4j.exceptions import ServiceUnavailable

from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_core.acl import AclClass
from kgrag_core.documents import Chunk, DocumentStatus
from kgrag_core.extraction.identity import normalise_name
from kgrag_core.extraction.model import (
    ChunkExtraction,
    ClaimItem,
    EntityMention,
    ExtractionKey,
    RelationItem,
    Tier,
)
from kgrag_core.graph.model import MergeRecord
from kgrag_core.graph.ports import GraphReader
from kgrag_core.handlers.knowledge_projection import (
    KnowledgeProjection,
    KnowledgeSource,
    project_document,
    project_entities,
    project_hubs,
)
from kgrag_core.ingest import DeletionRecord
from kgrag_testing.contracts.document_store import ENG, make_document
from kgrag_testing.contracts.entity_ids import CONTRACT_ENTITY_KEY
from kgrag_testing.contracts.graph_store import (
    ADMIN,
    ENG_READER,
    FEB,
    P_RAMAN,
    PRIYA,
    ROUTING,
    GraphReaderContract,
    build_world,
    merge,
    snapshot,
)
from tests.neo4j_lock import neo4j_held

pytestmark = pytest.mark.integration

DEFAULT_URI = "bolt://127.0.0.1:7687"


def _uri() -> str:
    return os.environ.get("KGRAG_TEST_NEO4J_URI") or DEFAULT_URI


@pytest.fixture(scope="module")
def neo4j_uri() -> Iterator[str]:
    with neo4j_held(_uri()) as uri:
        yield uri


@pytest.fixture
def neo4j_graph(neo4j_uri: str) -> Iterator[Neo4jKnowledgeGraph]:
    """A projection in a namespace of its own, dropped after the test."""
    try:
        graph = Neo4jKnowledgeGraph.connect(neo4j_uri, namespace=f"test-{uuid.uuid4().hex[:12]}")
    except ServiceUnavailable as exc:
        pytest.fail(
            f"no Neo4j server at {neo4j_uri}: {exc}\nStart it with `scripts/dev-services/services.sh start neo4j`.",
            pytrace=False,
        )
    with graph:
        try:
            yield graph
        finally:
            graph.drop_namespace()


class Neo4jWorld:
    """PostgreSQL written as in the PostgreSQL contract test; every change projected before returning."""

    def __init__(
        self,
        pg: PostgresGraphStore,
        documents: PostgresStore,
        source: PostgresKnowledgeSource,
        neo: Neo4jKnowledgeGraph,
    ) -> None:
        self.pg = pg
        self.documents = documents
        self.source = source
        self.neo = neo
        self.doc_of_chunk: dict[str, str] = {}

    @property
    def reader(self) -> GraphReader:
        return self.neo

    def add_document(self, doc_id: str, sections: Sequence[str], *, acl: AclClass, at: datetime | None) -> list[Chunk]:
        doc, chunks = make_document(doc_id, sections, acl=acl, modified_at=at)
        self.documents.commit_document(doc, acl, chunks)
        self.doc_of_chunk.update({c.chunk_id: doc_id for c in chunks})
        project_document(doc_id, self.source, self.neo)
        return chunks

    def extract(self, results: Sequence[ChunkExtraction]) -> None:
        self.pg.save(results)
        for doc_id in sorted({self.doc_of_chunk[r.chunk_id] for r in results}):
            project_document(doc_id, self.source, self.neo)

    def delete_document(self, doc_id: str) -> None:
        self.documents.mark_deleted(doc_id, DeletionRecord(doc_id, (), (), ("postgres",), FEB))
        project_document(doc_id, self.source, self.neo)

    def merge(self, record: MergeRecord) -> None:
        self.pg.apply_merge(record)
        project_entities([record.canonical_id, *record.members], self.source, self.neo)

    def revert(self, merge_id: str) -> MergeRecord:
        record = self.pg.revert_merge(merge_id)
        project_entities([record.canonical_id, *record.members], self.source, self.neo)
        return record

    def label_hubs(self, min_degree: int) -> int:
        count = self.pg.label_hubs(min_degree)
        project_hubs(self.source, self.neo)
        return count


@pytest.fixture
def world(pg_dsn: str, neo4j_uri: str, neo4j_graph: Neo4jKnowledgeGraph) -> Iterator[Neo4jWorld]:
    """The projection as the graph-writer makes it: sealed with the source's cipher, names blind-indexed
    (in `neo4j_graph`'s namespace, which that fixture drops afterwards)."""
    with (
        PostgresGraphStore.connect(pg_dsn) as pg,
        PostgresStore.connect(pg_dsn) as documents,
        PostgresKnowledgeSource.connect(pg_dsn) as source,
    ):
        pg.use_entity_id_key(CONTRACT_ENTITY_KEY)
        with Neo4jKnowledgeGraph.connect(
            neo4j_uri, namespace=neo4j_graph.namespace, cipher=source.cipher, name_index=source.name_index
        ) as sealed:
            yield Neo4jWorld(pg, documents, source, sealed)


class TestNeo4jGraphReader(GraphReaderContract):
    pass


# --- what only the projection promises --------------------------------------------------------------------


def _ns_query(graph: Neo4jKnowledgeGraph, query: LiteralString) -> list[dict[str, Any]]:
    with (
        GraphDatabase.driver(_uri()) as driver,
        driver.session(notifications_min_severity=NotificationMinimumSeverity.OFF) as session,
    ):
        return [r.data() for r in session.run(query, ns=graph.namespace)]


def _shape(graph: Neo4jKnowledgeGraph) -> list[str]:
    """Every node and relationship of the namespace, as sorted text comparable across runs."""
    nodes = _ns_query(graph, "MATCH (n {ns: $ns}) RETURN labels(n) AS labels, properties(n) AS p")
    rels = _ns_query(
        graph,
        "MATCH (a {ns: $ns})-[r]->(b) RETURN type(r) AS type, properties(r) AS p, properties(a) AS a,"
        " properties(b) AS b",
    )
    return sorted(repr(sorted(row.items())) for row in nodes + rels)


def test_implements_the_projection_ports(world: Neo4jWorld) -> None:
    assert isinstance(world.neo, KnowledgeProjection)
    assert isinstance(world.source, KnowledgeSource)


def test_replaying_every_event_changes_nothing(world: Neo4jWorld) -> None:
    build_world(world)
    world.merge(merge("m1", PRIYA, P_RAMAN))
    before = _shape(world.neo)
    reads = {acl: snapshot(world.neo, acl) for acl in (ENG_READER, ADMIN)}
    for doc_id in ("doc-routing", "doc-atlas", "doc-hr", "doc-mercury", "doc-unknown"):
        project_document(doc_id, world.source, world.neo)
    project_entities([PRIYA, P_RAMAN, ROUTING], world.source, world.neo)
    assert _shape(world.neo) == before
    assert {acl: snapshot(world.neo, acl) for acl in (ENG_READER, ADMIN)} == reads


def test_a_late_event_removes_rather_than_resurrects(world: Neo4jWorld) -> None:
    build_world(world)
    world.documents.mark_deleted("doc-hr", DeletionRecord("doc-hr", (), (), ("postgres",), FEB))
    world.merge(merge("m1", PRIYA, P_RAMAN))  # projected before the deletion's own event arrives
    project_document("doc-hr", world.source, world.neo)
    project_document("doc-hr", world.source, world.neo)
    assert world.neo.entity(PRIYA, ADMIN) == world.pg.entity(PRIYA, ADMIN)
    assert world.neo.neighbours(PRIYA, ADMIN) == world.pg.neighbours(PRIYA, ADMIN)
    assert world.neo.entities_in_document("doc-hr") == []
    assert not [row for row in _shape(world.neo) if "doc-hr" in row]


def test_deleting_every_document_leaves_only_the_ontology(world: Neo4jWorld) -> None:
    build_world(world)
    world.merge(merge("m1", PRIYA, P_RAMAN))
    world.label_hubs(2)
    for doc_id in ("doc-routing", "doc-atlas", "doc-hr", "doc-mercury"):
        world.delete_document(doc_id)
    world.label_hubs(2)
    left = _ns_query(world.neo, "MATCH (n {ns: $ns}) RETURN labels(n) AS labels")
    assert left == [{"labels": ["KgOntology"]}]


def test_an_inactive_document_is_projected_but_invisible(world: Neo4jWorld) -> None:
    text = "Priya Raman leads the Routing team."
    doc, [chunk] = make_document("doc-gone", [text], acl=ENG, status=DocumentStatus.DELETED)
    world.documents.commit_document(doc, ENG, [chunk])
    key = ExtractionKey(chunk.content_hash, "graph-test", "1")
    items = (EntityMention("Priya Raman", "Person", text, 0.9), EntityMention("Routing", "Team", text, 0.9))
    leads = RelationItem("Priya Raman", "Person", "LEADS", "Routing", "Team", text, 0.8)
    world.pg.save([ChunkExtraction(chunk.chunk_id, key, Tier.LLM, items, (leads,), ())])
    project_document("doc-gone", world.source, world.neo)
    assert world.neo.entities_in_document("doc-gone") == sorted([PRIYA, ROUTING])  # held for a later removal
    assert world.neo.entity(PRIYA, ADMIN) is None
    assert world.neo.neighbours(PRIYA, ADMIN) == []
    assert world.neo.entities_named(["Priya Raman"], ADMIN) == {"priya raman": []}


def test_namespaces_do_not_see_each_other(world: Neo4jWorld, neo4j_uri: str) -> None:
    build_world(world)
    with Neo4jKnowledgeGraph.connect(neo4j_uri, namespace=f"test-{uuid.uuid4().hex[:12]}") as other:
        try:
            assert other.entity(PRIYA, ADMIN) is None
            assert other.entities_in_document("doc-routing") == []
            project_document("doc-routing", world.source, other)
            assert other.entity(ROUTING, ADMIN) is not None
            assert world.neo.entity(ROUTING, ADMIN) == world.pg.entity(ROUTING, ADMIN)  # untouched by the other
            other.drop_namespace()
            assert other.entity(ROUTING, ADMIN) is None
            assert world.neo.entity(ROUTING, ADMIN) == world.pg.entity(ROUTING, ADMIN)
        finally:
            other.drop_namespace()


def _projected_text(graph: Neo4jKnowledgeGraph) -> str:
    """Every property of every node and relationship in the namespace, as one text to search."""
    return "\n".join(_shape(graph))


def test_the_projection_holds_no_document_text_and_nothing_readable_after_a_deletion(
    world: Neo4jWorld, neo4j_uri: str, pg_dsn: str
) -> None:
    """Names, identifiers, values and quotes reach Neo4j sealed under their document's key, names looked up
    by blind index (ADR 0008, "Names"): a deleted document's copies in Neo4j's store files never open."""
    secret = "zq" + uuid.uuid4().hex + "0"
    name, email = f"Vault {secret}", ("email", f"{secret}@example.com")
    text = f"{name} ({email[1]}) keeps the vault of the Routing team; status {secret}-on."
    [chunk] = world.add_document("doc-vault", [text], acl=ENG, at=FEB)
    key = ExtractionKey(chunk.content_hash, "graph-test", "1")
    items = (EntityMention(name, "Person", text, 0.9, (email,)), EntityMention("Routing", "Team", text, 0.9))
    member = RelationItem(name, "Person", "MEMBER_OF", "Routing", "Team", text, 0.8)
    status = ClaimItem(name, "Person", "status", f"{secret}-on", text, 0.9)
    world.extract([ChunkExtraction(chunk.chunk_id, key, Tier.LLM, items, (member,), (status,))])
    # Positive control: the reader finds the entity by its name and reads name, identifier, value, quote.
    [found] = world.neo.entities_named([name], ENG_READER)[normalise_name(name)]
    assert (found.entity.name, found.strong_ids) == (name, (email,))
    [claim] = world.neo.claims_of([found.entity.entity_id], ENG_READER)
    assert (claim.value, claim.quote) == (f"{secret}-on", text)
    assert world.neo.entity(found.entity.entity_id, ENG_READER) == world.pg.entity(found.entity.entity_id, ENG_READER)
    # ... yet no property in Neo4j holds the token; the same projection without a cipher does (the control).
    stored = _projected_text(world.neo)
    assert "doc-vault" in stored and secret not in stored
    with Neo4jKnowledgeGraph.connect(neo4j_uri, namespace=f"test-{uuid.uuid4().hex[:12]}") as plain:
        try:
            project_document("doc-vault", world.source, plain)
            assert secret in _projected_text(plain)
        finally:
            plain.drop_namespace()
    sealed_names = [
        (r["doc"], r["name"])
        for r in _ns_query(world.neo, "MATCH ({ns: $ns})-[a:KNOWN_AS]->() RETURN a.doc AS doc, a.name AS name")
    ]
    assert any(doc == "doc-vault" for doc, _ in sealed_names)

    def opens(doc: str, value: str) -> bool:
        with PostgresKnowledgeSource.connect(pg_dsn) as fresh:  # a fresh process: no key cached
            return fresh.cipher.open(doc, base64.b64decode(value)) is not None

    assert all(opens(doc, value) for doc, value in sealed_names)  # positive control: live copies open
    world.delete_document("doc-vault")
    # The deletion destroyed the key: what Neo4j's store files may still hold of those records opens no more
    # (asked of a fresh process's cipher: a running one may keep an opened key up to 60 s, ADR 0008).
    assert not any(opens(doc, value) for doc, value in sealed_names)
    assert world.neo.entities_named([name], ADMIN) == {normalise_name(name): []}
    assert "doc-vault" not in _projected_text(world.neo) and secret not in _projected_text(world.neo)


def _plain_shape(graph: Neo4jKnowledgeGraph) -> list[str]:
    """`_shape` without what differs by namespace and by how a scope was written (its namespace, the stamp)."""

    def bare(props: dict[str, Any]) -> list[tuple[str, Any]]:
        return sorted((k, v) for k, v in props.items() if k not in ("ns", "gen"))

    nodes = _ns_query(graph, "MATCH (n {ns: $ns}) RETURN labels(n) AS labels, properties(n) AS p")
    rels = _ns_query(
        graph,
        "MATCH (a {ns: $ns})-[r]->(b) RETURN type(r) AS type, properties(r) AS p, properties(a) AS a,"
        " properties(b) AS b",
    )
    return sorted(
        repr(sorted((k, bare(v) if isinstance(v, dict) else v) for k, v in row.items())) for row in nodes + rels
    )


def test_a_scope_written_in_batches_equals_one_written_whole(world: Neo4jWorld, neo4j_uri: str) -> None:
    """With a write batch of 8 units every scope here goes the batched way (a hub's, in production): after each
    change (new documents, a merge, a deletion) it holds exactly what one transaction writes. Each step
    re-projects every document, so the unchanged ones are replays (restamped, nothing deleted)."""
    with Neo4jKnowledgeGraph.connect(
        neo4j_uri,
        namespace=f"test-{uuid.uuid4().hex[:12]}",
        cipher=world.source.cipher,
        name_index=world.source.name_index,
        write_batch=8,
    ) as batched:
        try:

            def follow(entity_ids: Sequence[str] = ()) -> None:
                for doc_id in ("doc-routing", "doc-atlas", "doc-hr", "doc-mercury"):
                    project_document(doc_id, world.source, batched)
                project_entities(entity_ids, world.source, batched)
                project_hubs(world.source, batched)
                assert _plain_shape(batched) == _plain_shape(world.neo)
                for acl in (ENG_READER, ADMIN):
                    assert snapshot(batched, acl) == snapshot(world.neo, acl)

            build_world(world)
            world.label_hubs(2)
            follow()
            # Positive control: the batched namespace was written by the batched path (its rows are stamped).
            stamped = "MATCH (n:KgEntity {ns: $ns}) WHERE n.gen IS NOT NULL RETURN count(n) AS n"
            assert _ns_query(batched, stamped)[0]["n"] > 0 and _ns_query(world.neo, stamped)[0]["n"] == 0
            world.merge(merge("m1", PRIYA, P_RAMAN))
            follow([PRIYA, P_RAMAN])
            world.delete_document("doc-hr")
            follow()
        finally:
            batched.drop_namespace()
