"""Graph reads served by Neo4j in distributed mode, with PostgreSQL authoritative (kgrag_core.graph.routing).

Real PostgreSQL and Neo4j: the world is written to PostgreSQL only and projected by the graph-writer's
handler, which records the watermark. The routed reader must answer from Neo4j only while the watermark
has reached PostgreSQL's graph version, answer what PostgreSQL answers otherwise (a deletion or an ACL
change not yet projected never shows), and fall back when Neo4j does not answer. The entity API (pages,
neighbours with expansion, resolve) gives the same answers on either reader for an outsider, an
engineering reader, an HR reader and an administrator (positive controls: who must see what, sees it).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from functools import partial

import pytest
from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError
from prometheus_client import CollectorRegistry, generate_latest

from kgrag_adapters.neo4j.knowledge_graph import Neo4jKnowledgeGraph
from kgrag_adapters.postgres.graph_store import PostgresGraphStore
from kgrag_adapters.postgres.knowledge_source import PostgresKnowledgeSource
from kgrag_adapters.postgres.store import PostgresStore
from kgrag_core.acl import Caller
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.events import GRAPH_CHANGED
from kgrag_core.graph.ports import GraphReader
from kgrag_core.graph.routing import Route, RoutedGraphReader
from kgrag_core.handlers.knowledge_projection import KnowledgeProjectionHandler
from kgrag_core.resolution.resolver import Resolver
from kgrag_core.resolution.service import ResolutionService
from kgrag_runtime.graph_admin import GraphAdmin
from kgrag_runtime.graph_reads import GraphReadsCollector
from kgrag_testing.contracts.entity_ids import CONTRACT_ENTITY_KEY
from kgrag_testing.contracts.graph_store import (
    ADMIN,
    DANA,
    ENG_READER,
    HR,
    HR_READER,
    PRIYA,
    ROUTING,
    build_world,
    relations,
)
from tests.integration.conftest import endpoint
from tests.integration.test_knowledge_projection import DOCS, ENTITIES, NAMES, PostgresOnly, doc_events
from tests.neo4j_lock import neo4j_held

pytestmark = pytest.mark.integration

UNAVAILABLE = (DriverError, Neo4jError)
OUTSIDER = Caller(user="mallory")
ENGINEER = Caller(user="bob", groups=("eng",))
HR_PERSON = Caller(user="hana", groups=("hr",))
ADMINISTRATOR = Caller(user="root", admin=True)
CALLERS = {"outsider": OUTSIDER, "eng": ENGINEER, "hr": HR_PERSON, "admin": ADMINISTRATOR}


@pytest.fixture(scope="module")
def neo4j_uri() -> Iterator[str]:
    with neo4j_held(endpoint("neo4j")) as uri:
        yield uri


@pytest.fixture
def neo(neo4j_uri: str) -> Iterator[Neo4jKnowledgeGraph]:
    with Neo4jKnowledgeGraph.connect(neo4j_uri, namespace=f"test-reads-{uuid.uuid4().hex[:12]}") as graph:
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


@pytest.fixture
def routed(world: PostgresOnly, neo: Neo4jKnowledgeGraph) -> RoutedGraphReader:
    return RoutedGraphReader(world.pg, neo, unavailable=UNAVAILABLE)


def project_all(handler: KnowledgeProjectionHandler) -> None:
    result = handler.handle(GRAPH_CHANGED, doc_events(*DOCS))
    assert result.dead_letters == []


def reads(reader: GraphReader) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, acl in (("eng", ENG_READER), ("hr", HR_READER), ("admin", ADMIN)):
        out[name] = {
            "entities": {e: reader.entity(e, acl) for e in ENTITIES},
            "neighbours": {e: reader.neighbours(e, acl) for e in ENTITIES},
            "named": reader.entities_named(NAMES, acl),
            "hubs": reader.hubs_among(list(ENTITIES), acl),
            "claims": reader.claims_of(ENTITIES, acl),
        }
    return out


# --- the watermark ----------------------------------------------------------------------------------------


def test_the_graph_version_grows_with_every_graph_change_and_the_handler_records_it(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    empty = world.pg.graph_version()
    build_world(world)
    built = world.pg.graph_version()
    assert built > empty
    assert neo.watermark() is None
    project_all(handler)
    assert neo.watermark() == built
    world.delete_document("doc-hr")
    assert world.pg.graph_version() > built
    neo.record_watermark(built - 1)  # a replica that read an older version finishing last
    assert neo.watermark() == built


def test_reads_go_to_neo4j_only_once_it_is_caught_up(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler, routed: RoutedGraphReader
) -> None:
    build_world(world)
    assert neo.entity(PRIYA, ADMIN) is None  # nothing projected: Neo4j alone would answer "unknown"
    assert routed.entity(PRIYA, ADMIN) == world.pg.entity(PRIYA, ADMIN) is not None
    assert routed.counts[Route.BEHIND] == 1
    assert routed.lag() is None
    project_all(handler)
    assert routed.lag() == 0
    assert reads(routed) == reads(world.pg)
    counts = routed.counts
    assert counts[Route.PROJECTION] > 0
    assert (counts[Route.BEHIND], counts[Route.UNAVAILABLE]) == (1, 0)


def test_a_deletion_not_yet_projected_never_shows(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler, routed: RoutedGraphReader
) -> None:
    build_world(world)
    project_all(handler)
    assert routed.entity(DANA, HR_READER) is not None  # positive control: HR sees Dana while doc-hr exists
    world.delete_document("doc-hr")  # PostgreSQL only: its event has not reached the graph-writer
    assert neo.entity(DANA, HR_READER) is not None  # the projection is stale ...
    assert routed.lag() is not None and routed.lag() > 0  # type: ignore[operator]
    before = routed.counts[Route.BEHIND]
    assert routed.entity(DANA, HR_READER) is None  # ... and is not read
    assert "REPORTS_TO" not in [r for _, r, _ in relations(routed.neighbours(PRIYA, HR_READER))]
    assert routed.entities_named(["Dana Lee"], ADMIN) == {"dana lee": []}
    assert routed.counts[Route.BEHIND] == before + 3
    handler.handle(GRAPH_CHANGED, doc_events("doc-hr"))
    assert routed.entity(DANA, HR_READER) is None
    assert routed.counts[Route.PROJECTION] > 0 and routed.lag() == 0
    assert reads(routed) == reads(world.pg)


def test_an_acl_change_not_yet_projected_never_shows(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler, routed: RoutedGraphReader
) -> None:
    build_world(world)
    project_all(handler)
    assert routed.entity(ROUTING, ENG_READER) is not None  # positive control
    for doc_id in ("doc-routing", "doc-atlas"):
        assert world.documents.update_acl(doc_id, HR)
    assert neo.entity(ROUTING, ENG_READER) is not None  # stale projection
    assert routed.entity(ROUTING, ENG_READER) is None
    assert routed.neighbours(PRIYA, ENG_READER) == []
    assert routed.entity(ROUTING, HR_READER) is not None  # the new reach is served too
    handler.handle(GRAPH_CHANGED, doc_events("doc-routing", "doc-atlas"))
    assert reads(routed) == reads(world.pg)
    assert routed.lag() == 0


def test_an_unreachable_projection_falls_back_to_postgres(world: PostgresOnly) -> None:
    build_world(world)
    with GraphDatabase.driver("bolt://127.0.0.1:9", connection_timeout=1, max_transaction_retry_time=0) as driver:
        down = Neo4jKnowledgeGraph(driver, namespace="test-reads-down")
        routed = RoutedGraphReader(world.pg, down, unavailable=UNAVAILABLE)
        assert routed.entity(PRIYA, ENG_READER) == world.pg.entity(PRIYA, ENG_READER) is not None
        assert routed.neighbours(PRIYA, ENG_READER) == world.pg.neighbours(PRIYA, ENG_READER) != []
    assert routed.counts == {Route.PROJECTION: 0, Route.BEHIND: 0, Route.UNAVAILABLE: 2, Route.MERGE_SCOPED: 0}


def test_the_routes_taken_are_on_the_metrics(
    world: PostgresOnly, handler: KnowledgeProjectionHandler, routed: RoutedGraphReader
) -> None:
    registry = CollectorRegistry()
    registry.register(GraphReadsCollector(routed))
    build_world(world)
    routed.entity(PRIYA, ENG_READER)  # behind: nothing projected yet
    project_all(handler)
    routed.entity(PRIYA, ENG_READER)
    routed.neighbours(PRIYA, ENG_READER)
    text = generate_latest(registry).decode()
    assert 'kgrag_graph_reads_total{route="behind"} 1.0' in text
    assert 'kgrag_graph_reads_total{route="projection"} 2.0' in text
    assert 'kgrag_graph_reads_total{route="unavailable"} 0.0' in text


# --- parity through the entity API ------------------------------------------------------------------------


def answer(call: Callable[[], object]) -> object:
    """A GraphAdmin answer, or the error code it refused with (an unknown or invisible entity: 404)."""
    try:
        return call()
    except KgragError as err:
        return err.code


def entity_api(admin: GraphAdmin) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, caller in CALLERS.items():
        out[name] = {
            "pages": {e: answer(partial(admin.entity, e, caller)) for e in ENTITIES},
            "expansion": {e: answer(partial(admin.neighbours, e, caller, depth=2)) for e in ENTITIES},
            "resolve": {n: admin.resolve(n, caller) for n in NAMES},
        }
    return out


def test_the_entity_api_answers_the_same_from_both_readers(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler
) -> None:
    build_world(world)
    project_all(handler)
    service = ResolutionService(store=world.pg, resolver=Resolver())
    on_pg = GraphAdmin(world.pg, world.documents, service)
    on_neo = GraphAdmin(world.pg, world.documents, service, reader=neo)
    from_pg, from_neo = entity_api(on_pg), entity_api(on_neo)
    assert from_neo == from_pg
    # Positive controls: the views differ as the ACLs say, so equality above is not of empty answers.
    assert from_pg["outsider"]["pages"][PRIYA] is ErrorCode.ENTITY_NOT_FOUND  # type: ignore[index]
    assert from_pg["eng"]["pages"][PRIYA]["entity_id"] == PRIYA  # type: ignore[index]
    assert from_pg["eng"]["pages"][DANA] is ErrorCode.ENTITY_NOT_FOUND  # type: ignore[index]
    assert from_pg["hr"]["pages"][DANA]["entity_id"] == DANA  # type: ignore[index]
    assert from_pg["outsider"]["resolve"]["Priya Raman"]["candidates"] == []  # type: ignore[index]
    assert from_pg["eng"]["resolve"]["Priya Raman"]["candidates"] != []  # type: ignore[index]
    assert from_pg["eng"]["expansion"][PRIYA] != from_pg["admin"]["expansion"][PRIYA]  # type: ignore[index]


def test_a_merge_the_caller_may_not_be_shown_is_answered_by_postgres(
    world: PostgresOnly, neo: Neo4jKnowledgeGraph, handler: KnowledgeProjectionHandler, routed: RoutedGraphReader
) -> None:
    """The projection joins a cluster whole; PostgreSQL shows a merge resting on restricted evidence only to
    readers of it (er_canonical.requires). A caller lacking them must never be answered by the projection."""
    build_world(world)
    service = ResolutionService(store=world.pg, resolver=Resolver())
    GraphAdmin(world.pg, world.documents, service).merge([PRIYA, ROUTING], canonical_id=PRIYA, reason="probe")
    with world.pg.pool as conn:  # as if only the HR document's evidence supported the merge
        conn.execute("UPDATE er_canonical SET requires = %s WHERE entity_id = %s", ([HR.acl_class_id], ROUTING))
    project_all(handler)
    assert routed.lag() == 0
    # The projection alone shows the engineer the joined cluster; PostgreSQL keeps the two apart for them.
    joined, apart = neo.entity(ROUTING, ENG_READER), world.pg.entity(ROUTING, ENG_READER)
    assert joined is not None and apart is not None and joined.entity.entity_id != apart.entity.entity_id == ROUTING
    assert world.pg.merges_shown_whole(ENG_READER) is False
    before = routed.counts
    assert routed.entity(ROUTING, ENG_READER) == apart
    assert routed.neighbours(PRIYA, ENG_READER) == world.pg.neighbours(PRIYA, ENG_READER)
    after = routed.counts
    assert after[Route.MERGE_SCOPED] == before[Route.MERGE_SCOPED] + 2
    assert after[Route.PROJECTION] == before[Route.PROJECTION]
    # Positive controls: the HR reader and the admin may see the merge whole, and the projection answers them.
    for allowed in (HR_READER + ENG_READER, ADMIN):
        assert world.pg.merges_shown_whole(allowed) is True
        assert routed.entity(ROUTING, allowed) == world.pg.entity(ROUTING, allowed) is not None
    assert routed.counts[Route.PROJECTION] == after[Route.PROJECTION] + 2
