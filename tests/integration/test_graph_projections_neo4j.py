"""The communities and text-graph projections against real PostgreSQL and Neo4j: build, change a document,
delete it, and Neo4j holds exactly what PostgreSQL holds at each step, with nothing of a deleted document
left behind.

PostgreSQL is written by the runtimes' own code (document store, extraction store, community builder, text
graph builder); the projections are written only by the handlers the services run (the community-builder's
sync after its build, the graph-writer's text-graph projection on graph.changed).
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator, Sequence

import pytest
from neo4j import Driver, GraphDatabase
from rich.console import Console

from kgrag_adapters.communities.leiden import LeidenDetector
from kgrag_adapters.neo4j.communities import Neo4jCommunityProjection
from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
from kgrag_adapters.neo4j.text_graph import Neo4jTextGraphProjection
from kgrag_adapters.postgres.communities import PostgresCommunityStore
from kgrag_adapters.postgres.community_source import PostgresCommunitySource
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.text_graph import PostgresTextGraph
from kgrag_adapters.postgres.text_graph_source import PostgresTextGraphSource
from kgrag_core.communities.building import BuildSettings
from kgrag_core.communities.service import CommunityService
from kgrag_core.events import CHUNKS_CHANGED, DOCUMENTS_CHANGED, DOCUMENTS_DELETED, GRAPH_CHANGED
from kgrag_core.handlers.chunk_indexer import ChunkIndexerHandler
from kgrag_core.handlers.community_builder import CommunityBuilderHandler
from kgrag_core.handlers.community_projection import CommunityProjectionHandler, header_of, sync_communities
from kgrag_core.handlers.composite import CompositeHandler
from kgrag_core.handlers.extractor import ExtractorHandler
from kgrag_core.handlers.text_graph import TextGraphHandler
from kgrag_core.handlers.text_graph_projection import TextGraphProjectionHandler
from kgrag_core.text_graph.builder import TextGraphBuilder
from kgrag_core.text_graph.model import SynonymEdge
from kgrag_core.text_graph.patterns import PatternPhraseExtractor
from kgrag_runtime.benchmarks import graph_projections
from kgrag_runtime.distributed import DistributedStores, producer
from kgrag_runtime.extraction import build_extractor
from kgrag_runtime.graph_projections import (
    rebuild_graph_projections,
    text_graph_projection,
    with_community_projection,
)
from kgrag_runtime.ingest_gateway import KafkaIngest
from kgrag_runtime.settings import KgragSettings
from kgrag_runtime.text_graph import with_text_graph
from kgrag_testing.contracts.document_store import ENG
from kgrag_testing.contracts.entity_ids import CONTRACT_ENTITY_KEY, contract_entity_id
from kgrag_testing.contracts.extraction_store import HR, Stores, commit_doc, delete_doc, leads, mention, result
from tests.integration.conftest import Workers, endpoint, wait_for
from tests.neo4j_lock import neo4j_held
from tests.pipeline.corpus import doc

QUILLON = doc("tp-quillon", "# Quillon scheduler\n\nThe Quillon scheduler plans nightly batch jobs for Leipzig.\n")
CHANGED = doc("tp-quillon", "# Quillon scheduler\n\nSince June the Quillon scheduler runs in Dresden for Marta Vell.\n")
MEMO = doc(
    "tp-memo",
    "# Reorganisation memo\n\nFrom June the Quillon scheduler is owned by the Zephyr team.\n",
    acl={"groups": ["tp-secret"]},
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    """The server, schema applied, with the lock the Neo4j contract tests hold (they wipe the database)."""
    with neo4j_held(endpoint("neo4j")) as uri, GraphDatabase.driver(uri) as drv:
        Neo4jLexicalGraph(drv).ensure_schema()
        yield drv


@pytest.fixture
def namespace() -> str:
    return f"test-proj-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresGraphStore]:
    with PostgresGraphStore.connect(pg_dsn) as pg:
        pg.use_entity_id_key(CONTRACT_ENTITY_KEY)
        yield pg


def events(*doc_ids: str) -> list[tuple[str, dict[str, object]]]:
    return [(d, {"doc_id": d, "items": 1}) for d in doc_ids]


# --- communities ---------------------------------------------------------------------------------------


@pytest.fixture
def communities(driver: Driver, namespace: str) -> Iterator[Neo4jCommunityProjection]:
    # Two units per write transaction: every community is written in pieces and dropped in rounds, the
    # path a top-level community of a large graph takes.
    projection = Neo4jCommunityProjection(driver, namespace=namespace, write_batch=2)
    try:
        yield projection
    finally:
        projection.drop_namespace()


def team_doc(store: PostgresGraphStore, doc_id: str, people: Sequence[str], team: str, *, version: int = 1) -> None:
    text = " ".join(f"{p} leads the {team} team." for p in people)
    [chunk] = commit_doc(Stores(store, store), doc_id, [text], version=version)
    mentions = [mention(p, "Person") for p in people] + [mention(team, "Team")]
    relations = [leads(p, team, f"{p} leads the {team} team") for p in people]
    store.save([result(chunk, entities=mentions, relations=relations)])


def assert_communities_match(pg: PostgresCommunityStore, neo: Neo4jCommunityProjection) -> None:
    want = pg.communities()
    assert sorted(neo.community_headers(), key=lambda h: h.community_id) == sorted(
        (header_of(c) for c in want), key=lambda h: h.community_id
    )
    for c in want:
        assert neo.members(c.community_id) == list(c.member_ids)
    assert neo.parent_links() == {c.community_id: c.parent_id for c in want if c.parent_id is not None}
    assert neo.member_entities() == {m for c in want for m in c.member_ids}


def test_communities_follow_postgresql_through_change_and_deletion(
    store: PostgresGraphStore, communities: Neo4jCommunityProjection, driver: Driver
) -> None:
    pg = PostgresCommunityStore(store.pool)
    # Coarse at the top, fine below: Routing and Platform (one lead in common) are one community at level 0
    # and two at level 1, so PARENT links are written too.
    levels = BuildSettings(resolution=0.05, resolution_step=40.0, split_above=4)
    service = CommunityService(pg, pg, LeidenDetector(), levels)
    builder = CommunityBuilderHandler(service)
    settings = KgragSettings(neo4j_uri=endpoint("neo4j"), neo4j_namespace=communities.namespace)
    graph = Neo4jLexicalGraph(driver, namespace=communities.namespace)
    # The service's wiring: the builder, then the sync.
    handler = with_community_projection(settings, builder, store.pool, graph=graph)
    assert isinstance(handler, CompositeHandler)
    assert [type(p) for p in handler.parts] == [CommunityBuilderHandler, CommunityProjectionHandler]

    team_doc(store, "doc-routing", ["Priya Raman", "Omar Diaz", "Ana Ruiz"], "Routing")
    team_doc(store, "doc-platform", ["Priya Raman", "Li Wei", "Jo Park"], "Platform")
    team_doc(store, "doc-billing", ["Lena Vogt", "Ken Ito"], "Billing")
    handler.handle(GRAPH_CHANGED, events("doc-routing", "doc-platform", "doc-billing"))
    assert len(pg.communities()) >= 2
    assert communities.parent_links() != {}  # level 1 exists
    assert_communities_match(pg, communities)

    # Billing gains a member: its community gets a new id; the old one leaves the projection.
    [old_billing] = pg.communities_of([contract_entity_id("Team", "Billing")])
    team_doc(store, "doc-billing", ["Lena Vogt", "Ken Ito", "Sam Oye"], "Billing", version=2)
    handler.handle(GRAPH_CHANGED, events("doc-billing"))
    assert old_billing.community_id not in {h.community_id for h in communities.community_headers()}
    assert contract_entity_id("Person", "Sam Oye") in communities.member_entities()
    assert_communities_match(pg, communities)

    # Compliance deletion: the deletion's transaction marks Billing stale; a sync alone mirrors the flag.
    delete_doc(Stores(store, store), "doc-billing")
    assert sync_communities(PostgresCommunitySource(store.pool), communities).written >= 1  # in pieces
    assert any(h.stale for h in communities.community_headers())
    assert_communities_match(pg, communities)
    # The re-extraction's graph.changed reclusters it away: nothing of the document stays in Neo4j.
    handler.handle(GRAPH_CHANGED, events("doc-billing"))
    gone = {contract_entity_id("Person", p) for p in ("Lena Vogt", "Ken Ito", "Sam Oye")}
    gone.add(contract_entity_id("Team", "Billing"))
    assert not (gone & {m for c in pg.communities() for m in c.member_ids})
    assert not (gone & communities.member_entities())
    assert contract_entity_id("Person", "Priya Raman") in communities.member_entities()  # positive control
    assert_communities_match(pg, communities)

    # Rebuildable (`admin rebuild --projection neo4j`): an emptied projection is refilled, and a second
    # rebuild writes nothing.
    communities.drop_namespace()
    assert communities.community_headers() == []
    assert rebuild_graph_projections(graph, store.pool)["communities_written"] == len(pg.communities())
    assert_communities_match(pg, communities)
    assert rebuild_graph_projections(graph, store.pool)["communities_written"] == 0

    # In bounded pieces (the fixture's write_batch of 2 units): dropped in rounds, orphans swept, rewritten.
    source = PostgresCommunitySource(store.pool)
    communities.drop_communities([h.community_id for h in communities.community_headers()])
    assert communities.community_headers() == [] and communities.member_entities() == set()
    assert sync_communities(source, communities).written == len(pg.communities())
    assert_communities_match(pg, communities)


# --- text graph ----------------------------------------------------------------------------------------


@pytest.fixture
def text_graph(driver: Driver, namespace: str) -> Iterator[Neo4jTextGraphProjection]:
    projection = Neo4jTextGraphProjection(driver, namespace=namespace)
    try:
        yield projection
    finally:
        projection.drop_namespace()


def used_nodes(store: PostgresGraphStore) -> set[str]:
    """The nodes some edge in PostgreSQL still uses (text_graph_nodes keeps a row once seen)."""
    with store.pool as conn:
        rows = conn.execute(
            "SELECT node_key FROM text_graph_mentions UNION SELECT node_a FROM text_graph_synonyms"
            " UNION SELECT node_b FROM text_graph_synonyms"
        ).fetchall()
    return {str(r[0]) for r in rows}


def assert_text_graph_matches(
    store: PostgresGraphStore, source: PostgresTextGraphSource, neo: Neo4jTextGraphProjection, docs: Sequence[str]
) -> None:
    for doc_id in docs:
        assert neo.text_graph_of(doc_id) == source.text_graph_of(doc_id), doc_id
    assert neo.text_graph_documents() == source.text_graph_documents()
    assert neo.node_keys() == used_nodes(store)


def test_the_text_graph_follows_postgresql_through_change_and_deletion(
    store: PostgresGraphStore, text_graph: Neo4jTextGraphProjection, driver: Driver
) -> None:
    graph = PostgresTextGraph(store.pool, store.installation_key, store.cipher)
    build = TextGraphHandler(store, TextGraphBuilder(graph, PatternPhraseExtractor()))
    source = PostgresTextGraphSource(store.pool)
    project = TextGraphProjectionHandler(source, text_graph)
    docs = ("doc-atlas", "doc-hr")
    stores = Stores(store, store)

    commit_doc(stores, "doc-atlas", ["Atlas runs on Orion in Oslo.", "Orion is hosted by Vega Systems."])
    [hr_chunk] = commit_doc(stores, "doc-hr", ["Dana Lee reviews Orion Cloud for Vega."], acl=HR)
    build.handle(CHUNKS_CHANGED, events(*docs))
    keys = graph.node_keys(["orion", "orion cloud"])
    # A synonym whose evidence is the HR chunk (as the builder writes one for a new, near-identical name).
    graph.add_synonyms([SynonymEdge(keys["orion cloud"], keys["orion"], hr_chunk.chunk_id, HR.acl_class_id, 0.91)])
    project.handle(GRAPH_CHANGED, events(*docs))
    assert_text_graph_matches(store, source, text_graph, docs)
    hr = text_graph.text_graph_of("doc-hr")
    assert hr.mentions and {m.acl_class_id for m in hr.mentions} == {HR.acl_class_id}  # each edge's evidence class
    assert [s.chunk_id for s in hr.synonyms] == [hr_chunk.chunk_id]
    atlas = text_graph.text_graph_of("doc-atlas")
    assert atlas.mentions and {m.acl_class_id for m in atlas.mentions} == {ENG.acl_class_id}

    # An ACL change: the rebuilt edges carry the new class in Neo4j too (what a reader filters on).
    assert store.update_acl("doc-atlas", HR)
    build.handle(CHUNKS_CHANGED, events("doc-atlas"))
    project.handle(GRAPH_CHANGED, events("doc-atlas"))
    assert_text_graph_matches(store, source, text_graph, docs)
    assert {m.acl_class_id for m in text_graph.text_graph_of("doc-atlas").mentions} == {HR.acl_class_id}
    assert store.update_acl("doc-atlas", ENG)
    build.handle(CHUNKS_CHANGED, events("doc-atlas"))
    project.handle(GRAPH_CHANGED, events("doc-atlas"))
    assert {m.acl_class_id for m in text_graph.text_graph_of("doc-atlas").mentions} == {ENG.acl_class_id}

    # A changed document: new chunks, new names; the old passages and the names only they had go.
    only_before = graph.node_keys(["vega systems", "oslo"])
    commit_doc(stores, "doc-atlas", ["Atlas now runs on Vega Systems in Bergen."], version=2)
    build.handle(CHUNKS_CHANGED, events("doc-atlas"))
    project.handle(GRAPH_CHANGED, events("doc-atlas", "doc-atlas"))
    assert_text_graph_matches(store, source, text_graph, docs)
    assert only_before["oslo"] not in text_graph.node_keys()
    assert only_before["vega systems"] in text_graph.node_keys()  # still named by the new version

    # Deletion: the HR document's passages, edges, synonym and the nodes only it named leave Neo4j.
    hr_only = graph.node_keys(["dana lee", "orion cloud"])
    delete_doc(stores, "doc-hr")
    build.handle(CHUNKS_CHANGED, events("doc-hr"))
    project.handle(GRAPH_CHANGED, events("doc-hr"))
    assert_text_graph_matches(store, source, text_graph, docs)
    assert text_graph.text_graph_of("doc-hr").mentions == () and text_graph.text_graph_of("doc-hr").synonyms == ()
    assert not (set(hr_only.values()) & text_graph.node_keys())
    assert text_graph.text_graph_documents() == ["doc-atlas"]  # positive control: the other document stays

    # Rebuildable, and leftovers go: a projection holding a document PostgreSQL no longer has is cleaned.
    text_graph.drop_namespace()
    text_graph.replace_text_graph(hr)  # a stale copy of the deleted document
    rebuilt = rebuild_graph_projections(Neo4jLexicalGraph(driver, namespace=text_graph.namespace), store.pool)
    assert rebuilt["text_graph_documents"] == 2  # doc-atlas, and doc-hr's leftovers removed
    assert_text_graph_matches(store, source, text_graph, docs)


# --- the text graph on Kafka ---------------------------------------------------------------------------


def _mentioned_chunks(source: PostgresTextGraphSource, doc_id: str) -> set[str]:
    return {m.chunk_id for m in source.text_graph_of(doc_id).mentions}


def test_the_graph_writer_projects_the_text_graph_built_on_kafka(
    distributed_settings: KgragSettings, stores: DistributedStores, workers: Workers, driver: Driver
) -> None:
    """The services' wiring on Kafka: the extractor builds the text graph in PostgreSQL from chunks.changed,
    the graph-writer's part projects it on the graph.changed that follows; a re-ingest and a deletion reach
    Neo4j the same way."""
    settings = distributed_settings.model_copy(update={"text_graph": True, "text_graph_timeout_s": 60.0})
    indexer = stores.indexer(settings)
    workers.start("chunk-indexer", ChunkIndexerHandler(indexer, name="chunk-indexer", topics=(DOCUMENTS_CHANGED,)))
    workers.start("deletion-worker", ChunkIndexerHandler(indexer, name="deletion-worker", topics=(DOCUMENTS_DELETED,)))
    extractor = ExtractorHandler(
        stores.store, build_extractor(settings, store=stores.extraction, llm=None), name="extractor"
    )
    workers.start("extractor", with_text_graph(settings, extractor, stores.store, None, embedder=stores.embedder))
    graph = Neo4jLexicalGraph(driver, namespace=settings.neo4j_namespace)
    part = text_graph_projection(settings, graph, stores.store.pool)
    assert part is not None  # KGRAG_TEXT_GRAPH: the graph-writer runs it
    workers.start("graph-writer", CompositeHandler("graph-writer", [part]))
    target = Neo4jTextGraphProjection(driver, namespace=settings.neo4j_namespace)
    source = PostgresTextGraphSource(stores.store.pool)
    gateway = KafkaIngest(producer(settings, "test"))
    docs = [d.doc_id for d in (QUILLON, MEMO)]

    def in_parity(*doc_ids: str) -> bool:
        return target.text_graph_documents() == source.text_graph_documents() and all(
            target.text_graph_of(d) == source.text_graph_of(d) for d in doc_ids
        )

    def built(*doc_ids: str) -> bool:
        return all(_mentioned_chunks(source, d) for d in doc_ids) and in_parity(*doc_ids)

    try:
        gateway.ingest([QUILLON, MEMO])
        wait_for(lambda: built(*docs), timeout_s=120, what="both documents built and projected")
        memo = target.text_graph_of(MEMO.doc_id)
        [memo_class] = {m.acl_class_id for m in memo.mentions}  # the restricted memo's class, on every edge
        [staff_class] = {m.acl_class_id for m in target.text_graph_of(QUILLON.doc_id).mentions}
        assert memo_class != staff_class

        old = _mentioned_chunks(source, QUILLON.doc_id)
        gateway.ingest([CHANGED])
        wait_for(
            lambda: (
                (now := _mentioned_chunks(source, QUILLON.doc_id)) != set() and not (now & old) and in_parity(*docs)
            ),
            what="the changed document re-projected",
        )
        assert not any(p in {m.chunk_id for m in target.text_graph_of(QUILLON.doc_id).mentions} for p in old)

        gateway.delete(MEMO.doc_id)
        wait_for(lambda: target.text_graph_documents() == [QUILLON.doc_id], timeout_s=120, what="the memo gone")
        assert in_parity(*docs)
        assert target.node_keys() == {m.node_key for m in source.text_graph_of(QUILLON.doc_id).mentions}
    finally:
        target.drop_namespace()


# --- the benchmark -------------------------------------------------------------------------------------


def test_the_projection_benchmark_reports_each_sync_in_parity(pg_server_dsn: str, driver: Driver) -> None:
    """`make bench-distributed`'s community-projection part, small: the report is whole and every step's
    projection equals PostgreSQL (the `driver` fixture holds the Neo4j lock while it runs)."""
    results = graph_projections.run(1000, pg_server_dsn, endpoint("neo4j"), Console(file=io.StringIO()))
    size = results["size"]
    assert (size["communities"], size["member_links"]) == (60, 2000)
    steps = {name: (row["written"], row["removed"], row["mismatches"]) for name, row in size["steps"].items()}
    assert steps == {
        "first sync (rebuild)": (60, 0, 0),
        "nothing to do": (0, 0, 0),
        "one community stale": (2, 0, 0),  # the member's community and its parent
        "one community reclustered": (1, 3, 0),  # a new id; the old one and its two children go
    }
    assert "| nothing to do |" in graph_projections.markdown(results)
