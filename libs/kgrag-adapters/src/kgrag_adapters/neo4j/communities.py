"""The communities projected into Neo4j (`CommunityProjection`; kgrag_core.handlers.community_projection).

Shape (every node carries `ns`, keys are (ns, id); schema/constraints.cypher):

    (:KgCommunityEntity {entity_id})-[:IN_COMMUNITY]->(:KgCommunity {community_id, level, stale,
        graph_version, content_hash, weight, size, built_at})-[:PARENT]->(:KgCommunity)   child -> parent

`entity_id` is the canonical entity id (a keyed hash: it names nothing), the one `KgCanonical.canonical_id`
and `KgEntity.canonical_id` hold in the knowledge projection. Members get nodes of their own rather than
links to those: the knowledge projection deletes and recreates its entity nodes whenever it re-projects a
scope, which would silently take the membership links with them. Nothing here is read on the query path
(communities are read from PostgreSQL); it is a projection for graph tools, rebuildable by one sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import LiteralString

from neo4j import Driver, ManagedTransaction, NotificationMinimumSeverity, Session

from kgrag_adapters.neo4j.lexical_graph import DEFAULT_NAMESPACE
from kgrag_core.communities.model import Community
from kgrag_core.handlers.community_projection import CommunityHeader

_HEADERS: LiteralString = """
MATCH (k:KgCommunity {ns: $ns})
RETURN k.community_id AS id, k.level AS level, k.parent_id AS parent, k.stale AS stale,
       k.graph_version AS version, k.content_hash AS hash
"""

_PUT: LiteralString = """
UNWIND $rows AS row
MERGE (k:KgCommunity {ns: $ns, community_id: row.community_id})
SET k.level = row.level, k.parent_id = row.parent_id, k.stale = row.stale, k.graph_version = row.graph_version,
    k.content_hash = row.content_hash, k.weight = row.weight, k.size = row.size, k.built_at = row.built_at
WITH k, row
CALL (k) {
  MATCH (k)-[old:PARENT]->()
  DELETE old
}
CALL (k, row) {
  MATCH (k)<-[old:IN_COMMUNITY]-(m:KgCommunityEntity)
  WHERE NOT m.entity_id IN row.members
  DELETE old
  WITH m WHERE NOT EXISTS { (m)-[:IN_COMMUNITY]->() }
  DELETE m
}
CALL (k, row) {
  WITH row WHERE row.parent_id IS NOT NULL
  MERGE (p:KgCommunity {ns: $ns, community_id: row.parent_id})
  MERGE (k)-[:PARENT]->(p)
}
CALL (k, row) {
  UNWIND row.members AS entity_id
  MERGE (m:KgCommunityEntity {ns: $ns, entity_id: entity_id})
  MERGE (m)-[:IN_COMMUNITY]->(k)
}
"""

_DROP: LiteralString = """
UNWIND $ids AS id
MATCH (k:KgCommunity {ns: $ns, community_id: id})
OPTIONAL MATCH (k)<-[:IN_COMMUNITY]-(m:KgCommunityEntity)
WITH k, collect(m) AS members
DETACH DELETE k
WITH members
UNWIND members AS m
WITH DISTINCT m
WHERE NOT EXISTS { (m)-[:IN_COMMUNITY]->() }
DELETE m
"""

_DROP_NAMESPACE: LiteralString = """
MATCH (n {ns: $ns})
WHERE n:KgCommunity OR n:KgCommunityEntity
DETACH DELETE n
"""


class Neo4jCommunityProjection:
    """On a driver the caller owns (the graph-writer's or community-builder's lexical-graph driver)."""

    def __init__(self, driver: Driver, database: str | None = None, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        if not namespace:
            raise ValueError("namespace must be a non-empty string")
        self._driver = driver
        self._database = database
        self._ns = namespace

    @property
    def namespace(self) -> str:
        return self._ns

    def community_headers(self) -> list[CommunityHeader]:
        def work(tx: ManagedTransaction) -> list[CommunityHeader]:
            return [
                CommunityHeader(
                    str(r["id"]),
                    int(r["level"]),
                    r["parent"],
                    bool(r["stale"]),
                    int(r["version"]),
                    str(r["hash"]),
                )
                for r in tx.run(_HEADERS, ns=self._ns)
                if r["level"] is not None  # a parent stub awaiting its own write is no copy yet
            ]

        with self._session() as session:
            return session.execute_read(work)

    def members(self, community_id: str) -> list[str]:
        """The projected members of one community, sorted (for checks and graph tools)."""
        query: LiteralString = (
            "MATCH (:KgCommunity {ns: $ns, community_id: $id})<-[:IN_COMMUNITY]-(m:KgCommunityEntity)"
            " RETURN m.entity_id AS id ORDER BY id"
        )
        with self._session() as session:
            return session.execute_read(lambda tx: [str(r["id"]) for r in tx.run(query, ns=self._ns, id=community_id)])

    def parent_links(self) -> dict[str, str]:
        """child id -> parent id, as the PARENT relationships say."""
        query: LiteralString = (
            "MATCH (c:KgCommunity {ns: $ns})-[:PARENT]->(p:KgCommunity)"
            " RETURN c.community_id AS child, p.community_id AS parent"
        )
        with self._session() as session:
            return session.execute_read(lambda tx: {r["child"]: r["parent"] for r in tx.run(query, ns=self._ns)})

    def member_entities(self) -> set[str]:
        """Every member node's entity id (what a deletion must not leave behind)."""
        query: LiteralString = "MATCH (m:KgCommunityEntity {ns: $ns}) RETURN m.entity_id AS id"
        with self._session() as session:
            return session.execute_read(lambda tx: {str(r["id"]) for r in tx.run(query, ns=self._ns)})

    def put_communities(self, communities: Sequence[Community]) -> None:
        rows = [
            {
                "community_id": c.community_id,
                "level": c.level,
                "parent_id": c.parent_id,
                "stale": c.stale,
                "graph_version": c.graph_version,
                "content_hash": c.content_hash,
                "weight": float(c.weight),
                "size": c.size,
                "built_at": c.built_at.isoformat(),
                "members": list(c.member_ids),
            }
            for c in communities
        ]
        if rows:
            with self._session() as session:
                session.execute_write(lambda tx: tx.run(_PUT, ns=self._ns, rows=rows).consume())

    def drop_communities(self, community_ids: Sequence[str]) -> None:
        if community_ids:
            ids = list(community_ids)
            with self._session() as session:
                session.execute_write(lambda tx: tx.run(_DROP, ns=self._ns, ids=ids).consume())

    def drop_namespace(self) -> None:
        with self._session() as session:
            session.execute_write(lambda tx: tx.run(_DROP_NAMESPACE, ns=self._ns).consume())

    def _session(self) -> Session:
        return self._driver.session(database=self._database, notifications_min_severity=NotificationMinimumSeverity.OFF)
