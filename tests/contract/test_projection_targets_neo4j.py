"""The Neo4j graph projections (communities, text graph) against their contract suites (the community one
both in whole transactions and in two-unit pieces). Needs the dev services' Neo4j."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from neo4j import Driver, GraphDatabase

from kgrag_adapters.neo4j.communities import Neo4jCommunityProjection
from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
from kgrag_adapters.neo4j.text_graph import Neo4jTextGraphProjection
from kgrag_testing.contracts.graph_projections import CommunityProjectionContract, TextGraphProjectionContract
from tests.integration.conftest import endpoint
from tests.neo4j_lock import neo4j_held

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    """The server, schema applied, with the lock the Neo4j contract tests hold (they wipe the database)."""
    with neo4j_held(endpoint("neo4j")) as uri, GraphDatabase.driver(uri) as drv:
        Neo4jLexicalGraph(drv).ensure_schema()
        yield drv


class TestNeo4jCommunityProjection(CommunityProjectionContract):
    @pytest.fixture(params=[5000, 2], ids=["whole", "in-pieces"])
    def community_projection(
        self, driver: Driver, request: pytest.FixtureRequest
    ) -> Iterator[Neo4jCommunityProjection]:
        namespace = f"test-{uuid.uuid4().hex[:12]}"
        projection = Neo4jCommunityProjection(driver, namespace=namespace, write_batch=request.param)
        try:
            yield projection
        finally:
            projection.drop_namespace()


class TestNeo4jTextGraphProjection(TextGraphProjectionContract):
    @pytest.fixture
    def text_graph_projection(self, driver: Driver) -> Iterator[Neo4jTextGraphProjection]:
        projection = Neo4jTextGraphProjection(driver, namespace=f"test-{uuid.uuid4().hex[:12]}")
        try:
            yield projection
        finally:
            projection.drop_namespace()
