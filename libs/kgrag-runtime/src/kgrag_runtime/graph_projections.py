"""Rebuilding the communities' and the text graph's Neo4j projections from PostgreSQL (issues 12, 13).

The services keep them current (the community-builder syncs communities after each build, the graph-writer
projects a document's text graph on graph.changed); this is the rebuild `admin rebuild --projection neo4j`
runs after a lost or restored Neo4j. Both are idempotent: run twice, the second writes nothing new.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgrag_adapters.neo4j.lexical_graph import Neo4jLexicalGraph
    from kgrag_adapters.postgres.pool import ConnectionPool


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
