"""The communities' and the text graph's Neo4j projections (issues 12, 13): the services' handlers for
them, and the rebuild from PostgreSQL.

The community-builder syncs communities after each build (`with_community_projection`); the graph-writer
projects a document's text graph on graph.changed (`text_graph_projection`). `rebuild_graph_projections`
is what `admin rebuild --projection neo4j` runs after a lost or restored Neo4j. All are idempotent: run
twice, the second writes nothing new. Nothing reads these projections on the query path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgrag_runtime.settings import KgragSettings

if TYPE_CHECKING:
    from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
    from kgrag_adapters.postgres.pool import ConnectionPool
    from kgrag_core.handlers.protocol import Handler


def with_community_projection(
    settings: KgragSettings, handler: Handler, pool: ConnectionPool, *, graph: Neo4jLexicalGraph | None = None
) -> Handler:
    """The community-builder's handler (distributed): with KGRAG_NEO4J_URI, each batch, once the builder has
    committed to PostgreSQL, syncs the communities' Neo4j projection (PostgreSQL stays authoritative).
    `graph`: the Neo4j connection to use (the service connects one, for its lifetime)."""
    if not settings.neo4j_uri:
        return handler
    from kgrag_adapters.neo4j.communities import Neo4jCommunityProjection
    from kgrag_adapters.postgres.community_source import PostgresCommunitySource
    from kgrag_core.handlers.community_projection import CommunityProjectionHandler
    from kgrag_core.handlers.composite import CompositeHandler
    from kgrag_runtime.distributed import connect_neo4j

    graph = graph or connect_neo4j(settings)
    projection = Neo4jCommunityProjection(graph.driver, graph.database, namespace=graph.namespace)
    sync = CommunityProjectionHandler(PostgresCommunitySource(pool), projection)
    return CompositeHandler(handler.name, [handler, sync])


def text_graph_projection(settings: KgragSettings, graph: Neo4jLexicalGraph, pool: ConnectionPool) -> Handler | None:
    """The graph-writer's part for the text graph: with KGRAG_TEXT_GRAPH, graph.changed -> the document's
    passages, nodes and edges in `graph`'s namespace; None without it (there is nothing to project)."""
    if not settings.text_graph:
        return None
    from kgrag_adapters.neo4j.text_graph import Neo4jTextGraphProjection
    from kgrag_adapters.postgres.text_graph_source import PostgresTextGraphSource
    from kgrag_core.handlers.text_graph_projection import TextGraphProjectionHandler

    target = Neo4jTextGraphProjection(graph.driver, graph.database, namespace=graph.namespace)
    return TextGraphProjectionHandler(PostgresTextGraphSource(pool), target)


def rebuild_graph_projections(graph: Neo4jLexicalGraph, pool: ConnectionPool) -> dict[str, int]:
    """Sync the communities and re-project every document's text graph into `graph`'s namespace."""
    from kgrag_adapters.neo4j.communities import Neo4jCommunityProjection
    from kgrag_adapters.neo4j.text_graph import Neo4jTextGraphProjection
    from kgrag_adapters.postgres.community_source import PostgresCommunitySource
    from kgrag_adapters.postgres.text_graph_source import PostgresTextGraphSource
    from kgrag_core.handlers.community_projection import sync_communities
    from kgrag_core.handlers.text_graph_projection import rebuild_text_graph

    communities = Neo4jCommunityProjection(graph.driver, graph.database, namespace=graph.namespace)
    receipt = sync_communities(PostgresCommunitySource(pool), communities)
    text_graph = Neo4jTextGraphProjection(graph.driver, graph.database, namespace=graph.namespace)
    documents = rebuild_text_graph(PostgresTextGraphSource(pool), text_graph)
    return {
        "communities_written": receipt.written,
        "communities_removed": receipt.removed,
        "text_graph_documents": documents,
    }
