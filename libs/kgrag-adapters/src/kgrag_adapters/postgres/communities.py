"""Communities in PostgreSQL (migration 0027): `CommunityStore` and `CommunityGraphSource`.

The graph source reads as resolution does (an administrator's view: every ACTIVE document, the full
canonical mapping): communities are global structure, and a caller's view filters their members by the
graph reader's visibility (kgrag_core.communities.visible)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, LiteralString

import psycopg

from kgrag_adapters.postgres.graph_store import current_graph_version
from kgrag_adapters.postgres.pool import ConnectionPool
from kgrag_adapters.postgres.store import Row
from kgrag_core.communities.model import Community, GraphEdge

_COLUMNS: LiteralString = (
    "k.community_id, k.level, k.parent_id, k.weight, k.graph_version, k.built_at, k.stale, k.content_hash,"
    " ARRAY(SELECT cm.entity_id FROM kg_community_members cm WHERE cm.community_id = k.community_id"
    " ORDER BY cm.entity_id)"
)
_ORDER: LiteralString = " ORDER BY k.level, k.size DESC, k.community_id"

# Mention-level ids of the canonical ids in %(ids)s (the ids themselves included).
_MEMBERS_OF: LiteralString = (
    "(SELECT unnest(%(ids)s::text[]) UNION SELECT x.entity_id FROM er_canonical x"
    " WHERE x.canonical_id = ANY(%(ids)s::text[]))"
)

_EDGES: LiteralString = """
WITH per_relation AS (
    SELECT r.relation_id,
           COALESCE(cs.canonical_id, r.subject_id) AS s,
           COALESCE(co.canonical_id, r.object_id) AS o,
           SUM(ev.confidence) AS w
    FROM kg_relations r
    JOIN kg_relation_evidence ev ON ev.relation_id = r.relation_id
    JOIN chunks c ON c.chunk_id = ev.chunk_id
    JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'
    LEFT JOIN er_canonical cs ON cs.entity_id = r.subject_id
    LEFT JOIN er_canonical co ON co.entity_id = r.object_id
    WHERE %(all)s OR (r.subject_id IN {members} AND r.object_id IN {members})
    GROUP BY 1, 2, 3
)
SELECT LEAST(s, o), GREATEST(s, o), SUM(w), array_agg(relation_id ORDER BY relation_id)
FROM per_relation WHERE s <> o GROUP BY 1, 2 ORDER BY 1, 2
"""

_NAMED: LiteralString = """
SELECT DISTINCT COALESCE(x.canonical_id, n.entity_id) FROM (
    SELECT m.entity_id FROM kg_mentions m JOIN chunks c ON c.chunk_id = m.chunk_id {where} {only_m}
    UNION SELECT r.subject_id FROM kg_relation_evidence ev JOIN kg_relations r ON r.relation_id = ev.relation_id
        JOIN chunks c ON c.chunk_id = ev.chunk_id {where} {only_s}
    UNION SELECT r.object_id FROM kg_relation_evidence ev JOIN kg_relations r ON r.relation_id = ev.relation_id
        JOIN chunks c ON c.chunk_id = ev.chunk_id {where} {only_o}
    UNION SELECT cl.entity_id FROM kg_claim_evidence cv JOIN kg_claims cl ON cl.claim_id = cv.claim_id
        JOIN chunks c ON c.chunk_id = cv.chunk_id {where} {only_c}
) n LEFT JOIN er_canonical x ON x.entity_id = n.entity_id ORDER BY 1
"""


def _named(where: str, only: str = "") -> str:
    """_NAMED with `where` in every branch and `only` ({col}: that branch's entity column) after it."""
    cols = {"only_m": "m.entity_id", "only_s": "r.subject_id", "only_o": "r.object_id", "only_c": "cl.entity_id"}
    return _NAMED.format(where=where, **{k: only.format(col=v) if only else "" for k, v in cols.items()})


_LIVE: LiteralString = " JOIN documents d ON d.doc_id = c.doc_id AND d.status = 'ACTIVE'"


class PostgresCommunityStore:
    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    # --- CommunityStore ---------------------------------------------------------------------------------

    def replace_all(self, communities: Sequence[Community]) -> None:
        with self._pool as conn, conn.transaction():
            conn.execute("DELETE FROM kg_communities")
            _insert(conn, communities)

    def replace(self, removed_ids: Sequence[str], communities: Sequence[Community]) -> None:
        with self._pool as conn, conn.transaction():
            if removed_ids:
                # Children go with their parent (ON DELETE CASCADE).
                conn.execute("DELETE FROM kg_communities WHERE community_id = ANY(%s)", (list(removed_ids),))
            _insert(conn, communities)

    def communities(self, level: int | None = None) -> list[Community]:
        sql = "SELECT " + _COLUMNS + " FROM kg_communities k WHERE %(level)s::int IS NULL OR k.level = %(level)s"
        return self._read(sql + _ORDER, {"level": level})

    def level_size(self, level: int) -> int:
        """How many communities the level holds, without reading them (`kgrag_core.communities.ports.LevelSizes`)."""
        with self._pool as conn:
            row = conn.execute("SELECT count(*) FROM kg_communities WHERE level = %s", (level,)).fetchone()
        assert row is not None
        return int(row[0])

    def community(self, community_id: str) -> Community | None:
        found = self._read(
            "SELECT " + _COLUMNS + " FROM kg_communities k WHERE k.community_id = %(id)s", {"id": community_id}
        )
        return found[0] if found else None

    def communities_of(self, entity_ids: Sequence[str], level: int | None = None) -> list[Community]:
        sql = (
            "SELECT " + _COLUMNS + " FROM kg_communities k WHERE (%(level)s::int IS NULL OR k.level = %(level)s)"
            " AND k.community_id IN (SELECT community_id FROM kg_community_members WHERE entity_id = ANY(%(ids)s))"
        )
        return self._read(sql + _ORDER, {"level": level, "ids": list(entity_ids)})

    def children(self, community_id: str) -> list[Community]:
        sql = "SELECT " + _COLUMNS + " FROM kg_communities k WHERE k.parent_id = %(id)s"
        return self._read(sql + _ORDER, {"id": community_id})

    def mark_stale(self, entity_ids: Sequence[str]) -> list[str]:
        if not entity_ids:
            return []
        with self._pool as conn:
            rows = conn.execute(
                "UPDATE kg_communities SET stale = true, stale_since = COALESCE(stale_since, now())"
                " WHERE community_id IN (SELECT community_id FROM kg_community_members WHERE entity_id = ANY(%s))"
                " RETURNING community_id",
                (list(entity_ids),),
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def stale(self) -> list[Community]:
        return self._read("SELECT " + _COLUMNS + " FROM kg_communities k WHERE k.stale" + _ORDER, {})

    def delete_touching(self, entity_ids: Sequence[str]) -> list[str]:
        if not entity_ids:
            return []
        with self._pool as conn, conn.transaction():
            rows = conn.execute(
                "WITH RECURSIVE hit AS ("
                " SELECT community_id FROM kg_community_members WHERE entity_id = ANY(%s)"
                " UNION SELECT k.community_id FROM kg_communities k JOIN hit ON k.parent_id = hit.community_id)"
                " DELETE FROM kg_communities WHERE community_id IN (SELECT community_id FROM hit)"
                " RETURNING community_id",
                (list(entity_ids),),
            ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def counts(self) -> Mapping[str, int]:
        with self._pool as conn:
            row = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE stale), COALESCE(max(level) + 1, 0) FROM kg_communities"
            ).fetchone()
        assert row is not None
        return {"communities": int(row[0]), "stale": int(row[1]), "levels": int(row[2])}

    # --- CommunityGraphSource ---------------------------------------------------------------------------

    def graph_version(self) -> int:
        with self._pool as conn:
            return current_graph_version(conn)

    def community_edges(self, entity_ids: Sequence[str] | None = None) -> list[GraphEdge]:
        ids = list(entity_ids or ())
        if entity_ids is not None and not ids:
            return []
        sql = _EDGES.format(members=_MEMBERS_OF)
        with self._pool as conn:
            rows = conn.execute(sql, {"all": entity_ids is None, "ids": ids}).fetchall()
        wanted = set(ids)
        return [
            GraphEdge(str(r[0]), str(r[1]), float(r[2]), tuple(str(x) for x in r[3]))
            for r in rows
            if entity_ids is None or (r[0] in wanted and r[1] in wanted)
        ]

    def community_entities(self, entity_ids: Sequence[str] | None = None) -> list[str]:
        if entity_ids is None:
            with self._pool as conn:
                return [str(r[0]) for r in conn.execute(_named(_LIVE))]
        ids = list(entity_ids)
        if not ids:
            return []
        # Filtered inside each branch (by mention-level id, through the mapping): a refresh reads only the
        # evidence of its own entities, not every chunk's.
        sql = _named(_LIVE, " AND {col} IN " + _MEMBERS_OF)
        with self._pool as conn:
            rows = conn.execute(sql, {"ids": ids}).fetchall()
        wanted = set(ids)
        return [str(r[0]) for r in rows if r[0] in wanted]

    def hub_entities(self) -> set[str]:
        with self._pool as conn:
            return {str(r[0]) for r in conn.execute("SELECT entity_id FROM kg_hubs")}

    def entities_of_documents(self, doc_ids: Sequence[str]) -> list[str]:
        if not doc_ids:
            return []
        sql = _named(" WHERE c.doc_id = ANY(%(docs)s::text[])")
        with self._pool as conn:
            rows = conn.execute(sql, {"docs": list(doc_ids)}).fetchall()
        return [str(r[0]) for r in rows]

    def _read(self, sql: str, params: Mapping[str, Any]) -> list[Community]:
        with self._pool as conn:
            rows = conn.execute(sql, params).fetchall()
        return [_community(r) for r in rows]


def _insert(conn: psycopg.Connection[Row], communities: Sequence[Community]) -> None:
    # Parents first: the foreign key on parent_id is checked per row.
    ordered = sorted(communities, key=lambda c: c.level)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO kg_communities (community_id, level, parent_id, weight, size, graph_version, built_at,"
            " stale, content_hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (community_id) DO UPDATE SET parent_id = EXCLUDED.parent_id, weight = EXCLUDED.weight,"
            " graph_version = EXCLUDED.graph_version, built_at = EXCLUDED.built_at, stale = EXCLUDED.stale,"
            " stale_since = NULL, content_hash = EXCLUDED.content_hash",
            [
                (
                    c.community_id,
                    c.level,
                    c.parent_id,
                    c.weight,
                    c.size,
                    c.graph_version,
                    c.built_at,
                    c.stale,
                    c.content_hash,
                )
                for c in ordered
            ],
        )
        cur.executemany(
            "INSERT INTO kg_community_members (community_id, entity_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            [(c.community_id, m) for c in ordered for m in c.member_ids],
        )


def _community(r: Row) -> Community:
    built = r[5] if r[5].tzinfo is not None else r[5].replace(tzinfo=UTC)
    return Community(
        community_id=str(r[0]),
        level=int(r[1]),
        parent_id=None if r[2] is None else str(r[2]),
        member_ids=tuple(str(m) for m in r[8]),
        weight=float(r[3]),
        graph_version=int(r[4]),
        built_at=built.astimezone(UTC) if isinstance(built, datetime) else built,
        stale=bool(r[6]),
        content_hash=str(r[7]),
    )
