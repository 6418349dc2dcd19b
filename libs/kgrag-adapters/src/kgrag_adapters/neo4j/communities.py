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
from typing import Any, LiteralString

from neo4j import Driver, ManagedTransaction, NotificationMinimumSeverity, Session

from kgrag_adapters.neo4j.lexical_graph import DEFAULT_NAMESPACE
from kgrag_adapters.neo4j.write_batches import bounded_batches
from kgrag_core.communities.model import Community
from kgrag_core.handlers.community_projection import CommunityHeader

# Member links (or communities, plus one per member) one write transaction holds at most, as for the
# knowledge projection (write_batches.py): a top-level community of a large graph has many thousands.
DEFAULT_WRITE_BATCH = 5000
_DROP_IDS = 200  # communities dropped per round

_HEADERS: LiteralString = """
MATCH (k:KgCommunity {ns: $ns})
RETURN k.community_id AS id, k.level AS level, k.parent_id AS parent, k.stale AS stale,
       k.graph_version AS version, k.content_hash AS hash
"""

# One piece of a community: its properties and parent link, and a slice of its members (a community of
# 100,000 members is written in several transactions, each piece carrying the same properties). Links are
# only ever added: an id is a hash of the level and the members, so a rewrite of the same id (stale flag,
# graph version, content hash or parent changed) never changes its members.
_PUT: LiteralString = """
UNWIND $rows AS row
MERGE (k:KgCommunity {ns: $ns, community_id: row.community_id})
SET k.level = row.level, k.parent_id = row.parent_id, k.stale = row.stale, k.graph_version = row.graph_version,
    k.content_hash = row.content_hash, k.weight = row.weight, k.size = row.size, k.built_at = row.built_at
WITH k, row
CALL (k, row) {
  OPTIONAL MATCH (k)-[old:PARENT]->(p:KgCommunity)
  WITH old, p WHERE old IS NOT NULL AND p.community_id <> coalesce(row.parent_id, '')
  DELETE old
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

# Dropping, in bounded transactions: the communities' member links a batch at a time, then the communities
# (their PARENT links with them), then every member node no community holds any more.
_DROP_LINKS: LiteralString = """
MATCH (k:KgCommunity {ns: $ns}) WHERE k.community_id IN $ids
MATCH (k)<-[r:IN_COMMUNITY]-()
WITH r LIMIT $limit
DELETE r
RETURN count(*) AS deleted
"""

_DROP: LiteralString = """
UNWIND $ids AS id
MATCH (k:KgCommunity {ns: $ns, community_id: id})
DETACH DELETE k
"""

_SWEEP_MEMBERS: LiteralString = """
MATCH (m:KgCommunityEntity {ns: $ns}) WHERE NOT EXISTS { (m)-[:IN_COMMUNITY]->() }
WITH m LIMIT $limit
DELETE m
RETURN count(*) AS deleted
"""

# In rounds of $limit nodes: one transaction for a large namespace would hold it all in the server's heap.
_DROP_NAMESPACE: LiteralString = """
MATCH (n {ns: $ns})
WHERE n:KgCommunity OR n:KgCommunityEntity
WITH n LIMIT $limit
DETACH DELETE n
RETURN count(*) AS deleted
"""


class Neo4jCommunityProjection:
    """On a driver the caller owns (the graph-writer's or community-builder's lexical-graph driver)."""

    def __init__(
        self,
        driver: Driver,
        database: str | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        write_batch: int = DEFAULT_WRITE_BATCH,
    ) -> None:
        if not namespace:
            raise ValueError("namespace must be a non-empty string")
        if write_batch < 2:
            raise ValueError(f"write_batch must be at least 2, got {write_batch}")
        self._write_batch = write_batch
        self._driver = driver
        self._database = database
        self._ns = namespace

    @property
    def namespace(self) -> str:
        return self._ns

    def community_headers(self) -> list[CommunityHeader]:
        def work(tx: ManagedTransaction) -> list[CommunityHeader]:
            # A parent stub (a child written while its parent vanished from PostgreSQL mid-sync) has no
            # properties: its header matches no source header, so the next sync removes or rewrites it.
            return [
                CommunityHeader(
                    str(r["id"]),
                    -1 if r["level"] is None else int(r["level"]),
                    r["parent"],
                    bool(r["stale"]),
                    -1 if r["version"] is None else int(r["version"]),
                    str(r["hash"] or ""),
                )
                for r in tx.run(_HEADERS, ns=self._ns)
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
        pieces: list[dict[str, Any]] = []
        for c in communities:
            props = {
                "community_id": c.community_id,
                "level": c.level,
                "parent_id": c.parent_id,
                "stale": c.stale,
                "graph_version": c.graph_version,
                "content_hash": c.content_hash,
                "weight": float(c.weight),
                "size": c.size,
                "built_at": c.built_at.isoformat(),
            }
            members = list(c.member_ids)
            starts = range(0, max(len(members), 1), self._write_batch)
            for start in starts:
                piece = {**props, "members": members[start : start + self._write_batch]}
                if start != starts[-1]:
                    # Not the last piece: no content hash yet, so a sync cut short here sees a header that
                    # differs from PostgreSQL's and writes the community again, whole.
                    piece["content_hash"] = ""
                pieces.append(piece)
        for batch in bounded_batches(pieces, lambda p: 1 + len(p["members"]), self._write_batch):
            self._write(_PUT, rows=batch)

    def drop_communities(self, community_ids: Sequence[str]) -> None:
        ids = list(community_ids)
        limit = self._write_batch
        for start in range(0, len(ids), _DROP_IDS):
            some = ids[start : start + _DROP_IDS]
            while self._write_count(_DROP_LINKS, ids=some, limit=limit):
                pass  # each round deletes up to `limit` member links
            self._write(_DROP, ids=some)
        # Every orphan, not only these communities' former members: a sweep cut short by a crash is finished
        # by the next drop.
        while ids and self._write_count(_SWEEP_MEMBERS, limit=limit):
            pass

    def drop_namespace(self) -> None:
        """Delete everything this projection holds in its namespace (other projections' nodes stay)."""
        while self._write_count(_DROP_NAMESPACE, limit=self._write_batch):
            pass

    def _write(self, query: LiteralString, **params: Any) -> None:
        def work(tx: ManagedTransaction) -> None:
            tx.run(query, ns=self._ns, **params).consume()

        with self._session() as session:
            session.execute_write(work)

    def _write_count(self, query: LiteralString, **params: Any) -> int:
        def work(tx: ManagedTransaction) -> int:
            record = tx.run(query, ns=self._ns, **params).single()
            return 0 if record is None else int(record["deleted"])

        with self._session() as session:
            return session.execute_write(work)

    def _session(self) -> Session:
        return self._driver.session(database=self._database, notifications_min_severity=NotificationMinimumSeverity.OFF)
